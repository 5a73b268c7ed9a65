"""Held-out evaluation speed of ended runs' policies vs the base model, in one gateway.

    .venv/bin/python bench/ended_eval.py [--model tiny] [--runs 2] [--steps 2] [--n 27]

Starts `gateway serve --model MODEL`, then for each of `--runs` runs: a GRPO run on
`examples/learnable.py` that finishes after `--steps` steps; after it ended, the gateway's
idle CPU (seconds of CPU per wall second over 3 s, with nothing asked of it) and thread
count, and the time of `researcher.evaluate.evaluate_policy` (learnable, `--n` tasks,
concurrency 8) on the base model, the ended policy, and it again. Then the ended policies
alternately. `--ended-first`: as in a study, the ended policy is evaluated before the
base model ever computes (only the ended engine's thread team exists then). Prints each time and its ratio to the base model's (load cancels out).
Not a test: machines are noisy.
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

from researcher.evaluate import evaluate_policy  # noqa: E402
from researcher.local_gateway import start_local_gateway  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def idle_cpu(pid: int, seconds: float = 3.0) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


def timed_eval(url: str, model: str, n: int) -> float:
    started = time.perf_counter()
    evaluate_policy(url, model, family="learnable", n=n, concurrency=8)
    return time.perf_counter() - started


def train_run(url: str, name: str, model: str, steps: int, workdir: Path) -> None:
    response = httpx.post(
        f"{url}/runs", timeout=120,
        json={"name": name, "policies": {"policy": {"base_model": model}}, "lr": 1e-4,
              "group_size": 4, "batch_groups": 1, "max_steps": steps},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    client = subprocess.Popen(
        [sys.executable, "-m", "swarm.cli", "run", str(REPO / "examples" / "learnable.py"),
         "--gateway", url, "--run", name, "--concurrency", "4", "--group-size", "4"],
        cwd=REPO, stdout=(workdir / f"{name}.log").open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    ended = ("finished", "failed", "stopped")
    while httpx.get(f"{url}/runs/{name}", timeout=60).json()["status"] not in ended:
        time.sleep(1)
    client.wait(timeout=120)
    time.sleep(2)  # the run's release (final weights, memory) runs after its end


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--n", type=int, default=27)
    parser.add_argument("--extra", default="", help="more `gateway serve` arguments")
    parser.add_argument(
        "--ended-first", action="store_true",
        help="as a study does: each ended policy evaluated before the base model ever is",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        gateway = start_local_gateway(
            model=args.model, state_dir=workdir / "state", log_path=workdir / "gateway.log",
            extra_args=args.extra.split(),
        )  # fmt: skip
        url, pid = gateway.url, gateway.process.pid
        try:
            print(f"fresh gateway: idle cpu {idle_cpu(pid):.2f}, threads {threads(pid)}")
            if not args.ended_first:
                base = timed_eval(url, args.model, args.n)
                print(f"base model {args.model}: {base:.1f} s")
            ended: list[str] = []
            for i in range(args.runs):
                name = f"r{i}"
                train_run(url, name, args.model, args.steps, workdir)
                ended.append(f"{name}/policy")
                print(f"{name} ended: idle cpu {idle_cpu(pid):.2f}, threads {threads(pid)}")
                if not args.ended_first:
                    base = timed_eval(url, args.model, args.n)
                first = timed_eval(url, ended[-1], args.n)
                again = timed_eval(url, ended[-1], args.n)
                if args.ended_first:
                    base = timed_eval(url, args.model, args.n)
                print(f"  base {base:.1f} s | {ended[-1]} {first:.1f} s ({first / base:.2f}x)"
                      f" | again {again:.1f} s ({again / base:.2f}x)", flush=True)  # fmt: skip
            if len(ended) > 1:
                for model in [ended[0], ended[1], ended[0], ended[1]]:
                    took = timed_eval(url, model, args.n)
                    print(f"  alternate {model}: {took:.1f} s ({took / base:.2f}x)", flush=True)
            print(f"end: idle cpu {idle_cpu(pid):.2f}, threads {threads(pid)}")
        finally:
            gateway.process.terminate()
            gateway.process.wait(timeout=60)
            print((workdir / "gateway.log").read_text()[-3000:])


if __name__ == "__main__":
    main()
