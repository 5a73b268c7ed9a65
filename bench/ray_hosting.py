"""What hosting policies as Ray actors costs, against in-process hosting, in the same run.

Run (from the repository root; needs Ray: `make install` adds it):

    .venv/bin/python bench/ray_hosting.py                  # tiny model, 3 rounds
    .venv/bin/python bench/ray_hosting.py --model smollm2-135m --requests 32 --max-tokens 64

Starts a local Ray head on loopback (tests/raycluster.py), then two real `gateway serve`
processes on the same model — one in-process (baseline), one with `--ray` — and for each:

(a) decode throughput: `--requests` concurrent chat completions of `--max-tokens` tokens
    (`ignore_eos`-style: a fixed length, so both do the same work) on the run's policy,
    completion tokens per second;
(b) time to first token: sequential streamed requests, p50 of the first SSE delta;
(c) a training step: a run with group 1 × batch 1, one episode per step, seconds from
    `finish` to the step showing in `GET /runs/{id}` (p50 over `--steps`).

Prints each figure for both and the ratio ray / in-process. Goal: decode throughput
>= 0.8x, first token <= +5 ms, step time <= 1.2x on this box (the actor adds a process
hop per token and per step, and no extra compute).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for tests.* when run as a script

import httpx  # noqa: E402

from tests.integration.conftest import start_gateway, stop_gateway  # noqa: E402
from tests.raycluster import start_cluster, stop_cluster  # noqa: E402

RUN = "bench"
MODEL_NAME = f"{RUN}/policy"


def chat_body(max_tokens: int, stream: bool = False) -> dict:
    return {
        "model": MODEL_NAME,
        "messages": [{"role": "user", "content": "Count slowly from one to a hundred."}],
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "stream": stream,
    }


async def decode_throughput(url: str, requests: int, max_tokens: int) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        started = time.perf_counter()
        answers = await asyncio.gather(
            *(
                http.post("/v1/chat/completions", json=chat_body(max_tokens))
                for _ in range(requests)
            )
        )
        seconds = time.perf_counter() - started
    tokens = 0
    for answer in answers:
        answer.raise_for_status()
        tokens += answer.json()["usage"]["completion_tokens"]
    return tokens / seconds


def first_token_p50(url: str, rounds: int) -> float:
    waits = []
    with httpx.Client(base_url=url, timeout=120) as http:
        for _ in range(rounds):
            started = time.perf_counter()
            with http.stream("POST", "/v1/chat/completions", json=chat_body(8, stream=True)) as r:
                first = None
                for line in r.iter_lines():  # read to the end: the request completes
                    if first is None and line.startswith("data:") and '"content"' in line:
                        first = time.perf_counter() - started
                assert first is not None, "no content delta in the stream"
                waits.append(first)
    return statistics.median(waits)


def step_seconds_p50(url: str, steps: int) -> float:
    seconds = []
    with httpx.Client(base_url=url, timeout=120) as http:
        for i in range(steps):
            episode = http.post("/swarm/episodes", json={"run": RUN, "task_id": f"t{i}"}).json()
            http.post(
                "/v1/chat/completions",
                json=chat_body(16),
                headers={"Authorization": f"Bearer {episode['api_key']}"},
            ).raise_for_status()
            before = http.get(f"/runs/{RUN}").json()["step"]
            started = time.perf_counter()
            finished = http.post(
                f"/swarm/episodes/{episode['episode_id']}/finish", json={"reward": 1.0}
            )
            finished.raise_for_status()
            while http.get(f"/runs/{RUN}").json()["step"] == before:
                time.sleep(0.01)
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(url: str, args: argparse.Namespace) -> dict[str, float]:
    create = httpx.post(
        f"{url}/runs",
        json={
            "name": RUN,
            "group_size": 1,
            "batch_groups": 1,
            "zero_variance_groups": "keep",
            "max_staleness": 1000,
        },
        timeout=300,
    )
    create.raise_for_status()
    asyncio.run(decode_throughput(url, 2, 4))  # warm-up
    return {
        "decode tokens/s": statistics.median(
            asyncio.run(decode_throughput(url, args.requests, args.max_tokens))
            for _ in range(args.rounds)
        ),
        "first token p50 (ms)": 1000 * first_token_p50(url, args.first_token_rounds),
        "train step p50 (s)": step_seconds_p50(url, args.steps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first-token-rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    cluster = start_cluster()
    results: dict[str, dict[str, float]] = {}
    try:
        # the actor gets as many torch threads as the in-process engine has (2 on this box)
        ray_flags = ["--ray", cluster.address, "--actor-cpus", str(os.cpu_count() or 1)]
        for label, extra in (("in-process", []), ("ray", ray_flags)):
            tmp = Path(tempfile.mkdtemp(prefix=f"bench-{label}-"))
            gateway = start_gateway(tmp, *extra, model=args.model)
            try:
                results[label] = measure(gateway.url, args)
            finally:
                stop_gateway(gateway)
            print(f"{label}: " + ", ".join(f"{k} {v:.4g}" for k, v in results[label].items()))
    finally:
        stop_cluster(cluster)

    print(f"\nmodel {args.model}, {args.requests} concurrent x {args.max_tokens} tokens")
    print(f"{'':24s}{'in-process':>12s}{'ray':>12s}{'ray/in-proc':>13s}")
    for key in results["in-process"]:
        base, ours = results["in-process"][key], results["ray"][key]
        print(f"{key:24s}{base:12.4g}{ours:12.4g}{ours / base:12.2f}x")


if __name__ == "__main__":
    main()
