"""Training on multi-turn agent episodes: one sequence per recorded call (`none`) vs an
episode's calls merged into one timeline (`timeline`) vs timelines packed as prefix trees
(`tree`), in one run.

    .venv/bin/python bench/merging.py [--turns 1,2,4,8,16] [--group 8] [--layers 8] [--repeats 2]
        [--micro-batch-tokens 4096] [--dtype auto] [--device cpu] [--attn sdpa]

Workload (synthetic, shaped like real agents): a 200-token system+task prompt, then per
turn a 60-token completion and a 40-token tool result; a GRPO group of `--group` episodes
shares the prompt and differs in every completion and tool result. Call k of an episode
is one `Sample`: prompt + every earlier turn as its prompt, 60 completion tokens.

For each turns value and layout, in a fresh child process: `merge_items` →
`build_micro_batches` (timed once: "prep s"), then forward + backward of the whole batch
as the trainer's `_update` does it (per micro-batch: `completion_logprobs` under
`autocast_context`, token-mean `ppo_clip_loss` over the whole batch, `loss.backward()`),
a warm-up on two micro-batches, then the median of `--repeats` whole batches. Model: the SmolLM2-135M architecture (the
bundled model's config) with `--layers` layers and random float32 weights; compute dtype
`--dtype` (`auto`: bf16 autocast where the hardware is fast at it, as the trainer does).

Columns: tokens processed = the micro-batches' `padded_tokens` (tree: nodes); trained =
completion tokens with a loss term (the same for all layouts); peak MB = the child's peak
RSS (VmHWM, reset once the model and batches are built) minus its RSS then (CPU), or CUDA's
peak allocated minus allocated then (GPU). Before measuring, the parent checks once per turns value (fp32,
one layer, no grad) that the three layouts give every trained token the same logprob.

Not a test: machines are noisy (on a shared CPU, very); compare only figures from one run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from trainer.losses import ppo_clip_loss  # noqa: E402
from trainer.model import bundled_model_dir, resolve_dtype  # noqa: E402
from trainer.policy.batching import (  # noqa: E402
    MicroBatch,
    TrainItem,
    build_micro_batches,
    merge_items,
)
from trainer.policy.logprobs import completion_logprobs  # noqa: E402
from trainer.policy.master import autocast_context  # noqa: E402
from trainer.types import Sample  # noqa: E402

PROMPT_TOKENS, COMPLETION_TOKENS, TOOL_TOKENS = 200, 60, 40
LAYOUTS = ("none", "timeline", "tree")
LABEL = {"none": "per-call", "timeline": "timeline", "tree": "tree"}
FIRST_TOKEN = 1000  # completions use ids above it, split into one range per episode


# -- workload ------------------------------------------------------------------------------
def episode_of(token: int, group: int, vocab: int) -> int:
    """Episode e's completion tokens lie in its own id range, so a trained token's target
    says which episode it belongs to (the correctness check keys tokens by it)."""
    return (token - FIRST_TOKEN) // ((vocab - FIRST_TOKEN) // group)


def make_items(turns: int, group: int, vocab: int, seed: int = 0) -> list[TrainItem]:
    """Per-call samples of `group` episodes of `turns` turns sharing one prompt."""
    rng = random.Random(seed * 1000 + turns)
    width = (vocab - FIRST_TOKEN) // group
    prompt = [rng.randrange(FIRST_TOKEN) for _ in range(PROMPT_TOKENS)]
    behaviour = -math.log(vocab)  # about a random model's logprob, so ratios start near 1
    items = []
    for e in range(group):
        advantage = 1.0 if e % 2 else -1.0
        history = list(prompt)
        for k in range(turns):
            lo = FIRST_TOKEN + e * width
            completion = [rng.randrange(lo, lo + width) for _ in range(COMPLETION_TOKENS)]
            sample = Sample(
                episode_id=f"e{e}",
                policy="policy",
                prompt_token_ids=list(history),
                completion_token_ids=completion,
                behaviour_logprobs=[behaviour] * COMPLETION_TOKENS,
                version=0,
                call_index=k,
            )
            items.append(TrainItem(sample, advantage))
            history += completion + [rng.randrange(FIRST_TOKEN) for _ in range(TOOL_TOKENS)]
    return items


def micro_batches(items, layout: str, micro_batch_tokens: int, config: LlamaConfig):
    merged, _ = merge_items(items, layout, config.max_position_embeddings, config.vocab_size)
    return build_micro_batches(merged, micro_batch_tokens, config.pad_token_id, layout)


def build_model(layers: int, attn: str, device: str) -> tuple[LlamaForCausalLM, LlamaConfig]:
    config = LlamaConfig.from_pretrained(bundled_model_dir())
    config.num_hidden_layers = layers
    torch.manual_seed(0)
    model = LlamaForCausalLM._from_config(config, attn_implementation=attn, dtype=torch.float32)
    return model.to(device), config


# -- child: one (turns, layout) measurement ---------------------------------------------------
def train_batch(model, batches: list[MicroBatch], device, compute_dtype) -> None:
    """Forward + backward of the whole batch, as `TorchPolicyTrainer._update` does it."""
    total = sum(b.trained_tokens for b in batches)
    model.zero_grad(set_to_none=True)
    for batch in batches:
        with autocast_context(device, compute_dtype, torch.float32):
            logprobs_N = completion_logprobs(model, batch)
        out = ppo_clip_loss(
            logprobs_N,
            batch.behaviour_logprobs_N.to(device),
            batch.advantages_N.to(device),
            clip_eps=0.2,
            normalizer=total,
        )
        out.loss.backward()
    if device.type == "cuda":
        torch.cuda.synchronize()


def _proc_status_kb(field: str) -> int:
    return int(re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text())[1])


def start_peak_memory(device) -> float:
    """Reset the peak and return the baseline (bytes) that `peak_mb_since` subtracts."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return float(torch.cuda.memory_allocated())
    try:  # Linux: "5" resets the peak RSS (VmHWM), so building the model does not count
        Path("/proc/self/clear_refs").write_text("5")
        return float(_proc_status_kb("VmRSS") * 1024)
    except (OSError, TypeError):  # no /proc: the peak so far is the baseline
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def peak_mb_since(device, baseline: float) -> float:
    if device.type == "cuda":
        return (torch.cuda.max_memory_allocated() - baseline) / 2**20
    try:
        peak = _proc_status_kb("VmHWM") * 1024
    except (OSError, TypeError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return (peak - baseline) / 2**20


def measure(args, turns: int, layout: str) -> dict:
    device = torch.device(args.device)
    compute_dtype = resolve_dtype(args.dtype, args.device)
    model, config = build_model(args.layers, args.attn, args.device)
    model.train()
    items = make_items(turns, args.group, config.vocab_size)
    started = time.perf_counter()
    batches = micro_batches(items, layout, args.micro_batch_tokens, config)
    prep = time.perf_counter() - started
    baseline = start_peak_memory(device)
    # warm-up: the first and the last micro-batch (the kinds a layout has: tree rows come
    # first, padded rows last), not the whole batch — per-call at 16 turns is minutes
    train_batch(
        model, [batches[0], batches[-1]] if len(batches) > 1 else batches, device, compute_dtype
    )
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        train_batch(model, batches, device, compute_dtype)
        seconds.append(time.perf_counter() - started)
    return {
        "processed": sum(b.padded_tokens for b in batches),
        "trained": sum(b.trained_tokens for b in batches),
        "micro_batches": len(batches),
        "prep": prep,
        "seconds": statistics.median(seconds[1:]),
        "peak_mb": peak_mb_since(device, baseline),
        "compute_dtype": str(compute_dtype).removeprefix("torch."),
    }


def run_child(args, turns: int, layout: str) -> dict:
    cmd = [sys.executable, __file__, "--part", f"{turns}:{layout}"]
    for flag in ("group", "layers", "repeats", "micro_batch_tokens", "dtype", "device", "attn"):
        cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measurement {turns}:{layout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- parent: correctness -------------------------------------------------------------------
@torch.no_grad()
def layout_logprobs(model, batches: list[MicroBatch], group: int, vocab: int) -> dict:
    """{(episode, position of the token in its timeline): logprob} over the trained tokens."""
    out = {}
    for batch in batches:
        logprobs_N = completion_logprobs(model, batch)
        if batch.position_ids_BT is not None:  # tree: a node's position id is its depth
            depth_N = batch.position_ids_BT[batch.rows_N, batch.positions_N] + 1
        else:
            depth_N = batch.positions_N + 1
        for target, depth, lp in zip(
            batch.targets_N.tolist(), depth_N.tolist(), logprobs_N.tolist(), strict=True
        ):
            out[(episode_of(target, group, vocab), depth)] = lp
    return out


def check_layouts_agree(args, turns: int, model, config) -> float:
    items = make_items(turns, args.group, config.vocab_size)
    per_layout = {
        layout: layout_logprobs(
            model,
            micro_batches(items, layout, args.micro_batch_tokens, config),
            args.group,
            config.vocab_size,
        )
        for layout in LAYOUTS
    }
    reference = per_layout["none"]
    assert len(reference) == args.group * turns * COMPLETION_TOKENS, len(reference)
    worst = 0.0
    for layout in ("timeline", "tree"):
        assert per_layout[layout].keys() == reference.keys(), f"{layout}: other tokens trained"
        worst = max(worst, max(abs(per_layout[layout][k] - v) for k, v in reference.items()))
    return worst


# -- report --------------------------------------------------------------------------------
def goal_line(text: str, value: float | None, target: float) -> str:
    if value is None:
        return f"  {text}: not measured (add the turns value to --turns)"
    return f"  {text}: {value:.2f}x (goal ≥ {target}x) — {'met' if value >= target else 'NOT met'}"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--turns", default="1,2,4,8,16", help="comma-separated turns per episode")
    ap.add_argument("--group", type=int, default=8, help="episodes per GRPO group")
    ap.add_argument("--layers", type=int, default=8, help="decoder layers (SmolLM2-135M: 30)")
    ap.add_argument("--repeats", type=int, default=2, help="timed runs after one warm-up")
    ap.add_argument("--micro-batch-tokens", type=int, default=4096)
    ap.add_argument("--dtype", default="auto", help="compute dtype: auto, bfloat16, float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--part", default=None, help=argparse.SUPPRESS)  # child: "turns:layout"
    args = ap.parse_args()

    if args.part is not None:  # child process: one measurement, printed as JSON
        turns, layout = args.part.split(":")
        print(json.dumps(measure(args, int(turns), layout)))
        return

    turns_values = [int(t) for t in args.turns.split(",")]
    compute_dtype = resolve_dtype(args.dtype, args.device)
    print(
        f"SmolLM2-135M architecture, {args.layers} layers, random weights; group {args.group}; "
        f"prompt {PROMPT_TOKENS}, per turn {COMPLETION_TOKENS} completion + {TOOL_TOKENS} tool "
        f"tokens; micro-batches ≤ {args.micro_batch_tokens} tokens; float32 weights, compute "
        f"{str(compute_dtype).removeprefix('torch.')}; attn {args.attn}; device {args.device}; "
        f"torch threads {torch.get_num_threads()}; median of {args.repeats} after a warm-up",
        flush=True,
    )

    # correctness: every layout gives every trained token the same logprob (fp32, 1 layer)
    checker, config = build_model(1, args.attn, args.device)
    checker.eval()
    for turns in turns_values:
        diff = check_layouts_agree(args, turns, checker, config)
        print(f"check {turns:>2} turns: layouts agree, max |Δ logprob| = {diff:.1e}", flush=True)
    del checker

    results: dict[tuple[int, str], dict] = {}
    for turns in turns_values:
        for layout in LAYOUTS:
            r = results[turns, layout] = run_child(args, turns, layout)
            print(
                f"  measured {turns:>2} turns {LABEL[layout]:<8}: {r['seconds']:7.2f} s",
                flush=True,
            )

    header = (
        f"{'turns':>5} | {'layout':<8} | {'tokens processed':>16} | {'trained':>7} | "
        f"{'micro-b':>7} | {'prep s':>6} | {'s/batch':>8} | {'tokens/s':>8} | "
        f"{'peak MB':>7} | {'speedup vs per-call':>19}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for turns in turns_values:
        base = results[turns, "none"]["seconds"]
        for layout in LAYOUTS:
            r = results[turns, layout]
            print(
                f"{turns:>5} | {LABEL[layout]:<8} | {r['processed']:>16,} | {r['trained']:>7,} | "
                f"{r['micro_batches']:>7} | {r['prep']:>6.2f} | {r['seconds']:>8.2f} | "
                f"{r['processed'] / r['seconds']:>8,.0f} | {r['peak_mb']:>7.0f} | "
                f"{base / r['seconds']:>18.2f}x"
            )

    print(
        "\nratios: how many times faster per batch (in brackets: how many times fewer tokens "
        "processed, the limit as the decoder's share of the time grows with more layers)"
    )
    speedup: dict[tuple[int, str], float] = {}
    for turns in turns_values:
        none, timeline, tree = (results[turns, layout]["seconds"] for layout in LAYOUTS)
        n_none, n_timeline, n_tree = (results[turns, layout]["processed"] for layout in LAYOUTS)
        speedup[turns, "timeline"] = none / timeline
        speedup[turns, "tree/timeline"] = timeline / tree
        print(
            f"  {turns:>2} turns: timeline/per-call {none / timeline:5.2f}x "
            f"({n_none / n_timeline:4.2f}x)   tree/per-call {none / tree:5.2f}x "
            f"({n_none / n_tree:4.2f}x)   tree/timeline {timeline / tree:5.2f}x "
            f"({n_timeline / n_tree:4.2f}x)"
        )

    print("\ngoals")
    print(goal_line("timeline over per-call at 2 turns", speedup.get((2, "timeline")), 1.5))
    print(goal_line("timeline over per-call at 16 turns", speedup.get((16, "timeline")), 6))
    for turns in (1, 2):
        print(
            goal_line(
                f"tree over timeline at {turns} turn{'s' if turns > 1 else ''}",
                speedup.get((turns, "tree/timeline")),
                1.5,
            )
        )
    worse = [
        f"{turns} turns {layout}"
        for turns in turns_values
        for layout in ("timeline", "tree")
        if results[turns, layout]["peak_mb"] > results[turns, "none"]["peak_mb"]
    ]
    print(
        "  peak memory of timeline and tree ≤ per-call at every turns value: "
        + ("met" if not worse else f"NOT met ({', '.join(worse)})")
    )


if __name__ == "__main__":
    main()
