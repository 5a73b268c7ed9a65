"""A minimal in-process GRPO loop: the baseline `bench/learning.py` compares the stack to.

One file you can hold in your head (nanochat's `chat_rl.py` style): sample a group of
completions per prompt with `model.generate`, score them, normalise rewards within each
group, take one token-mean policy-gradient step with AdamW, repeat. No gateway, no HTTP,
no engine, no persistence — everything the stack adds is absent, so the wall-time ratio
measures what the stack costs (or saves).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


def _autocast(dtype: torch.dtype | None):
    return torch.autocast("cpu", dtype=dtype, enabled=dtype is not None and dtype != torch.float32)


@dataclass
class LoopResult:
    rewards: list[float]  # mean reward of each step's batch
    seconds: float


def run_inprocess_grpo(
    model: torch.nn.Module,
    tokenizer,
    prompts: Sequence[list[dict]],
    score: Callable[[int, str], float],
    *,
    steps: int,
    group_size: int,
    prompts_per_step: int,
    lr: float,
    max_tokens: int,
    temperature: float = 1.0,
    seed: int = 0,
    compute_dtype: torch.dtype | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> LoopResult:
    """`score(prompt_index, completion_text)` is the task's verifier."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id
    rewards_per_step: list[float] = []
    started = time.perf_counter()
    cursor = 0
    for step in range(steps):
        chosen = [(cursor + i) % len(prompts) for i in range(prompts_per_step)]
        cursor += prompts_per_step
        rows, owners = [], []
        for index in chosen:
            ids = tokenizer.apply_chat_template(
                prompts[index], add_generation_prompt=True, tokenize=True
            )
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            rows += [list(ids)] * group_size
            owners += [index] * group_size
        tokenizer.padding_side = "left"
        batch = tokenizer.pad({"input_ids": rows}, return_tensors="pt")
        model.eval()
        # autocast is entered per forward, never around the whole loop: autocast caches the
        # low-precision copies of the weights until its outermost context exits, so one
        # context around the loop would keep sampling and training the step-0 weights
        with torch.no_grad(), _autocast(compute_dtype):
            out = model.generate(
                **batch,
                do_sample=True,
                temperature=temperature,
                top_p=1.0,
                top_k=0,  # transformers defaults to 50; the stack samples the full distribution
                max_new_tokens=max_tokens,
                pad_token_id=pad,
            )
        completions = out[:, batch["input_ids"].shape[1] :].clone()
        texts = tokenizer.batch_decode(completions, skip_special_tokens=True)
        rewards = torch.tensor([score(o, t) for o, t in zip(owners, texts, strict=True)])
        grouped = rewards.view(prompts_per_step, group_size)
        advantages = (
            (grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-6)
        ).view(-1)
        # completion mask: tokens up to and including the first EOS
        is_pad = completions == pad
        after_eos = torch.cumsum(is_pad.int(), dim=1) - is_pad.int() > 0
        # like the stack's default (zero_variance_groups="drop"): groups whose rewards are
        # all equal carry no signal and leave the token-mean's denominator
        informative = (grouped.std(1) > 0).repeat_interleave(group_size)
        mask = (~after_eos).float() * informative[:, None].float()
        model.train()
        full = torch.cat([batch["input_ids"], completions], dim=1)
        attention = torch.cat([batch["attention_mask"], mask.long()], dim=1)
        # left padding: positions count real tokens only, as `generate` did
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        with _autocast(compute_dtype):
            logits = model(input_ids=full, attention_mask=attention, position_ids=positions).logits[
                :, batch["input_ids"].shape[1] - 1 : -1
            ]
        logprobs = torch.log_softmax(logits.float(), dim=-1).gather(2, completions[..., None])[
            ..., 0
        ]
        loss = -(advantages[:, None] * logprobs * mask).sum() / mask.sum().clamp(min=1)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        mean_reward = float(rewards.mean())
        rewards_per_step.append(mean_reward)
        if on_step:
            on_step(step, mean_reward)
    return LoopResult(rewards=rewards_per_step, seconds=time.perf_counter() - started)
