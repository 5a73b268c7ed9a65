"""Merged training is unmerged training, only faster: on random batches of branching
multi-call episodes (GRPO-like groups sharing a prompt, random loss masks, lengths and
temperatures) the layouts `none`, `timeline` and `tree` give the same logprob for every
trained token, the same PPO loss and the same gradient of every parameter — under both
the `sdpa` and the `eager` attention implementations (a boolean tree mask is silently
wrong under `eager`), and within bf16 noise under bf16 autocast.

Tokens are matched by identity, not by sorted value: each trained token's behaviour
logprob is minus a unique id, which every layout carries through to `behaviour_logprobs_N`.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer.losses import ppo_clip_loss
from trainer.policy.batching import TrainItem, build_micro_batches, merge_items
from trainer.policy.logprobs import completion_logprobs, tree_attention_mask
from trainer.types import Sample

LAYOUTS = ("none", "timeline", "tree")
# a small alphabet makes sequences collide: shared prefixes beyond the prompt, duplicates
ALPHABET = [3, 17, 64, 100, 127, 200, 255, 301, 420, 511]
SMALL_VOCAB = 512


@dataclass
class Call:
    group: int
    episode: int
    call: int
    prompt: list[int]
    completion: list[int]
    mask: list[int] | None
    temperature: float


@dataclass
class Batch:
    calls: list[Call]
    advantages: dict[tuple[int, int], float]  # (group, episode) -> advantage
    micro_batch_tokens: int


def tokens(draw, lo: int, hi: int) -> list[int]:
    return [
        ALPHABET[draw(st.integers(0, len(ALPHABET) - 1))] for _ in range(draw(st.integers(lo, hi)))
    ]


@st.composite
def batches(draw) -> Batch:
    calls: list[Call] = []
    advantages = {}
    for g in range(draw(st.integers(1, 3))):
        prompt = tokens(draw, 2, 8)  # the group's shared prompt
        for e in range(draw(st.integers(2, 3))):
            advantages[(g, e)] = draw(st.sampled_from([-1, 1])) * draw(st.floats(0.1, 2.0))
            histories: list[list[int]] = []  # each call's prompt + completion
            for c in range(draw(st.integers(1, 4))):
                how = (
                    draw(st.sampled_from(["extend", "extend", "branch", "fresh"])) if c else "fresh"
                )
                if how == "extend":
                    base = histories[-1]  # the usual next turn
                elif how == "branch":
                    base = draw(st.sampled_from(histories))  # continue an earlier call again
                else:
                    base = prompt  # a new conversation, or a template that rewrote history
                call_prompt = base + tokens(draw, 0 if c else 1, 3)
                completion = tokens(draw, 1, 5)
                mask = None
                if draw(st.booleans()) and not (g == e == c == 0):
                    mask = [draw(st.integers(0, 1)) for _ in completion]
                temperature = draw(st.sampled_from([1.0, 1.0, 0.7]))
                calls.append(Call(g, e, c, call_prompt, completion, mask, temperature))
                histories.append(call_prompt + completion)
    return Batch(calls, advantages, draw(st.sampled_from([24, 48, 4096])))


def items_of(batch: Batch, behaviour) -> list[TrainItem]:
    """One item per call; `behaviour(call, j)` is completion token j's behaviour logprob."""
    return [
        TrainItem(
            Sample(
                episode_id=f"g{c.group}e{c.episode}",
                policy="p",
                prompt_token_ids=c.prompt,
                completion_token_ids=c.completion,
                behaviour_logprobs=[behaviour(c, j) for j in range(len(c.completion))],
                version=0,
                loss_mask=c.mask,
                call_index=c.call,
                temperature=c.temperature,
            ),
            batch.advantages[(c.group, c.episode)],
        )
        for c in batch.calls
    ]


def trained_keys(batch: Batch) -> dict[int, tuple[int, int, int, int]]:
    """uid -> (group, episode, call, position) of every trained token."""
    keys, uid = {}, 1
    for c in batch.calls:
        for j in range(len(c.completion)):
            if c.mask is None or c.mask[j]:
                keys[uid] = (c.group, c.episode, c.call, j)
            uid += 1
    return keys


def uid_behaviour(batch: Batch):
    first = {}
    uid = 1
    for c in batch.calls:
        first[(c.group, c.episode, c.call)] = uid
        uid += len(c.completion)
    return lambda c, j: -float(first[(c.group, c.episode, c.call)] + j)


def micro_batches(batch: Batch, items: list[TrainItem], layout: str):
    merged, counts = merge_items(items, layout)
    assert counts["calls"] == len(batch.calls)
    return build_micro_batches(merged, batch.micro_batch_tokens, pad_id=0, layout=layout)


def logprobs_by_token(model, batch: Batch, layout: str) -> dict[tuple, float]:
    keys = trained_keys(batch)
    out = {}
    with torch.no_grad():
        for micro in micro_batches(batch, items_of(batch, uid_behaviour(batch)), layout):
            uids = (-micro.behaviour_logprobs_N).round().long().tolist()
            for uid, value in zip(uids, completion_logprobs(model, micro).tolist(), strict=True):
                assert keys[uid] not in out, "a token trained twice"
                out[keys[uid]] = value
    assert sorted(out) == sorted(keys.values()), "a trained token went missing"
    return out


def reference_logprobs(model, batch: Batch) -> dict[tuple, float]:
    """One plain forward per call, no batching code involved."""
    out = {}
    with torch.no_grad():
        for c in batch.calls:
            logits = model(torch.tensor([c.prompt + c.completion])).logits[0].float()
            logits = logits[len(c.prompt) - 1 : -1] / c.temperature
            lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(c.completion)[:, None])[:, 0]
            for j, value in enumerate(lp.tolist()):
                if c.mask is None or c.mask[j]:
                    out[(c.group, c.episode, c.call, j)] = value
    return out


def loss_and_grads(model, batch: Batch, items: list[TrainItem], layout: str):
    micros = micro_batches(batch, items, layout)
    total = sum(m.trained_tokens for m in micros)
    model.zero_grad(set_to_none=True)
    loss = 0.0
    for micro in micros:
        out = ppo_clip_loss(
            completion_logprobs(model, micro),
            micro.behaviour_logprobs_N,
            micro.advantages_N,
            clip_eps=0.2,
            normalizer=total,
        )
        out.loss.backward()
        loss += float(out.loss.detach())
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return loss, grads


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """These shapes are tiny: an OpenMP team only adds a barrier per op, and on a busy
    2-core machine each barrier can wait a whole scheduler slice (one example measured
    6 s with two threads, 0.03 s with one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def with_attention(model, implementation: str):
    model.set_attn_implementation(implementation)
    assert model.config._attn_implementation == implementation
    return model.eval()  # no dropout; gradients are still taken


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def small_model(request, tiny_loaded):
    """The tiny model's architecture with a 512-token vocabulary: the same attention,
    rotary and GQA code, ten times faster per example than 49k-wide logits."""
    config = copy.deepcopy(tiny_loaded.model.config)
    config.vocab_size = SMALL_VOCAB
    torch.manual_seed(0)
    return with_attention(type(tiny_loaded.model)(config), request.param)


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def tiny_model(request, tiny_loaded):
    return with_attention(copy.deepcopy(tiny_loaded.model), request.param)


def check_layouts_agree(model, batch: Batch, noise_seed: int) -> None:
    reference = reference_logprobs(model, batch)
    for layout in LAYOUTS:
        got = logprobs_by_token(model, batch, layout)
        worst = max(abs(got[k] - reference[k]) for k in reference)
        assert worst < 1e-5, f"{layout}: logprob off by {worst:.2e}"

    # behaviour logprobs near the current ones, so ratios move and some clip
    rng = random.Random(noise_seed)
    noise = {k: rng.uniform(-0.3, 0.3) for k in reference}
    keys_of = trained_keys(batch)
    uid = uid_behaviour(batch)

    def behaviour(c: Call, j: int) -> float:
        key = keys_of.get(-int(uid(c, j)))
        return reference[key] + noise[key] if key else 0.0

    items = items_of(batch, behaviour)
    loss_none, grads_none = loss_and_grads(model, batch, items, "none")
    assert any(g.abs().max() > 0 for g in grads_none.values())
    for layout in ("timeline", "tree"):
        loss, grads = loss_and_grads(model, batch, items, layout)
        assert loss == pytest.approx(loss_none, abs=1e-6, rel=1e-5), layout
        assert grads.keys() == grads_none.keys()
        for name, g in grads.items():
            ref = grads_none[name]
            scale = float(ref.abs().max())
            worst = float((g - ref).abs().max())
            assert worst <= 1e-5 * max(scale, 1e-2), (
                f"{layout}: grad of {name} off by {worst:.2e} (largest entry {scale:.2e})"
            )


@pytest.mark.slow
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=batches(), noise_seed=st.integers(0, 2**16))
def test_every_layout_gives_the_same_logprobs_loss_and_gradients(small_model, batch, noise_seed):
    check_layouts_agree(small_model, batch, noise_seed)


def fixed_batch(seed: int) -> Batch:
    """A hand-rolled branching batch for the bf16 check (no hypothesis needed)."""
    rng = random.Random(seed)
    pick = lambda n: [rng.choice(ALPHABET) for _ in range(n)]  # noqa: E731
    calls, advantages = [], {}
    for g in range(2):
        prompt = pick(6)
        for e in range(3):
            advantages[(g, e)] = rng.uniform(-1, 1)
            trunk = prompt + pick(2)
            c0 = pick(4)
            c1_prompt = trunk + c0 + pick(3)
            c1 = pick(5)
            branch_prompt = trunk + c0 + pick(2)  # a second continuation of call 0
            calls += [
                Call(g, e, 0, trunk, c0, None, 1.0),
                Call(g, e, 1, c1_prompt, c1, [1, 0, 1, 1, 1], 0.7),
                Call(g, e, 2, branch_prompt, pick(3), None, 1.0),
            ]
    return Batch(calls, advantages, 64)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 8])
def test_the_tiny_model_gives_the_same_logprobs_loss_and_gradients_in_every_layout(
    tiny_model, seed
):
    check_layouts_agree(tiny_model, fixed_batch(seed), noise_seed=seed)


def test_the_dense_tree_mask_gives_the_reference_logprobs_under_every_attention(tiny_model):
    """`tree_attention_mask` (the reference form, for anyone passing a mask to a model
    themselves) is right under `eager` too — a boolean mask would not be."""
    batch = fixed_batch(9)
    keys = trained_keys(batch)
    reference = reference_logprobs(tiny_model, batch)
    micros = micro_batches(batch, items_of(batch, uid_behaviour(batch)), "tree")
    trees = [m for m in micros if m.subtree_end_BT is not None]
    assert trees, "the batch must share prefixes"
    checked = 0
    with torch.no_grad():
        for micro in trees:
            hidden = tiny_model.get_decoder()(
                input_ids=micro.input_ids_BT,
                position_ids=micro.position_ids_BT,
                attention_mask=tree_attention_mask(micro.subtree_end_BT, torch.float32),
                use_cache=False,
            ).last_hidden_state
            logits = tiny_model.lm_head(hidden[micro.rows_N, micro.positions_N])
            lp = torch.log_softmax(logits / micro.temperatures_N[:, None], -1)
            lp = lp.gather(1, micro.targets_N[:, None])[:, 0]
            uids = (-micro.behaviour_logprobs_N).round().long().tolist()
            for uid, value in zip(uids, lp.tolist(), strict=True):
                assert abs(value - reference[keys[uid]]) < 1e-5, keys[uid]
                checked += 1
    assert checked > 10


def test_tree_and_none_agree_within_bf16_noise_under_autocast(tiny_loaded):
    model = copy.deepcopy(tiny_loaded.model).eval()
    batch = fixed_batch(7)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        none = logprobs_by_token(model, batch, "none")
        tree = logprobs_by_token(model, batch, "tree")
    reference = reference_logprobs(model, batch)  # float32
    bf16_error = max(abs(none[k] - reference[k]) for k in reference)
    worst = max(abs(tree[k] - none[k]) for k in none)
    assert bf16_error > 0  # autocast was on
    assert worst < 0.05, f"tree vs none under bf16: {worst:.3f} (bf16 error {bf16_error:.3f})"
