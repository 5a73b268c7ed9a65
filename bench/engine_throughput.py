"""Engine throughput: 8 concurrent chat requests through `TorchEngine` vs plain HF `generate`.

    .venv/bin/python bench/engine_throughput.py [--dtype float32|bfloat16|auto] [--requests 8] [--new-tokens 128]

Same model (the bundled SmolLM2-135M-Instruct), same prompts, 128 new tokens each
(`ignore_eos` / `min_new_tokens` so every request really produces them), sampling at
temperature 1. Baselines, measured in the same run:
  1. plain `model.generate`, one request after another (what a naive server does);
  2. `model.generate` on all 8 prompts at once, left-padded (static batching).
Prints tokens/s of each and the ratios. Not a test: machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import torch
from chat_prompts import QUESTIONS  # sibling module: run as `python bench/...`

from trainer.config import EngineConfig, ModelConfig
from trainer.engine import TorchEngine
from trainer.engine.torch_engine import reserve_cores_for_engine
from trainer.model import load_model
from trainer.tokenizer import HFChatTokenizer
from trainer.types import SamplingParams


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--model", default="smollm2-135m")
    args = ap.parse_args()

    # One thread computes (see trainer.engine.torch_engine.reserve_cores_for_engine); the
    # HF baselines run on that same engine thread through `run_exclusive`, so both sides get
    # the same OpenMP team and the same cores.
    threads = reserve_cores_for_engine()
    loaded = load_model(ModelConfig(name=args.model, dtype=args.dtype))
    model, tok = loaded.model, HFChatTokenizer(loaded.tokenizer)
    dtype = next(model.parameters()).dtype
    print(f"model {args.model} ({loaded.source}), dtype {dtype}, torch threads {threads}")
    prompts = [
        tok.render_chat([{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]).token_ids
        for i in range(args.requests)
    ]
    n_new = args.new_tokens
    total = n_new * len(prompts)
    gen_kwargs = dict(
        max_new_tokens=n_new,
        min_new_tokens=n_new,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        pad_token_id=loaded.tokenizer.pad_token_id,
    )
    engine = TorchEngine(model, tok, EngineConfig(threads=threads))
    params = SamplingParams(max_tokens=n_new, temperature=1.0, ignore_eos=True)

    def hf_sequential() -> float:
        model.generate(
            torch.tensor([prompts[0]]), **{**gen_kwargs, "max_new_tokens": 4, "min_new_tokens": 4}
        )
        started = time.perf_counter()
        for p in prompts:
            model.generate(torch.tensor([p]), **gen_kwargs)
        return total / (time.perf_counter() - started)

    def hf_static_batch() -> float:
        loaded.tokenizer.padding_side = "left"
        batch = loaded.tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
        started = time.perf_counter()
        model.generate(**batch, **gen_kwargs)
        return total / (time.perf_counter() - started)

    async def run_all() -> tuple[float, float, float]:
        await engine.generate(prompts[0], SamplingParams(max_tokens=4, ignore_eos=True))  # warm-up
        t0 = time.perf_counter()
        results = await asyncio.gather(*(engine.generate(p, params) for p in prompts))
        elapsed = time.perf_counter() - t0
        assert all(len(r.token_ids) == n_new for r in results)
        ours = sum(len(r.token_ids) for r in results) / elapsed
        sequential = await engine.run_exclusive(hf_sequential, bump_version=False)
        static_batched = await engine.run_exclusive(hf_static_batch, bump_version=False)
        return ours, sequential, static_batched

    ours, sequential, static_batched = asyncio.run(run_all())
    engine.shutdown()

    print(f"{len(prompts)} requests x {n_new} new tokens")
    print(f"  HF generate, one after another : {sequential:8.1f} tok/s   (baseline)")
    print(
        f"  HF generate, static batch      : {static_batched:8.1f} tok/s   ({static_batched / sequential:.2f}x baseline)"
    )
    print(
        f"  swarmrl TorchEngine, concurrent: {ours:8.1f} tok/s   ({ours / sequential:.2f}x baseline, "
        f"{ours / static_batched:.2f}x static batch)"
    )


if __name__ == "__main__":
    main()
