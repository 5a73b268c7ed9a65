"""Where a `TorchEngine` decode step's time goes: model forward, LM head, sampling, the
per-token bookkeeping (detokenize, emit, retire), and the rest (Python around them).

    PYTHONPATH=$PWD .venv/bin/python bench/profile_decode.py [--requests 8] [--new-tokens 128] [--ops]

Runs N concurrent chats × M new tokens (ignore_eos, temperature 1) on the bundled
SmolLM2-135M-Instruct, timing the engine's own stages by wrapping them on the engine
thread (the wrapper costs ~1 µs a call). `--ops` adds torch.profiler's top operators of the
decode steps. Prints ms per decode step per stage and the share of the step; the reference
is a bare model forward of the same batch (what a step cannot go below without a faster
forward), and that forward taken apart: the model's own linear layers alone on a batch of
N rows (reading every weight once: the weights-read part), the LM head alone, and a
narrow twin of the model (same layers and ops, hidden size 64: the per-op framework and
Python cost, with almost no arithmetic). `--threads 1` measures CPU time of the engine's
thread, which other work on the machine inflates far less than wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import defaultdict

import torch
from chat_prompts import QUESTIONS  # sibling module: run as `python bench/...`

from trainer.config import EngineConfig, ModelConfig
from trainer.engine import TorchEngine
from trainer.engine.torch_engine import reserve_cores_for_engine
from trainer.model import load_model
from trainer.tokenizer import HFChatTokenizer
from trainer.types import SamplingParams

# With one torch thread all compute runs on the engine's thread, so its CPU time is the
# cost of each stage whatever else the machine runs; with more, wall time (noisy).
CLOCK = time.perf_counter
STAGES = ("_forward", "_logits", "_sample_isolated", "_take_samples", "_decode_step", "_admit")


def timed(engine: TorchEngine, totals: dict[str, float]) -> None:
    """Wrap the engine's stage methods so each call adds its wall time to `totals`; the
    inner stages count only inside a decode step (prefill's are part of `_admit`)."""
    in_decode = [False]
    for name in STAGES:
        inner = getattr(engine, name)

        def wrapper(*args, _inner=inner, _name=name, **kwargs):
            outer = _name in ("_decode_step", "_admit")
            if _name == "_decode_step":
                in_decode[0] = True
            started = CLOCK()
            try:
                return _inner(*args, **kwargs)
            finally:
                if outer or in_decode[0]:
                    totals[_name] += CLOCK() - started
                if _name == "_decode_step":
                    in_decode[0] = False

        setattr(engine, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--threads", type=int, default=None, help="engine threads (1: CPU time)")
    ap.add_argument("--ops", action="store_true", help="also print torch.profiler's top ops")
    args = ap.parse_args()

    global CLOCK
    threads = reserve_cores_for_engine() if args.threads is None else args.threads
    if threads == 1:
        CLOCK = time.thread_time
    loaded = load_model(ModelConfig(name=args.model, dtype=args.dtype))
    model, tok = loaded.model, HFChatTokenizer(loaded.tokenizer)
    clock = "engine-thread CPU time" if threads == 1 else "wall time"
    print(f"model {args.model}, dtype {next(model.parameters()).dtype}, threads {threads}, {clock}")
    prompts = [
        tok.render_chat([{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]).token_ids
        for i in range(args.requests)
    ]
    engine = TorchEngine(model, tok, EngineConfig(threads=threads))
    params = SamplingParams(max_tokens=args.new_tokens, temperature=1.0, ignore_eos=True)
    totals: dict[str, float] = defaultdict(float)

    def bare_forward_ms() -> float:
        """A plain HF forward of one new token per row over a prompt-long cache."""
        ids = torch.tensor([p[:1] for p in prompts])
        out = model(torch.tensor([prompts[0]] * len(prompts)), use_cache=True)
        cache = out.past_key_values
        times = []
        for _ in range(20):
            started = CLOCK()
            model(ids, past_key_values=cache, use_cache=True)
            times.append(CLOCK() - started)
            cache.crop(-1)
        return 1000 * sorted(times)[len(times) // 2]

    def forward_parts_ms() -> dict[str, float]:
        """The bare forward's parts, each the fastest of 10 runs."""
        rows = len(prompts)
        linears = [
            m for layer in model.get_decoder().layers for m in layer.modules()
            if isinstance(m, torch.nn.Linear)
        ]  # fmt: skip
        inputs = {
            m.in_features: torch.randn(rows, m.in_features, dtype=m.weight.dtype) for m in linears
        }
        head = model.get_output_embeddings()
        narrow_config = model.config.__class__(**{
            **model.config.to_dict(), "hidden_size": 64, "intermediate_size": 128,
            "head_dim": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
        })  # fmt: skip
        narrow = type(model)(narrow_config).to(next(model.parameters()).dtype).eval()
        narrow_cache = narrow(torch.randint(0, 1000, (rows, 40)), use_cache=True).past_key_values
        step_ids = torch.randint(0, 1000, (rows, 1))

        def narrow_step() -> None:
            narrow(step_ids, past_key_values=narrow_cache, use_cache=True)
            narrow_cache.crop(-1)

        parts = {
            "decoder linears alone (every weight read once)": lambda: [
                m(inputs[m.in_features]) for m in linears
            ],
            "LM head alone": lambda: head(inputs[head.in_features]),
            "narrow twin forward (ops without arithmetic)": narrow_step,
        }
        fastest = {}
        for name, run_part in parts.items():
            times = []
            for _ in range(10):
                started = CLOCK()
                run_part()
                times.append(CLOCK() - started)
            fastest[name] = 1000 * min(times)
        return fastest

    async def run() -> tuple[float, float, int]:
        await engine.generate(prompts[0], SamplingParams(max_tokens=4, ignore_eos=True))
        bare = await engine.run_exclusive(bare_forward_ms, bump_version=False)
        parts = await engine.run_exclusive(forward_parts_ms, bump_version=False)
        print(f"bare HF forward of {len(prompts)} rows, one new token each: {bare:6.2f} ms")
        for name, ms in parts.items():
            print(f"  {name:<48s}: {ms:6.2f} ms")
        await engine.run_exclusive(lambda: timed(engine, totals), bump_version=False)
        steps_before = engine.steps
        started = time.perf_counter()
        # the profiler records the thread it starts on: start and stop it on the engine's
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        if args.ops:
            await engine.run_exclusive(prof.__enter__, bump_version=False)
        await asyncio.gather(*(engine.generate(p, params) for p in prompts))
        if args.ops:
            await engine.run_exclusive(lambda: prof.__exit__(None, None, None), bump_version=False)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
        return time.perf_counter() - started, bare, engine.steps - steps_before

    elapsed, _bare_ms, steps = asyncio.run(run())
    engine.shutdown()
    step_ms = 1000 * totals["_decode_step"] / steps
    rows = {
        "model forward (decoder + KV writes)": 1000 * totals["_forward"],
        "LM head": 1000 * totals["_logits"],
        "sampling (sample_rows)": 1000 * totals["_sample_isolated"],
        "emit/detokenize/retire": 1000 * (totals["_take_samples"] - totals["_sample_isolated"]),
    }
    per_step = {k: v / steps for k, v in rows.items()}
    admit_ms = 1000 * totals["_admit"]
    rest = step_ms - sum(per_step.values())
    print(
        f"{args.requests} requests x {args.new_tokens} tokens: {elapsed:.2f} s, {steps} decode "
        f"steps, {steps / elapsed:.1f} steps/s, {args.requests * args.new_tokens / elapsed:.0f} tok/s"
    )
    print(f"  decode step, all of it                               : {step_ms:6.2f} ms")
    for name, ms in per_step.items():
        print(f"    {name:<40s}: {ms:6.2f} ms  ({100 * ms / step_ms:4.1f}%)")
    print(
        f"    {'rest (masks, ids, cache prep, Python)':<40s}: {rest:6.2f} ms  ({100 * rest / step_ms:4.1f}%)"
    )
    print(
        f"  admission (prefill) in all: {admit_ms:.0f} ms; outside the engine's steps: "
        f"{1000 * elapsed - 1000 * totals['_decode_step'] - admit_ms:.0f} ms"
    )


if __name__ == "__main__":
    main()
