"""Learning through the whole stack vs a minimal in-process GRPO loop, in one run.

    .venv/bin/python bench/learning.py [--steps 20] [--group-size 8] [--prompts-per-step 4] [--lr 2e-5]
        [--merge none|timeline|tree]

Stack: `gateway serve` (bundled SmolLM2-135M-Instruct) + `swarm run examples/learnable.py`
as a separate process; a GRPO run with the given settings; wall time from `POST /runs`
until the run reports `max_steps` steps, and the `reward/mean` of every step.
Baseline: `bench/inprocess_grpo.py` — `model.generate` + a token-mean policy-gradient
step with AdamW on the same model, prompts, verifier, group size, lr, completion length
and seed, in this process (after the gateway has stopped, so both get the machine alone).

Prints both reward curves, the steps each needed to reach mean reward ≥ 0.9 (if it did),
and the wall-time ratio stack / in-process (goal: the stack reaches ≥ 0.9 in ≤ 1.25x).
Not a test: machines are noisy.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.inprocess_grpo import run_inprocess_grpo  # noqa: E402
from researcher.local_gateway import start_local_gateway  # noqa: E402
from swarm.tasks import learnable  # noqa: E402


def run_stack(args, workdir: Path) -> tuple[list[float], float, dict]:
    gateway = start_local_gateway(
        model="smollm2-135m", state_dir=workdir / "state", log_path=workdir / "gateway.log"
    )
    client = None
    try:
        started = time.perf_counter()
        r = httpx.post(
            f"{gateway.url}/runs",
            timeout=300,
            json={
                "name": "learning",
                "policies": {"policy": {"base_model": "smollm2-135m"}},
                "algorithm": "grpo",
                "lr": args.lr,
                "group_size": args.group_size,
                "batch_groups": args.prompts_per_step,
                "max_steps": args.steps,
                "seed": args.seed,
                "max_staleness": args.max_staleness,
                # None: the run's default layout (swarm.protocol.RunSettings.merge)
                **({"merge": args.merge} if args.merge else {}),
            },
        )
        r.raise_for_status()
        client = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "swarm.cli",
                "run",
                str(REPO / "examples" / "learnable.py"),
                "--gateway",
                gateway.url,
                "--run",
                "learning",
                "--concurrency",
                str(args.concurrency),
            ],
            stdout=(workdir / "swarm.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        while True:
            info = httpx.get(f"{gateway.url}/runs/learning", timeout=30).json()
            if info["status"] in ("finished", "failed", "stopped"):
                break
            time.sleep(0.5)
        elapsed = time.perf_counter() - started
        if info["status"] != "finished":
            raise SystemExit(f"stack run ended as {info['status']}: {info.get('error')}")
        points = httpx.get(
            f"{gateway.url}/runs/learning/metrics", params={"name": "reward/mean"}, timeout=30
        ).json()
        curve = [
            p["value"]
            for p in sorted(points, key=lambda p: p["step"])
            if p.get("policy") in (None, "policy")
        ]
        return curve[: args.steps], elapsed, info
    finally:
        if client is not None and client.poll() is None:
            client.terminate()
            client.wait(timeout=30)
        gateway.stop()


def run_baseline(args) -> tuple[list[float], float]:
    from trainer.config import ModelConfig
    from trainer.model import load_model

    loaded = load_model(ModelConfig(name="smollm2-135m", dtype="float32"))
    tasks = list(learnable.tasks("train", seed=0))
    prompts = [[{"role": "user", "content": t["prompt"]}] for t in tasks]

    import torch

    result = run_inprocess_grpo(
        loaded.model,
        loaded.tokenizer,
        prompts,
        lambda i, text: learnable.reward(text, tasks[i]),
        steps=args.steps,
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        lr=args.lr,
        max_tokens=learnable.MAX_TOKENS,
        seed=args.seed,
        compute_dtype=torch.bfloat16,
        on_step=lambda s, r: print(f"  in-process step {s + 1}: reward {r:.2f}", flush=True),
    )
    return result.rewards, result.seconds


def first_at(curve: list[float], threshold: float = 0.9) -> int | None:
    return next((i + 1 for i, v in enumerate(curve) if v >= threshold), None)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-staleness", type=int, default=1)
    ap.add_argument(
        "--merge",
        choices=["none", "timeline", "tree"],
        default=None,
        help="how the stack lays out an episode's calls for training (default: the run's default)",
    )
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="swarmrl-learning-") as tmp:
        print("stack: gateway serve + swarm run examples/learnable.py …", flush=True)
        stack_curve, stack_seconds, info = run_stack(args, Path(tmp))
    print(
        f"  episodes finished {info['episodes_finished']}, samples trained {info['samples_trained']}, "
        f"dropped {info['samples_dropped']}"
    )
    print("in-process GRPO loop …", flush=True)
    base_curve, base_seconds = run_baseline(args)

    fmt = lambda c: " ".join(f"{v:.2f}" for v in c)  # noqa: E731
    print(
        f"\nreward/mean per step ({args.steps} steps, {args.prompts_per_step} prompts x group {args.group_size}, lr {args.lr}, merge {args.merge or 'the run default'})"
    )
    print(f"  stack      : {fmt(stack_curve)}")
    print(f"  in-process : {fmt(base_curve)}")
    s90, b90 = first_at(stack_curve), first_at(base_curve)
    print(f"  first step with reward >= 0.9: stack {s90}, in-process {b90}")
    print(
        f"wall time: stack {stack_seconds:.0f} s, in-process {base_seconds:.0f} s, ratio {stack_seconds / base_seconds:.2f}x"
    )


if __name__ == "__main__":
    main()
