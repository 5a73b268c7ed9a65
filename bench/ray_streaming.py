"""What streaming tokens out of a Ray actor costs: one `PolicyHost` actor, N concurrent
chats, the tokens sent back one Ray object each (`stream`), in lists (`stream_chunks`,
what the gateway uses), or not streamed at all (`generate`: the baseline, one object per
completion), in interleaved rounds of one run.

    PYTHONPATH=$PWD .venv/bin/python bench/ray_streaming.py [--model tiny|smollm2-135m] [--requests 8] [--max-tokens 128]

Starts its own local Ray instance (no cluster needed). Prints tokens/s and, steadier on a
busy machine, CPU time per token of the actor's process and of the caller's (the gateway's
side): what each streamed object costs beyond the decode itself. `bench/ray_hosting.py`
measures the whole hop (two real gateways) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import ray

from trainer.hosting import PolicyHost
from trainer.types import SamplingParams, StreamEnd

KINDS = ("generate", "stream (one object a token)", "stream_chunks (lists)")


def process_cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    ray.init(
        num_cpus=4,
        include_dashboard=False,
        object_store_memory=100 * 2**20,
        runtime_env={"env_vars": {"GOMP_SPINCOUNT": "1000"}},  # as gateway serve hands on
    )
    actor = (
        ray.remote(PolicyHost)
        .options(max_concurrency=1000, num_cpus=2)
        .remote(factory={"engine_config": {"threads": 2}}, model={"name": args.model})
    )
    described = ray.get(actor.describe.remote())
    messages = [{"role": "user", "content": "Count slowly from one to a hundred."}]
    prompt = described["tokenizer"].render_chat(messages).token_ids
    params = SamplingParams(max_tokens=args.max_tokens, temperature=1.0, ignore_eos=True)

    async def one(kind: str) -> int:
        if kind == "generate":
            return len((await actor.generate.remote(prompt, params)).token_ids)
        method = actor.stream if kind == KINDS[1] else actor.stream_chunks
        async for ref in method.options(num_returns="streaming").remote(prompt, params):
            item = await ref
            for each in item if isinstance(item, list) else [item]:
                if isinstance(each, StreamEnd):
                    return len(each.completion.token_ids)
        raise AssertionError("the stream ended without a completion")

    async def measure(kind: str) -> tuple[float, float, float]:
        """tokens/s, actor CPU ms per token, caller CPU ms per token"""
        started, actor_cpu, caller_cpu = (
            time.perf_counter(),
            process_cpu_s(described["pid"]),
            time.process_time(),
        )
        tokens = sum(await asyncio.gather(*(one(kind) for _ in range(args.requests))))
        return (
            tokens / (time.perf_counter() - started),
            1000 * (process_cpu_s(described["pid"]) - actor_cpu) / tokens,
            1000 * (time.process_time() - caller_cpu) / tokens,
        )

    async def run() -> dict[str, list[tuple[float, float, float]]]:
        for kind in KINDS:
            await measure(kind)  # warm-up
        results: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in KINDS}
        for _ in range(args.rounds):
            for kind in KINDS:
                results[kind].append(await measure(kind))
        return results

    results = asyncio.run(run())
    ray.shutdown()
    print(
        f"model {args.model}, {args.requests} concurrent x {args.max_tokens} tokens, medians of "
        f"{args.rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f}"
    )
    base = statistics.median(r[0] for r in results["generate"])
    for kind, rounds in results.items():
        rate, actor_ms, caller_ms = (statistics.median(r[i] for r in rounds) for i in range(3))
        print(
            f"  {kind:28s} {rate:8.1f} tok/s ({rate / base:.2f}x generate)   CPU per token: "
            f"actor {actor_ms:.2f} ms, caller {caller_ms:.2f} ms"
        )


if __name__ == "__main__":
    main()
