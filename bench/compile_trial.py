"""Does `torch.compile` (CPU inductor) speed up the update's forward+backward or a decode
step of the bundled SmolLM2-135M? Eager and compiled, alternated in one process.

    PYTHONPATH=. .venv/bin/python bench/compile_trial.py [--part update|decode|both]
        [--scope layers|decoder] [--rounds 3] [--model smollm2|tiny]
        [--profile-ops 0] [--pack-gqa]

Update (issue 18's shape): 8 rows × 256 tokens on the masters' bf16 compute copy, as
`TorchPolicyTrainer` runs it — `completion_logprobs` (decoder, then the chunked fused LM
head) and `ppo_clip_loss`, then backward. (a) eager; (b) the same with each decoder layer
(`--scope layers`: one graph reused by all 30) or the whole decoder (`--scope decoder`)
wrapped by `torch.compile(dynamic=False)`, mode None. The LM head stays the eager
autograd Function in both (it is already chunked and fused).

Decode: one token for 8 rows on a fixed-size cache (transformers' `StaticCache`, 256
columns, 128 filled): eager vs the whole model forward compiled. The engine's
`SlotKVCache` changes shape every step (rows join and leave, the read columns grow), so
this is the upper bound of what compile could do for a decode step with static shapes.
`--pack-gqa` lets the compiled graph take transformers' packed-query-groups SDPA path,
which it skips under compile (without it, the compiled step is slower than eager).

Measure: CPU time of this one compute thread (`time.thread_time`, torch set to one
thread), the variants alternated A B A B so load drift hits both. Compile time (first
calls, wall clock) is reported separately. Numbers: compiled against eager, and both
against a float32 run, so "within bf16 noise" means the compiled error against float32
is no larger than eager's.
Not a test: compare only figures from one run.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

from trainer.losses import ppo_clip_loss
from trainer.model import TINY, bundled_model_dir, tiny_config
from trainer.policy.batching import MicroBatch
from trainer.policy.logprobs import completion_logprobs

ROWS, ROW_TOKENS = 8, 256


def load(model_name: str) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    if model_name == TINY:
        torch.manual_seed(0)
        return LlamaForCausalLM(tiny_config(49152, 0, 1)).float()
    return AutoModelForCausalLM.from_pretrained(bundled_model_dir(), dtype=torch.float32)


def update_batch(vocab: int) -> MicroBatch:
    """8 full rows, every position after the first 32 trained (as a completion is)."""
    g = torch.Generator().manual_seed(0)
    ids_BT = torch.randint(0, vocab, (ROWS, ROW_TOKENS), generator=g)
    rows, positions = torch.meshgrid(
        torch.arange(ROWS), torch.arange(31, ROW_TOKENS - 1), indexing="ij"
    )
    rows_N, positions_N = rows.reshape(-1), positions.reshape(-1)
    n = rows_N.numel()
    return MicroBatch(
        input_ids_BT=ids_BT,
        rows_N=rows_N,
        positions_N=positions_N,
        targets_N=ids_BT[rows_N, positions_N + 1],
        behaviour_logprobs_N=torch.full((n,), -10.0),
        advantages_N=torch.randn(n, generator=g),
        temperatures_N=torch.ones(n),
    )


def update_step(model: torch.nn.Module, batch: MicroBatch) -> torch.Tensor:
    """Forward + loss + backward as `TorchPolicyTrainer._accumulate_and_step` runs one
    micro-batch on the compute copy; returns the logprobs (grads are left on the model)."""
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        logprobs_N = completion_logprobs(model, batch)
        out = ppo_clip_loss(
            logprobs_N, batch.behaviour_logprobs_N, batch.advantages_N, clip_eps=0.2
        )
        out.loss.backward()
    return logprobs_N.detach().float()


def compile_model(model: torch.nn.Module, scope: str) -> None:
    """In place: each decoder layer, or the whole decoder (what `completion_logprobs` calls)."""
    if scope == "layers":
        for layer in model.get_decoder().layers:
            layer.compile(dynamic=False)
    else:
        model.get_decoder().compile(dynamic=False)


def grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}


def grad_error(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest over parameters of ||a - b|| / ||b||."""
    return max(float((a[k] - b[k]).norm() / b[k].norm().clamp_min(1e-30)) for k in b)


def cpu_seconds(fn) -> float:
    start = time.thread_time()
    fn()
    return time.thread_time() - start


def first_call(label: str, fn):
    """Run the first (compiling) call and print its wall and thread CPU seconds; inductor
    compiles its kernels in worker processes, so wall is the figure to budget for."""
    started, cpu0 = time.perf_counter(), time.thread_time()
    result = fn()
    print(
        f"{label}: {time.perf_counter() - started:.1f} s wall, "
        f"{time.thread_time() - cpu0:.1f} s thread CPU",
        flush=True,
    )
    return result


def alternate(eager_fn, compiled_fn, rounds: int) -> tuple[list[float], list[float]]:
    eager, compiled = [], []
    for i in range(rounds):
        eager.append(cpu_seconds(eager_fn))
        compiled.append(cpu_seconds(compiled_fn))
        print(
            f"  round {i + 1}: eager {eager[-1]:.3f} s  compiled {compiled[-1]:.3f} s", flush=True
        )
    return eager, compiled


def report(label: str, eager: list[float], compiled: list[float], unit: float = 1.0) -> None:
    e, c = min(eager) * unit, min(compiled) * unit
    me, mc = sorted(eager)[len(eager) // 2] * unit, sorted(compiled)[len(compiled) // 2] * unit
    print(
        f"{label}: eager min {e:.3f} / median {me:.3f}; compiled min {c:.3f} / median {mc:.3f};"
        f" eager/compiled {e / c:.2f}x (min) {me / mc:.2f}x (median)"
    )


def trial_update(master: torch.nn.Module, scope: str, rounds: int, profile_ops: int) -> None:
    batch = update_batch(master.config.vocab_size)
    fp32 = master
    eager = copy.deepcopy(master).to(torch.bfloat16).train()
    compiled = copy.deepcopy(master).to(torch.bfloat16).train()
    fp32.train()

    ref_lp = update_step(fp32, batch)
    ref_g = grads(fp32)
    fp32.zero_grad(set_to_none=True)

    compile_model(compiled, scope)
    c_lp = first_call(
        f"update compile (first forward+backward, scope {scope})",
        lambda: update_step(compiled, batch),
    )
    e_lp = update_step(eager, batch)
    c_g, e_g = grads(compiled), grads(eager)
    print(
        f"logprobs max |diff|: compiled vs eager {float((c_lp - e_lp).abs().max()):.4f}; "
        f"vs fp32: eager {float((e_lp - ref_lp).abs().max()):.4f}, "
        f"compiled {float((c_lp - ref_lp).abs().max()):.4f}; mean |diff| compiled vs eager "
        f"{float((c_lp - e_lp).abs().mean()):.4f}, eager vs fp32 {float((e_lp - ref_lp).abs().mean()):.4f}"
    )
    print(
        f"grads max rel. norm diff: compiled vs eager {grad_error(c_g, e_g):.4f}; "
        f"vs fp32: eager {grad_error(e_g, ref_g):.4f}, compiled {grad_error(c_g, ref_g):.4f}",
        flush=True,
    )
    update_step(eager, batch)  # warm both once more
    update_step(compiled, batch)
    e, c = alternate(
        lambda: update_step(eager, batch), lambda: update_step(compiled, batch), rounds
    )
    report("update forward+backward, thread CPU s/step", e, c)
    if profile_ops:
        from torch.profiler import ProfilerActivity, profile

        for label, model in (("eager", eager), ("compiled", compiled)):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                update_step(model, batch)
            print(f"top ops of one {label} update step by self CPU time:")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=profile_ops))


def trial_decode(
    master: torch.nn.Module, rounds: int, pack_gqa: bool, filled: int = 128, columns: int = 256
) -> None:
    from transformers import StaticCache

    model = copy.deepcopy(master).to(torch.bfloat16).eval()
    config = model.config
    g = torch.Generator().manual_seed(1)
    prompt_BT = torch.randint(0, config.vocab_size, (ROWS, filled), generator=g)
    token_B1 = torch.randint(0, config.vocab_size, (ROWS, 1), generator=g)
    position = torch.tensor([filled])
    position_ids_B1 = torch.full((ROWS, 1), filled)

    def filled_cache(model: torch.nn.Module) -> StaticCache:
        cache = StaticCache(config=config, max_cache_len=columns)
        with torch.no_grad():
            model(
                input_ids=prompt_BT,
                past_key_values=cache,
                cache_position=torch.arange(filled),
                use_cache=True,
            )
        return cache

    def decode(forward, cache) -> torch.Tensor:
        with torch.no_grad():
            out = forward(
                input_ids=token_B1,
                position_ids=position_ids_B1,
                past_key_values=cache,
                cache_position=position,
                use_cache=True,
                logits_to_keep=1,
            )
        return out.logits[:, -1].float().log_softmax(-1)

    if pack_gqa:
        # transformers packs a one-token query's head groups for SDPA (no repeat_kv) only
        # when not compiling; let the compiled graph take that path too
        import transformers.integrations.sdpa_attention as sdpa_attention

        sdpa_attention.is_torchdynamo_compiling = lambda: False
    eager_cache, compiled_cache = filled_cache(model), filled_cache(model)
    compiled_forward = torch.compile(model.forward, dynamic=False)
    c_lp = first_call(
        "decode compile (first step)", lambda: decode(compiled_forward, compiled_cache)
    )
    e_lp = decode(model, eager_cache)
    ref_lp = decode(master.eval(), filled_cache(master.eval()))  # float32
    print(
        f"decode logprobs max |diff|: compiled vs eager {float((c_lp - e_lp).abs().max()):.4f};"
        f" vs fp32: eager {float((e_lp - ref_lp).abs().max()):.4f},"
        f" compiled {float((c_lp - ref_lp).abs().max()):.4f}"
    )
    for _ in range(3):
        decode(model, eager_cache)
        decode(compiled_forward, compiled_cache)
    e, c = alternate(
        lambda: [decode(model, eager_cache) for _ in range(10)],
        lambda: [decode(compiled_forward, compiled_cache) for _ in range(10)],
        rounds,
    )
    report("decode step (batch 8, 1 token, static cache), thread CPU ms/step", e, c, unit=100.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["update", "decode", "both"], default="both")
    parser.add_argument("--scope", choices=["layers", "decoder"], default="layers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=["smollm2", TINY], default="smollm2")
    parser.add_argument(
        "--pack-gqa", action="store_true", help="decode: compiled graph packs query groups too"
    )
    parser.add_argument(
        "--profile-ops", type=int, default=0, help="then print this many top ops of each"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)  # every figure is this thread's CPU time
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}", flush=True)
    master = load(args.model)
    if args.part in ("update", "both"):
        trial_update(master, args.scope, args.rounds, args.profile_ops)
    if args.part in ("decode", "both"):
        trial_decode(master, args.rounds, args.pack_gqa)


if __name__ == "__main__":
    main()
