"""Throughput under client churn vs no churn, on one gateway, in one invocation.

    .venv/bin/python bench/churn.py [--clients 5] [--seconds 60] [--kill-per-min 0.2]
        [--min-kills 3] [--churn-seconds S] [--lease-s 30] [--model tiny]
        [--warmup-seconds 20]

A real `gateway serve --model MODEL` (client lease `--lease-s`, the default 30 s of
`gateway serve`) and `--clients` `swarm run tests/chaos/workflows/ledger_length.py`
processes (concurrency 2 each) on a GRPO run (group_size 2, batch_groups 1, zero-variance
groups kept, partial groups trained). Two runs one after the other on the same gateway:
  baseline: no churn, measured for `--seconds`;
  churn:    the same, while `--kill-per-min` of the clients (20%: one in five per minute)
            are killed with SIGKILL at even intervals and replaced at once, measured for
            `--churn-seconds` (default: long enough for `--min-kills` kills at that rate —
            3 minutes for 5 clients at 20%/min; the defaults run about 5 minutes in all).
Before them, an unmeasured warm-up run of `--warmup-seconds` (no churn): the first run
on a fresh gateway trains ~3x slower than later ones (seen with the tiny model on 2 cores),
which would otherwise flatter whichever run comes second. Each run is measured from its first training step (start-up and first-step warm-up are
not counted) for its window: episodes finished per second and training steps per
minute, from the run's own counters. Prints both and the ratio churn / baseline
(goal: ≥ 0.8x). Not a test: machines are noisy.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.chaos.conftest import (  # noqa: E402
    ClientFleet,
    churn,
    create_run,
    start_gateway_with_lease,
)

WORKFLOW = REPO / "tests" / "chaos" / "workflows" / "ledger_length.py"


def measure(
    args,
    gateway_url: str,
    name: str,
    workdir: Path,
    *,
    kill_every_s: float | None,
    seconds: float | None = None,
):
    """One run: start the clients, wait for its first step, then count for `seconds`
    (default args.seconds)."""
    seconds = args.seconds if seconds is None else seconds
    create_run(  # the chaos tests' run, on --model, with a stale limit like a real run's
        gateway_url,
        name,
        policies={"policy": {"base_model": args.model}},
        group_timeout_s=5.0,
        max_staleness=4,
        max_steps=1_000_000,
    )
    info = lambda: httpx.get(f"{gateway_url}/runs/{name}", timeout=30).json()  # noqa: E731
    (workdir / name).mkdir()
    fleet = ClientFleet(gateway_url, name, WORKFLOW, workdir / name, concurrency=2)
    kills = 0
    try:
        for _ in range(args.clients):
            fleet.start()
        deadline = time.monotonic() + 120
        while info()["step"] < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        before, started = info(), time.perf_counter()
        if kill_every_s is None:
            time.sleep(seconds)
        else:
            kills = churn(fleet, seconds=seconds, every_s=kill_every_s, rng=random.Random(0))
        after, elapsed = info(), time.perf_counter() - started
    finally:
        fleet.stop_all()
        httpx.post(f"{gateway_url}/runs/{name}/stop", timeout=60)
    episodes = after["episodes_finished"] - before["episodes_finished"]
    steps = after["step"] - before["step"]
    return {
        "episodes_per_s": episodes / elapsed,
        "steps_per_min": steps * 60 / elapsed,
        "episodes": episodes,
        "steps": steps,
        "aborted": after["episodes_aborted"] - before["episodes_aborted"],
        "kills": kills,
        "seconds": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured, per run")
    parser.add_argument("--kill-per-min", type=float, default=0.2, help="fraction of clients")
    parser.add_argument(
        "--min-kills", type=int, default=3, help="the churn window's default fits this many"
    )
    parser.add_argument(
        "--churn-seconds", type=float, default=None, help="measured churn window (see above)"
    )
    parser.add_argument("--lease-s", type=float, default=30.0)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--warmup-seconds", type=float, default=20.0, help="unmeasured run")
    args = parser.parse_args()
    kill_every_s = 60.0 / (args.kill_per_min * args.clients)
    churn_seconds = args.churn_seconds or args.min_kills * kill_every_s
    print(
        f"churn bench: {args.clients} clients x concurrency 2, model {args.model}, lease "
        f"{args.lease_s:.0f}s; no churn for {args.seconds:.0f}s, then churn for "
        f"{churn_seconds:.0f}s: one SIGKILL + replacement every {kill_every_s:.0f}s",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="churn-bench-") as tmp:
        workdir = Path(tmp)
        gateway = start_gateway_with_lease(workdir, lease_s=args.lease_s, model=args.model)
        try:
            warmup = measure(
                args, gateway.url, "warmup", workdir, kill_every_s=None, seconds=args.warmup_seconds
            )
            print(f"warm-up run: {warmup['steps_per_min']:.1f} steps/min (not counted)", flush=True)
            baseline = measure(args, gateway.url, "steady", workdir, kill_every_s=None)
            churned = measure(
                args,
                gateway.url,
                "churn",
                workdir,
                kill_every_s=kill_every_s,
                seconds=churn_seconds,
            )
        finally:
            gateway.stop()
    for label, m in (("no churn", baseline), ("churn", churned)):
        print(
            f"{label:>9}: {m['episodes_per_s']:6.2f} episodes/s  {m['steps_per_min']:6.1f} "
            f"steps/min  ({m['episodes']} episodes, {m['steps']} steps, {m['aborted']} aborted, "
            f"{m['kills']} clients killed, {m['seconds']:.0f}s)"
        )
    for what in ("episodes_per_s", "steps_per_min"):
        ratio = churned[what] / baseline[what] if baseline[what] else float("nan")
        print(f"ratio churn / no churn, {what}: {ratio:.2f}x (goal ≥ 0.8x)")


if __name__ == "__main__":
    main()
