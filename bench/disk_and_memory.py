"""Bytes a checkpoint takes, and a gateway's RSS across sequential runs (issue 14: F10, F11).

    .venv/bin/python bench/disk_and_memory.py checkpoint [--model smollm2-135m]
    .venv/bin/python bench/disk_and_memory.py memory [--model smollm2-135m] [--runs 6] [--steps 1]

`checkpoint`: builds a full-parameter policy with `TorchPolicyFactory` (this machine's
dtypes), trains one step, saves a resumable checkpoint (weights in the training dtype,
float32 masters when those are narrower, optimizer state) and an export one (weights
only), and prints each one's files and total, and what retention leaves of the resumable
one.
`memory`: a real `gateway serve --model MODEL`; `--runs` runs one after the other (`--steps`
steps each, finished and stopped alternating, episodes played over HTTP); once a run ended
and freed its training memory, one greedy chat to the ended run's policy by model name (what
a held-out evaluation does). Prints the process's RSS peak while each run trains and its
RSS after that chat; then asks every ended policy again (each reloaded from disk: the
seconds each answer took), and prints the RSS after the last run over the RSS after the
first (issue 14's bound: within 1.5x), the overall peak and the state directory's size.
Not a test: numbers depend on the box.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.* helpers when run as a script

from tests.integration.conftest import start_gateway, stop_gateway, wait_for  # noqa: E402
from tests.integration.test_memory_release import play_group, rss_bytes  # noqa: E402


def checkpoint_sizes(model: str) -> None:
    from tests.unit.trainer.policy_helpers import contrast_group, prompt_ids, train_settings
    from trainer.config import EngineConfig
    from trainer.policy import TorchPolicyFactory
    from trainer.types import RESUME_FILES

    factory = TorchPolicyFactory(EngineConfig(max_batch=8, initial_cache_tokens=64))
    print(f"compute dtype {factory.compute_dtype}, engine dtype {factory.engine_dtype}")
    policy = factory.build(served_name="r/p", base_model=model, lora=None, seed=0)
    prompt = prompt_ids(policy)
    group = contrast_group(policy, prompt, [1000, 2000], [5000, 6000])
    asyncio.run(policy.trainer.train_step([group], train_settings()))
    with tempfile.TemporaryDirectory() as tmp:
        for kind, resumable in (("resumable", True), ("export", False)):
            target = Path(tmp) / kind
            asyncio.run(policy.trainer.save_checkpoint(str(target), resumable=resumable))
            sizes = {f.name: f.stat().st_size for f in target.rglob("*") if f.is_file()}
            big = {name: f"{size / 1e6:.1f} MB" for name, size in sizes.items() if size > 1e6}
            print(f"{kind}: {sum(sizes.values()) / 1e6:.1f} MB in all; {big}")
            if resumable:  # what retention leaves of it once a newer one exists
                kept = sum(size for name, size in sizes.items() if name not in RESUME_FILES)
                print(f"resumable after retention (no {', '.join(RESUME_FILES)}): "
                      f"{kept / 1e6:.1f} MB")  # fmt: skip
    policy.trainer.close()


def ask_ended_policy(client, run: str) -> str:
    """One greedy chat to the ended run's policy (held-out evaluation); its answer."""
    reply = client.post(
        "/v1/chat/completions",
        json={
            "model": f"{run}/policy",
            "messages": [{"role": "user", "content": "What is 2 + 3?"}],
            "max_tokens": 8,
            "temperature": 0,
        },
    )
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]["message"]["content"]


def gateway_memory(model: str, runs: int, steps: int) -> None:
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="disk-and-memory-"))
    gw = start_gateway(tmp, "--log-level", "info", model=model)
    peak, overall, done = [0], [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            rss = rss_bytes(gw.process.pid)
            peak[0], overall[0] = max(peak[0], rss), max(overall[0], rss)
            time.sleep(0.1)

    threading.Thread(target=sample, daemon=True).start()
    print(f"idle gateway: {rss_bytes(gw.process.pid) >> 20} MiB")
    after: list[int] = []
    started = time.perf_counter()
    try:
        with httpx.Client(base_url=gw.url, timeout=600) as client:
            for i in range(runs):
                name, finishes = f"bench{i}", i % 2 == 0
                peak[0] = 0
                body = {"name": name, "group_size": 2, "batch_groups": 1, "lr": 1e-5,
                        "max_steps": steps if finishes else steps + 4,
                        "zero_variance_groups": "keep"}  # fmt: skip
                assert client.post("/runs", json=body).status_code == 201
                for step in range(1, steps + 1):
                    play_group(client, name, f"g{step}")
                    wait_for(lambda n=name, s=step: client.get(f"/runs/{n}").json()["step"] >= s, 900)  # fmt: skip
                if finishes:
                    wait_for(lambda n=name: client.get(f"/runs/{n}").json()["status"] == "finished", 900)  # fmt: skip
                else:
                    client.post(f"/runs/{name}/stop")
                wait_for(lambda n=name: f"run {n}: training memory freed" in gw.log(), 300)
                answer = ask_ended_policy(client, name)
                time.sleep(1)
                after.append(rss_bytes(gw.process.pid))
                print(f"run {i} ({'finished' if finishes else 'stopped'}): peak while training "
                      f"{peak[0] >> 20} MiB, after it ended and answered {answer!r}: "
                      f"{after[-1] >> 20} MiB")  # fmt: skip
            # a held-out evaluation of every arm at the end: each ended policy is reloaded
            seconds = []
            for i in range(runs):
                asked = time.perf_counter()
                ask_ended_policy(client, f"bench{i}")
                seconds.append(time.perf_counter() - asked)
            print(f"each ended policy asked again (reloaded from disk): "
                  f"{', '.join(f'{s:.1f}' for s in seconds)} s; RSS then "
                  f"{rss_bytes(gw.process.pid) >> 20} MiB")  # fmt: skip
        print(f"RSS after run 1 ended: {after[0] >> 20} MiB; after run {runs} ended: "
              f"{after[-1] >> 20} MiB; ratio {after[-1] / after[0]:.2f} (bound 1.5); "
              f"peak {overall[0] >> 20} MiB; {time.perf_counter() - started:.0f} s")  # fmt: skip
        used = sum(f.stat().st_size for f in gw.state_dir.rglob("*") if f.is_file())
        print(f"state directory: {used / 1e6:.1f} MB")
    finally:
        done.set()
        stop_gateway(gw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["checkpoint", "memory"])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--steps", type=int, default=1, help="training steps a run takes")
    args = parser.parse_args()
    if args.what == "checkpoint":
        checkpoint_sizes(args.model)
    else:
        gateway_memory(args.model, args.runs, args.steps)


if __name__ == "__main__":
    main()
