"""Training throughput of 1, 2 and 3 concurrent runs on one embedded gateway, in one run.

    .venv/bin/python bench/concurrent_runs.py [--model smollm2-135m|tiny] [--steps 6]
        [--max-runs 3] [--group-size 8] [--prompts-per-step 4] [--concurrency 32]

One `gateway serve` (the bundled SmolLM2-135M-Instruct by default; `--model tiny` for a
smoke run) stays up throughout. For k = 1, 2, 3 it creates k GRPO runs of the `learnable`
task (examples/learnable.py), each with `max_steps = --steps`, starts one `swarm run`
client per run as a separate process, and waits until all k runs have finished. A
1-step run first warms the gateway up (first-use costs), uncounted; 1 run is measured again
after 3, and the baseline is the mean of the two.
Throughput is training steps per minute summed over the runs: k × steps / wall time from
the first `POST /runs` to the last run's end (policy start-up included, as a study pays
it). Each concurrency is printed with its ratio to that baseline from this same
invocation, and the load average at its end: other work on the machine skews the ratios. Not a test: machines are noisy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from researcher.local_gateway import start_local_gateway  # noqa: E402

TERMINAL = ("finished", "failed", "stopped")


def train_concurrently(
    url: str, names: list[str], args, workdir: Path, *, steps: int | None = None
) -> float:
    """Create the runs, start one client each, wait for all to end. Wall seconds."""
    started = time.perf_counter()
    for name in names:
        httpx.post(
            f"{url}/runs",
            timeout=300,
            json={
                "name": name,
                "policies": {"policy": {"base_model": args.model}},
                "algorithm": "grpo",
                "lr": args.lr,
                "group_size": args.group_size,
                "batch_groups": args.prompts_per_step,
                "max_steps": steps or args.steps,
                "seed": args.seed,
            },
        ).raise_for_status()
    clients = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "swarm.cli",
                "run",
                str(REPO / "examples" / "learnable.py"),
                "--gateway",
                url,
                "--run",
                name,
                "--concurrency",
                str(args.concurrency),
            ],
            stdout=(workdir / f"swarm-{name}.log").open("w"),
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        for name in names
    ]
    try:
        ended: dict[str, dict] = {}
        while len(ended) < len(names):
            for name in names:
                if name not in ended:
                    info = httpx.get(f"{url}/runs/{name}", timeout=30).json()
                    if info["status"] in TERMINAL:
                        ended[name] = info
            time.sleep(0.5)
        elapsed = time.perf_counter() - started
    finally:
        for client in clients:
            if client.poll() is None:
                client.terminate()
                client.wait(timeout=30)
    failed = {n: i for n, i in ended.items() if i["status"] != "finished"}
    if failed:
        raise SystemExit(f"runs did not finish: { {n: i.get('error') for n, i in failed.items()} }")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2-135m", help="smollm2-135m (bundled) or tiny")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--max-runs", type=int, default=3)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=32, help="episodes in flight per client")
    args = ap.parse_args()

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    results: list[tuple[int, float, float]] = []  # (runs, wall s, load average at the end)
    with tempfile.TemporaryDirectory(prefix="swarmrl-concurrent-") as tmp:
        workdir = Path(tmp)
        gateway = start_local_gateway(
            model=args.model, state_dir=workdir / "state", log_path=workdir / "gateway.log"
        )
        try:
            capacity = httpx.get(f"{gateway.url}/capacity", timeout=30)
            if capacity.status_code == 200:
                print(f"gateway capacity: {capacity.json()}")
            print("warm-up: one run of 1 step, not counted …", flush=True)
            train_concurrently(gateway.url, ["warmup"], args, workdir, steps=1)
            # 1 run again at the end: the baseline is the mean of both (drift shows as a gap)
            for attempt, k in enumerate([*range(1, args.max_runs + 1), 1]):
                names = [f"a{attempt}-run{i}" for i in range(k)]
                print(f"{k} concurrent run(s) × {args.steps} steps …", flush=True)
                seconds = train_concurrently(gateway.url, names, args, workdir)
                results.append((k, seconds, os.getloadavg()[0]))
                print(f"  {seconds:.0f} s, load average {results[-1][2]:.2f}", flush=True)
        finally:
            gateway.stop()

    print(
        f"\n{args.model}, {args.steps} steps per run, {args.prompts_per_step} prompts x group "
        f"{args.group_size}, load average {os.getloadavg()[0]:.2f} at the end"
    )
    print("| concurrent runs | wall s | steps/min (all runs) | ratio to 1 run | load average |")
    print("| --- | --- | --- | --- | --- |")
    ones = [seconds for k, seconds, _ in results if k == 1]
    base = args.steps * 60 / (sum(ones) / len(ones))  # steps/min of 1 run: mean of its two
    for k, seconds, load in results:
        rate = k * args.steps * 60 / seconds
        print(f"| {k} | {seconds:.0f} | {rate:.2f} | {rate / base:.2f}x | {load:.1f} |")


if __name__ == "__main__":
    main()
