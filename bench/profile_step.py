"""Where one GRPO step's time goes, measured with torch.profiler: the rollouts (model
forward, sampling, KV-cache bookkeeping, Python/other) and the update (forward, loss,
backward, optimizer step, weight copy to the engine), in seconds and share.

    PYTHONPATH=. .venv/bin/python bench/profile_step.py [--model smollm2|tiny]
        [--prompts 2] [--group-size 4] [--completion-tokens 128] [--top-ops 12]

The step is `bench/train_step.py`'s (same prompts, reward, `ignore_eos` completions, one
`train_step` through `TorchPolicyTrainer`, bf16 where the CPU is fast at it: on the
masters' bf16 compute copy), on
the engine's single compute thread as `gateway serve` runs it. One step runs first
unprofiled (it pays one-time costs: optimizer state, allocator and cache growth), then a
second one unprofiled for the wall-clock figures, then a third under the profiler.

How the table is made: the engine's and the trainer's phases are wrapped, from this script
only, in `torch.profiler.record_function` labels (the engine's `_forward`/`_logits`, the
module's `sample_rows`, the KV cache's methods; the update backend's `forward`, `backward`
and `clip_and_step`, the loss, the engine's `load_weights`). A phase's time is its
labels' time minus the labelled phases nested in it (the KV cache's `update` runs inside
the model's forward: it counts as KV bookkeeping, not forward). "Python/other" is the
rest of the wall time of the rollouts or of `train_step`. The profiler adds a few µs per
op, so profiled totals are a little above the unprofiled wall times printed beside them.
Then the top ops of each half by self CPU time (what the time is spent in).
Not a test: figures move ±15% with machine load; compare only figures from one run.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from chat_prompts import QUESTIONS  # sibling module: run as `python bench/...`
from torch._C._profiler import _ExperimentalConfig
from torch.profiler import ProfilerActivity, profile, record_function
from train_step import reward_of, rollout_groups

import trainer.engine.torch_engine as torch_engine
import trainer.policy.trainer as policy_trainer
from swarm.protocol import RunSettings
from trainer.config import EngineConfig
from trainer.model import TINY, bundled_model_dir, resolve_dtype
from trainer.policy import TorchPolicyFactory
from trainer.types import Policy

ROLLOUT_PHASES = ("model forward", "sampling", "KV bookkeeping")
UPDATE_PHASES = ("forward", "loss", "backward", "optimizer step", "weight copy to engine")


def labelled(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with record_function(label):
            return fn(*args, **kwargs)

    return wrapper


def wrap(owner: Any, name: str, label: str, missing: list[str]) -> None:
    """Label `owner.name` (an instance's or a module's attribute) if it exists."""
    fn = getattr(owner, name, None)
    if fn is None:
        missing.append(f"{type(owner).__name__}.{name}")
        return
    setattr(owner, name, labelled(fn, label))


def instrument(policy: Policy) -> list[str]:
    """Wrap the phases in labels; return what was not found (the engine changed)."""
    engine, trainer = policy.served.engine, policy.trainer
    missing: list[str] = []
    wrap(engine, "_forward", "model forward", missing)
    wrap(engine, "_logits", "model forward", missing)
    wrap(torch_engine, "sample_rows", "sampling", missing)
    cache_type = type(engine.cache)
    for method in ("update", "ensure_capacity", "prepare_prefill", "prepare_decode", "move_row"):
        wrap(cache_type, method, "KV bookkeeping", missing)
    backend = trainer.backend
    wrap(backend, "forward", "forward", missing)
    wrap(backend, "backward", "backward", missing)
    wrap(backend, "clip_and_step", "optimizer step", missing)
    wrap(policy_trainer, "ppo_clip_loss", "loss", missing)
    wrap(engine, "load_weights", "weight copy to engine", missing)
    return missing


def exclusive_seconds(prof: profile, labels: tuple[str, ...]) -> dict[str, float]:
    """Seconds per label, minus the labelled events nested inside it (same thread)."""
    events = sorted(
        (e for e in prof.events() if e.name in labels),
        key=lambda e: (e.thread, e.time_range.start, -e.time_range.end),
    )
    totals: dict[str, float] = defaultdict(float)
    stack: list[Any] = []
    for event in events:
        while stack and (
            stack[-1].thread != event.thread or stack[-1].time_range.end <= event.time_range.start
        ):
            stack.pop()
        seconds = (event.time_range.end - event.time_range.start) / 1e6
        totals[event.name] += seconds
        if stack:
            totals[stack[-1].name] -= seconds
        stack.append(event)
    return totals


def print_table(title: str, wall: float, profiled: float, phases: dict[str, float]) -> None:
    print(f"\n{title}: {wall:.2f} s wall unprofiled, {profiled:.2f} s profiled")
    other = profiled - sum(phases.values())
    for name, seconds in [*phases.items(), ("Python/other", other)]:
        print(f"  {name:<24} {seconds:7.3f} s  {seconds / profiled:6.1%}")


def print_top_ops(title: str, prof: profile, count: int) -> None:
    if count <= 0:
        return
    print(f"\n{title}, top {count} ops by self CPU time:")
    ops = [e for e in prof.key_averages() if not e.key.startswith(("ProfilerStep", "## "))]
    ops = [e for e in ops if e.key not in ROLLOUT_PHASES + UPDATE_PHASES]
    ops.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    for e in ops[:count]:
        print(f"  {e.key:<44} {e.self_cpu_time_total / 1e6:7.3f} s  {e.count:7d} calls")


async def one_step(policy: Policy, prompts: list[list[int]], args) -> tuple[Any, float, float]:
    started = time.perf_counter()
    groups = await rollout_groups(policy, prompts, args.group_size, args.completion_tokens)
    rollouts = time.perf_counter() - started
    started = time.perf_counter()
    await policy.trainer.train_step(groups, RunSettings(lr=1e-6))
    return groups, rollouts, time.perf_counter() - started


async def profiled_step(policy: Policy, prompts: list[list[int]], args):
    # the compute runs on the engine's worker thread, not this one
    options = {
        "activities": [ProfilerActivity.CPU],
        "experimental_config": _ExperimentalConfig(profile_all_threads=True),
    }
    with profile(**options) as rollout_prof:
        started = time.perf_counter()
        groups = await rollout_groups(policy, prompts, args.group_size, args.completion_tokens)
        rollouts = time.perf_counter() - started
    with profile(**options) as update_prof:
        started = time.perf_counter()
        await policy.trainer.train_step(groups, RunSettings(lr=1e-6))
        update = time.perf_counter() - started
    return rollout_prof, rollouts, update_prof, update


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        choices=["smollm2", "tiny"],
        default="smollm2",
        help="the bundled SmolLM2-135M-Instruct, or the tiny random model",
    )
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--completion-tokens", type=int, default=128)
    parser.add_argument("--top-ops", type=int, default=12, help="ops listed per half (0: none)")
    args = parser.parse_args()

    engine_threads = torch_engine.reserve_cores_for_engine()
    base_model = str(bundled_model_dir()) if args.model == "smollm2" else TINY
    compute = resolve_dtype("auto", "cpu")
    factory = TorchPolicyFactory(EngineConfig(), engine_threads=engine_threads)
    policy = factory.build(served_name="profile", base_model=base_model, lora=None, seed=0)
    tokenizer = policy.served.tokenizer
    prompts = [
        tokenizer.render_chat([{"role": "user", "content": q}]).token_ids
        for q in QUESTIONS[: args.prompts]
    ]
    print(f"model {base_model}; compute dtype {compute}; engine threads {engine_threads}")
    print(
        f"GRPO step: {args.prompts} prompts × group {args.group_size} × "
        f"{args.completion_tokens} tokens, reward {reward_of.__name__}"
    )
    try:
        asyncio.run(one_step(policy, prompts, args))  # warm-up: one-time costs
        _, rollout_wall, update_wall = asyncio.run(one_step(policy, prompts, args))
        missing = instrument(policy)
        if missing:
            print(f"not labelled (renamed?): {', '.join(missing)} — counted as Python/other")
        rollout_prof, rollouts, update_prof, update = asyncio.run(
            profiled_step(policy, prompts, args)
        )
    finally:
        policy.trainer.close()

    rollout_phases = exclusive_seconds(rollout_prof, ROLLOUT_PHASES)
    update_phases = exclusive_seconds(update_prof, UPDATE_PHASES)
    print_table(
        "rollouts", rollout_wall, rollouts, {p: rollout_phases.get(p, 0.0) for p in ROLLOUT_PHASES}
    )
    print_table(
        "update (train_step)",
        update_wall,
        update,
        {p: update_phases.get(p, 0.0) for p in UPDATE_PHASES},
    )
    print(f"\nwhole step: {rollout_wall + update_wall:.2f} s wall unprofiled")
    print_top_ops("rollouts", rollout_prof, args.top_ops)
    print_top_ops("update", update_prof, args.top_ops)


if __name__ == "__main__":
    main()
