"""What the bundled model learns, per shipped task family and difficulty, in minutes on CPU.

    .venv/bin/python bench/learnability.py                      # every family, 2 seeds (~3 h on 2 cores)
    .venv/bin/python bench/learnability.py --only countdown:tiny,chain_sum:easy --seeds 0 --steps 8
    .venv/bin/python bench/learnability.py --steps 0          # untrained accuracy only
    .venv/bin/python bench/learnability.py --record researcher/planner/learnability.json

For each family at each level (FAMILY:LEVEL; old families have one level, "-") and each
seed: held-out accuracy of the untrained model (the served base model), then a GRPO run of
`--steps` steps through the whole stack (`gateway serve` with the bundled
SmolLM2-135M-Instruct + `swarm run` of a workflow over the family's train split as a
separate process), then held-out accuracy of the trained policy. Accuracy is the share of
the first `--eval-n` test tasks whose reward is 1.0 (countdown's partial credits do not
count), greedy, through the family's reference rollout (a rollout that fails is left out
and reported); intervals are Wilson 95% on the
counts pooled over seeds. Steps/minute is the run's steps over its wall time from
`POST /runs` to its last step. Prints a markdown table (and each row as it comes).
Not a test: machines are noisy, and other work on the box slows the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import itertools
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from researcher.local_gateway import start_local_gateway  # noqa: E402
from swarm.evaluate import run_evaluation  # noqa: E402

MODEL = "smollm2-135m"
# family -> the levels measured by default ("-": a family without levels)
DEFAULT_LEVELS = {
    "learnable": ["-"],
    "arithmetic": ["-"],
    "calculator": ["-"],
    "guess_number": ["-"],
    "countdown": ["tiny", "easy"],
    "chain_sum": ["easy", "medium"],
    "basic_arithmetic": ["easy"],
    "letter_counting": ["easy"],
    "bfcl": ["simple"],
    "mastermind": ["tiny"],
}
# the knob a family's "level" sets, where it is not `level`
LEVEL_KNOB = {"bfcl": "category"}
WORKFLOW = """
from swarm.tasks import {family} as family

PARAMS = {params!r}


def tasks(split="train"):
    return family.tasks(split, seed={seed}, **PARAMS)


async def rollout(task, episode):
    return await family.rollout(task, episode)
"""


@dataclass
class Cell:
    family: str
    level: str
    before: list[int] = field(default_factory=list)  # correct counts per seed
    after: list[int] = field(default_factory=list)
    n: list[int] = field(default_factory=list)
    steps_per_min: list[float] = field(default_factory=list)


def wilson(correct: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    z, p = 1.96, correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def params_of(family: str, level: str) -> dict:
    return {} if level == "-" else {LEVEL_KNOB.get(family, "level"): level}


def held_out_correct(
    url: str, model: str, family: str, level: str, n: int, concurrency: int = 8
) -> tuple[int, int]:
    module = importlib.import_module(f"swarm.tasks.{family}")
    tasks = list(itertools.islice(module.tasks("test", seed=0, **params_of(family, level)), n))
    evaluation = asyncio.run(
        run_evaluation(tasks, module.rollout, gateway_url=url, model=model, concurrency=concurrency)
    )
    rewards = evaluation.scored
    if evaluation.errors:  # left out of the counts, and said so
        first = next(iter(evaluation.errors.values()))
        print(f"  {model} on {family}:{level}: {len(evaluation.errors)} of {len(tasks)} "
              f"rollouts failed, e.g. {first}", flush=True)  # fmt: skip
    return sum(1 for r in rewards if r >= 1.0), len(rewards)


def train(url: str, args, family: str, level: str, seed: int, workdir: Path) -> tuple[str, float]:
    name = f"{family}-{level}-s{seed}".replace("_", "-")
    workflow = workdir / f"{name.replace('-', '_')}.py"
    workflow.write_text(WORKFLOW.format(family=family, params=params_of(family, level), seed=seed))
    started = time.perf_counter()
    r = httpx.post(f"{url}/runs", timeout=300, json={
        "name": name, "policies": {"policy": {"base_model": MODEL}}, "algorithm": "grpo",
        "lr": args.lr, "group_size": args.group_size, "batch_groups": args.prompts_per_step,
        "max_steps": args.steps, "seed": seed,
    })  # fmt: skip
    r.raise_for_status()
    client = subprocess.Popen(
        [sys.executable, "-m", "swarm.cli", "run", str(workflow), "--gateway", url,
         "--run", name, "--concurrency", str(args.concurrency)],
        cwd=REPO, stdout=(workdir / f"{name}.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        while (info := httpx.get(f"{url}/runs/{name}", timeout=30).json())["status"] not in (
            "finished",
            "failed",
            "stopped",
        ):
            time.sleep(1.0)
    finally:
        if client.poll() is None:
            client.terminate()
            client.wait(timeout=30)
    minutes = (time.perf_counter() - started) / 60
    if info["status"] != "finished":
        raise SystemExit(f"run {name} ended as {info['status']}: {info.get('error')}")
    return name, args.steps / minutes


def row(cell: Cell) -> str:
    n = max(1, sum(cell.n))
    before, after = sum(cell.before), sum(cell.after)
    lo_b, hi_b = wilson(before, n)
    lo_a, hi_a = wilson(after, n)
    if not cell.steps_per_min:  # --steps 0: untrained only
        return f"| {cell.family} | {cell.level} | {before / n:.2f} [{lo_b:.2f}, {hi_b:.2f}] |"
    per_seed = ", ".join(
        f"{b}→{a}/{k}" for b, a, k in zip(cell.before, cell.after, cell.n, strict=True)
    )
    speed = sum(cell.steps_per_min) / len(cell.steps_per_min)
    return (
        f"| {cell.family} | {cell.level} | {before / n:.2f} [{lo_b:.2f}, {hi_b:.2f}] "
        f"| {after / n:.2f} [{lo_a:.2f}, {hi_a:.2f}] | {per_seed} | {speed:.1f} |"
    )


HEADER = (
    "| family | level | untrained | after {steps} steps | per seed (correct/n) | steps/min |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", default="", help="FAMILY:LEVEL,... (default: every family)")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--eval-n", type=int, default=64)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument(
        "--record",
        type=Path,
        default=None,
        help="also write the trained rows as JSON, merged into this file by family and level "
        "(researcher/planner/learnability.json is what plans quote)",
    )
    args = ap.parse_args()
    cells = (
        [Cell(*item.split(":")) for item in args.only.split(",")]
        if args.only
        else [Cell(f, level) for f, levels in DEFAULT_LEVELS.items() for level in levels]
    )
    seeds = [int(s) for s in args.seeds.split(",")]
    header = (
        HEADER.format(steps=args.steps)
        if args.steps > 0
        else "| family | level | untrained |\n| --- | --- | --- |"
    )
    with tempfile.TemporaryDirectory(prefix="swarmrl-learnability-") as tmp:
        workdir = Path(tmp)
        gateway = start_local_gateway(
            model=MODEL, state_dir=workdir / "state", log_path=workdir / "gateway.log"
        )
        try:
            print(f"model {MODEL}, {args.steps} steps of {args.prompts_per_step} tasks x group "
                  f"{args.group_size}, lr {args.lr}, held-out n={args.eval_n}, seeds {seeds}",
                  flush=True)  # fmt: skip
            print(header, flush=True)
            for cell in cells:
                before, n = held_out_correct(gateway.url, MODEL, cell.family, cell.level,
                                             args.eval_n)  # fmt: skip
                if args.steps == 0:
                    cell.before.append(before)
                    cell.n.append(n)
                for seed in seeds if args.steps > 0 else []:
                    run, speed = train(gateway.url, args, cell.family, cell.level, seed, workdir)
                    after, n_after = held_out_correct(
                        gateway.url, f"{run}/policy", cell.family, cell.level, args.eval_n
                    )
                    cell.before.append(before)  # greedy: the untrained model is seed-free
                    cell.after.append(after)
                    cell.n.append(min(n, n_after))
                    cell.steps_per_min.append(speed)
                print(row(cell), flush=True)
        finally:
            gateway.stop()
    print("\n" + header)
    for cell in cells:
        print(row(cell))
    if args.record is not None and args.steps > 0:
        record_rows(args, cells)


def record_rows(args, cells: list[Cell]) -> None:
    """Merge the trained cells into `args.record` (researcher.planner.learnability's format):
    a row per family and level, replacing an earlier row of the same pair."""
    from researcher.planner.learnability import Measured, Record

    settings = (f"{args.prompts_per_step} tasks x group {args.group_size} per step, lr "
                f"{args.lr:g}, {args.eval_n} held-out tasks per seed")  # fmt: skip
    rows = [
        Measured(family=c.family, level=None if c.level == "-" else c.level, steps=args.steps,
                 untrained=c.before, trained=c.after, n=c.n,
                 steps_per_min=round(sum(c.steps_per_min) / len(c.steps_per_min), 2))
        for c in cells if c.after
    ]  # fmt: skip
    old = Record.model_validate_json(args.record.read_text()) if args.record.exists() else None
    kept = [r for r in (old.rows if old and old.model == MODEL else [])
            if (r.family, r.level) not in {(n.family, n.level) for n in rows}]  # fmt: skip
    record = Record(
        model=MODEL,
        command="bench/learnability.py --record researcher/planner/learnability.json",
        settings=settings,
        measured=time.strftime("%Y-%m-%d"),
        rows=kept + rows,
    )
    args.record.write_text(record.model_dump_json(indent=1) + "\n")
    print(f"recorded {len(rows)} rows in {args.record}")


if __name__ == "__main__":
    main()
