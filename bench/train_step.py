"""One GRPO step: our trainer (TorchEngine rollouts + TorchPolicyTrainer update) vs TRL's
`GRPOTrainer`, plus our update alone and its share of this machine's peak matmul FLOP/s.

    .venv/bin/python bench/train_step.py [--prompts 2] [--group-size 4] [--completion-tokens 128] [--skip-trl]

Same model (the safetensors copy of the bundled SmolLM2-135M-Instruct at
`trainer.model.bundled_model_dir()`), same chat prompts, group size, completion length
(`ignore_eos` / `min_new_tokens`, so every completion really has that many tokens),
temperature 1, same reward (share of the letter "e" in the text), and the same dtype
policy: float32 master weights with bf16 compute where the CPU is fast at bf16 (ours: on
the masters' bf16 compute copy; TRL: `bf16=True`, autocast), else float32. Measured in
this one run:

1. peak matmul FLOP/s: a 2048² matmul loop in bf16 and fp32 on the engine's thread count;
2. TRL `GRPOTrainer`: the time of one training step (generation + update), from its
   `on_step_begin` to `on_step_end` callbacks, so model loading is not counted;
3. ours: rollouts of the same batch through the engine + one `train_step`;
4. ours, update alone on 8 × 256 tokens (full parameters on the bf16 compute copy — the
   default —, full parameters with bf16 autocast over the float32 masters — the path
   before the compute copy —, full parameters in fp32, LoRA r16 with bf16 autocast):
   seconds, and achieved FLOP/s = 6 · params · tokens / seconds (4 · params · tokens for
   LoRA, whose frozen weights get no gradient) over the peak of the dtype it computes in.

TRL lives in the `bench` extra: `.venv/bin/pip install -e ".[bench]"` (or `pip install
trl`). Without it the TRL line says so and ours still print. Not a test: machines are
noisy; compare only figures from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time

import torch
from chat_prompts import QUESTIONS  # sibling module: run as `python bench/...`

from swarm.protocol import RunSettings
from trainer.config import EngineConfig
from trainer.engine.torch_engine import DEFAULT_THREADS, reserve_cores_for_engine
from trainer.model import bundled_model_dir, resolve_dtype
from trainer.policy import TorchPolicyFactory
from trainer.types import EpisodeSamples, Group, Policy, Sample, SamplingParams

UPDATE_ROWS, UPDATE_ROW_TOKENS = 8, 256


def reward_of(text: str) -> float:
    return text.lower().count("e") / max(len(text), 1)


def peak_matmul_flops(dtype: torch.dtype, seconds: float = 2.0, n: int = 2048) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(3 if n >= 2048 else 1):
        a @ b
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        runs += 1
    return 2 * n**3 * runs / (time.perf_counter() - started)


# -- TRL -----------------------------------------------------------------------------------
def trl_step_seconds(args, model_dir: str, bf16: bool) -> float | str:
    try:
        from datasets import Dataset
        from transformers import TrainerCallback
        from trl import GRPOConfig, GRPOTrainer
    except ImportError:
        return 'not installed: .venv/bin/pip install -e ".[bench]"  (or: pip install trl)'

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds: list[float] = []
            self._started = 0.0

        def on_step_begin(self, *a, **k):
            self._started = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.seconds.append(time.perf_counter() - self._started)

    def reward_func(completions, **kwargs):
        return [reward_of(c[-1]["content"] if isinstance(c, list) else c) for c in completions]

    prompts = [[{"role": "user", "content": q}] for q in QUESTIONS[: args.prompts]]
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=args.prompts * args.group_size,
            num_generations=args.group_size,
            max_completion_length=args.completion_tokens,
            generation_kwargs={"min_new_tokens": args.completion_tokens},
            temperature=1.0,
            learning_rate=1e-6,
            max_steps=1,
            bf16=bf16,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_steps=1,
            model_init_kwargs={"dtype": torch.float32},
        )
        trainer = GRPOTrainer(
            model=model_dir,
            reward_funcs=reward_func,
            args=config,
            train_dataset=Dataset.from_dict({"prompt": prompts}),
            callbacks=[timer],
        )
        trainer.train()
    return timer.seconds[0]


# -- ours ----------------------------------------------------------------------------------
async def rollout_groups(policy: Policy, prompts: list[list[int]], group_size: int, tokens: int):
    engine, tokenizer = policy.served.engine, policy.served.tokenizer
    params = SamplingParams(max_tokens=tokens, temperature=1.0, ignore_eos=True)
    completions = await asyncio.gather(
        *(engine.generate(p, params) for p in prompts for _ in range(group_size))
    )
    groups = []
    for g, prompt in enumerate(prompts):
        episodes = []
        for i, c in enumerate(completions[g * group_size : (g + 1) * group_size]):
            eid = f"{g}-{i}"
            sample = Sample(eid, "p", prompt, c.token_ids, c.logprobs, c.version)
            episodes.append(EpisodeSamples(eid, reward_of(tokenizer.decode(c.token_ids)), [sample]))
        groups.append(Group(str(g), episodes))
    return groups


async def our_grpo_step(policy: Policy, args) -> tuple[float, float, float]:
    prompts = [
        policy.served.tokenizer.render_chat([{"role": "user", "content": q}]).token_ids
        for q in QUESTIONS[: args.prompts]
    ]
    started = time.perf_counter()
    groups = await rollout_groups(policy, prompts, args.group_size, args.completion_tokens)
    generated = time.perf_counter() - started
    result = await policy.trainer.train_step(groups, RunSettings(lr=1e-6))
    return generated, result.metrics["step_seconds"], time.perf_counter() - started


async def our_update_alone(policy: Policy) -> float:
    """A warm train_step on 8 rows of exactly 256 tokens (prompt + generated completion)."""
    prompts = [
        policy.served.tokenizer.render_chat([{"role": "user", "content": q}]).token_ids
        for q in QUESTIONS[:UPDATE_ROWS]
    ]
    completion_tokens = UPDATE_ROW_TOKENS - max(len(p) for p in prompts)
    prompts = [p + p[-1:] * (UPDATE_ROW_TOKENS - completion_tokens - len(p)) for p in prompts]
    groups = await rollout_groups(policy, prompts, 1, completion_tokens)
    # one group of 8 so GRPO has a baseline; each row is 256 tokens
    merged = [Group("all", [e for g in groups for e in g.episodes])]
    # the first step pays one-time costs (optimizer state, allocator warm-up): time the second
    settings = RunSettings(lr=1e-6, max_staleness=4)  # a run's: train_step reads its part
    await policy.trainer.train_step(merged, settings)
    result = await policy.trainer.train_step(merged, settings)
    assert result.samples_trained == UPDATE_ROWS, result.samples_dropped
    return result.metrics["step_seconds"]


def _child(args, part: str):
    """Run one part of this benchmark in a fresh process; its last stdout line is JSON."""
    cmd = [
        sys.executable,
        __file__,
        "--part",
        part,
        "--prompts",
        str(args.prompts),
        "--group-size",
        str(args.group_size),
        "--completion-tokens",
        str(args.completion_tokens),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark part {part!r} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--completion-tokens", type=int, default=128)
    parser.add_argument("--skip-trl", action="store_true")
    parser.add_argument(
        "--part", choices=["all", "peak", "trl"], default="all", help=argparse.SUPPRESS
    )
    args = parser.parse_args()

    model_dir = str(bundled_model_dir())
    compute = resolve_dtype("auto", "cpu")
    bf16 = compute == torch.bfloat16
    if args.part == "peak":  # child process: print the peaks as JSON
        torch.set_num_threads(DEFAULT_THREADS)
        # A CPU without fast bf16 (no AVX-512 BF16/AMX) runs a bf16 2048² matmul in over a
        # minute; `auto` then computes in fp32 and the bf16 peak is only printed, so a 512²
        # one says enough.
        bf16_n = 2048 if bf16 else 512
        peaks = {str(torch.bfloat16): peak_matmul_flops(torch.bfloat16, n=bf16_n)}
        peaks[str(torch.float32)] = peak_matmul_flops(torch.float32)
        print(json.dumps(peaks))
        return
    if args.part == "trl":  # child process: print TRL's step seconds as JSON
        torch.set_num_threads(DEFAULT_THREADS)
        print(json.dumps(trl_step_seconds(args, model_dir, bf16)))
        return
    # The peak matmul and TRL run in child processes: a thread that has run torch ops keeps
    # an OpenMP team that slows every other thread's team (~1.7x here), so this process
    # computes only on the engine's thread, as `gateway serve` does.
    peak_json = _child(args, "peak")
    peak = {torch.bfloat16: peak_json["torch.bfloat16"], torch.float32: peak_json["torch.float32"]}
    print(f"threads {DEFAULT_THREADS}; compute dtype {compute}; model {model_dir}")
    for dt, flops in peak.items():
        side = 2048 if bf16 or dt == torch.float32 else 512
        print(f"peak matmul {side}² {str(dt):>15}: {flops / 1e9:8.1f} GFLOP/s")

    batch = f"{args.prompts} prompts × group {args.group_size} × {args.completion_tokens} tokens"
    trl = "skipped" if args.skip_trl else _child(args, "trl")

    engine_threads = reserve_cores_for_engine()  # from here on, one compute thread: the engine's
    rows: list[tuple[str, float, torch.dtype]] = []
    for label, lora, dtype, compute_copy in [
        ("full, bf16 compute copy" if bf16 else "full, fp32", None, compute, True),
        ("full, bf16 autocast" if bf16 else "full, fp32", None, compute, False),
        ("full, fp32", None, torch.float32, True),
        (
            "LoRA r16, bf16 autocast" if bf16 else "LoRA r16, fp32",
            {"r": 16, "alpha": 32},
            compute,
            True,
        ),
    ]:
        if (label, dtype) in [(r[0], r[2]) for r in rows]:
            continue
        factory = TorchPolicyFactory(
            EngineConfig(),
            engine_threads=engine_threads,
            compute_dtype=str(dtype)[6:],
            compute_copy=compute_copy,
        )
        policy = factory.build(served_name="bench", base_model=model_dir, lora=lora, seed=0)
        params = sum(p.numel() for p in policy.trainer.master.model.parameters())
        try:
            if not rows:
                gen, upd, total = asyncio.run(our_grpo_step(policy, args))
                print(f"\nGRPO step, {batch}:")
                if isinstance(trl, float):
                    print(f"  TRL GRPOTrainer (bf16={bf16}): {trl:7.1f} s")
                else:
                    print(f"  TRL GRPOTrainer: {trl}")
                print(
                    f"  ours ({label}):   {total:7.1f} s  (rollouts {gen:.1f} s, update {upd:.1f} s)"
                )
                if isinstance(trl, float):
                    print(f"  ratio TRL / ours: {trl / total:.2f}x")
                print(f"\nupdate alone, {UPDATE_ROWS} × {UPDATE_ROW_TOKENS} tokens:")
            seconds = asyncio.run(our_update_alone(policy))
        finally:
            policy.trainer.close()
        # forward 2·P·T, backward 2·P·T for the input gradients and, when the weights
        # train, 2·P·T more for theirs (LoRA's frozen base has none; its adapters are ~1%)
        achieved = (4 if lora else 6) * params * UPDATE_ROWS * UPDATE_ROW_TOKENS / seconds
        rows.append((label, seconds, dtype))
        print(
            f"  {label:<24} {seconds:6.2f} s  {achieved / 1e9:6.1f} GFLOP/s = "
            f"{achieved / peak[dtype]:5.1%} of the {str(dtype)[6:]} peak"
        )


if __name__ == "__main__":
    main()
