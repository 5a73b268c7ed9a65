"""`TorchPolicyTrainer.train_step` with merged layouts: on the same multi-turn groups from
the same initial weights, `merge="tree"` takes the step `merge="none"` takes (same loss,
same gradient norm, nearly the same new weights) with fewer tokens, reports the
`context/*` counts, and a batch whose every call is too long trains nothing."""

from __future__ import annotations

import asyncio

import pytest
import torch

from tests.unit.trainer.policy_helpers import (
    make_policy,
    prompt_ids,
    served_logprobs,
    train_settings,
)
from trainer.types import EpisodeSamples, Group, Sample

LR = 1e-3


@pytest.fixture(scope="module")
def policies():
    """Two policies built from the same seed; the tree one and the reference one."""
    tree, none = make_policy(), make_policy()
    yield tree, none
    tree.trainer.close()
    none.trainer.close()


def master_state(policy) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.trainer.master.model.named_parameters()}


def multi_turn_groups(policy) -> list[Group]:
    """Two groups sharing a prompt within each; per episode a chain of calls with tool
    results in between, and in some a branch: a second continuation of the first call."""
    tok = policy.served.tokenizer
    groups = []
    for g, task in enumerate(["add 2 and 3", "spell banana backwards"]):
        prompt = prompt_ids(policy, task)
        episodes = []
        for e, reward in enumerate([1.0, 0.0, 0.5]):
            first = [1000 + 7 * g + e, 2000 + e, 3000]
            tool = tok.encode(f"\ntool says {e}\n")
            second_prompt = prompt + first + tool
            second = [4000 + e, 5000, 6000 + g, 7000]
            calls = [(prompt, first), (second_prompt, second)]
            if e != 1:  # the episode branched: call 0 continued a second time
                calls.append((prompt + first + tok.encode("retry"), [8000 + e, 9000]))
            samples = [
                Sample(
                    episode_id=f"g{g}e{e}",
                    policy="p",
                    prompt_token_ids=p,
                    completion_token_ids=c,
                    behaviour_logprobs=served_logprobs(policy, p, c),
                    version=0,
                    call_index=i,
                    continues=0 if i else None,
                )
                for i, (p, c) in enumerate(calls)
            ]
            episodes.append(EpisodeSamples(f"g{g}e{e}", reward, samples))
        groups.append(Group(f"g{g}", episodes))
    return groups


@pytest.mark.slow
def test_a_tree_step_is_the_unmerged_step_with_fewer_tokens(policies):
    tree, none = policies
    before = master_state(tree)
    assert all(torch.equal(before[n], p) for n, p in master_state(none).items())
    groups = multi_turn_groups(none)
    calls = sum(len(e.samples) for g in groups for e in g.episodes)

    merged = asyncio.run(tree.trainer.train_step(groups, train_settings(lr=LR, merge="tree")))
    plain = asyncio.run(none.trainer.train_step(groups, train_settings(lr=LR, merge="none")))

    assert merged.version == plain.version == 1
    assert merged.samples_trained == plain.samples_trained == calls
    assert merged.samples_dropped == plain.samples_dropped == {}
    m, p = merged.metrics, plain.metrics
    assert m["tokens"] == p["tokens"] > 0  # the same trained tokens
    assert m["loss"] == pytest.approx(p["loss"], rel=1e-5, abs=1e-7)
    assert m["grad_norm"] == pytest.approx(p["grad_norm"], rel=1e-5)
    assert m["ratio/mean"] == pytest.approx(p["ratio/mean"], abs=1e-6)
    # the shared prompts and each episode's trunk are computed once
    assert m["tokens/padded"] < p["tokens/padded"] / 2
    # context counts: every call merged into a timeline per branch
    assert m["context/calls"] == p["context/calls"] == calls
    assert m["context/timelines"] == 10  # 6 episodes, 4 of them with a branch
    assert m["context/snaps"] == 4
    assert p["context/timelines"] == calls
    # nearly the same new weights: AdamW's first step moves each parameter by about lr
    # times the sign of its gradient, so only entries whose gradient is ~0 may differ
    after_tree, after_none = master_state(tree), master_state(none)
    diff = torch.cat([(after_tree[n] - after_none[n]).abs().flatten() for n in before])
    moved = torch.cat([(after_none[n] - before[n]).abs().flatten() for n in before])
    assert diff.max() <= LR * 5e-2, f"the two steps differ by up to {diff.max():.2e}"
    assert (diff > LR * 1e-3).sum() <= diff.numel() * 1e-4
    assert (moved > LR / 2).sum() > diff.numel() / 10  # and the step did move them
    # both engines serve their master's new weights: the same logprobs
    prompt, completion = groups[0].episodes[0].samples[1].prompt_token_ids, [4000, 5000]
    assert served_logprobs(tree, prompt, completion) == pytest.approx(
        served_logprobs(none, prompt, completion), abs=1e-4
    )


def test_a_batch_whose_every_call_is_too_long_trains_nothing(policies):
    tree, _ = policies
    groups = multi_turn_groups(tree)
    calls = sum(len(e.samples) for g in groups for e in g.episodes)
    version, before = tree.trainer.version, master_state(tree)
    shortest = min(
        len(s.prompt_token_ids) + len(s.completion_token_ids)
        for g in groups
        for e in g.episodes
        for s in e.samples
    )

    result = asyncio.run(
        tree.trainer.train_step(
            groups, train_settings(lr=LR, merge="tree", max_sequence_tokens=shortest - 1)
        )
    )

    assert result.version == tree.trainer.version == version
    assert result.samples_trained == 0
    assert result.samples_dropped == {"too_long": calls}
    assert result.metrics["context/too_long"] == calls
    assert result.metrics["context/timelines"] == 0
    assert "loss" not in result.metrics  # no update ran
    assert all(torch.equal(before[n], p) for n, p in master_state(tree).items())


@pytest.mark.slow
def test_a_window_that_fits_only_the_first_calls_trains_just_those(policies):
    tree, _ = policies
    groups = multi_turn_groups(tree)
    samples = [s for g in groups for e in g.episodes for s in e.samples]
    length = {id(s): len(s.prompt_token_ids) + len(s.completion_token_ids) for s in samples}
    window = max(length[id(e.samples[0])] for g in groups for e in g.episodes)
    fits = [s for s in samples if length[id(s)] <= window]
    assert [s.call_index for s in fits] == [0] * 6  # the data is what this test is about
    version = tree.trainer.version

    result = asyncio.run(
        tree.trainer.train_step(
            groups, train_settings(lr=LR, merge="tree", max_sequence_tokens=window)
        )
    )

    assert result.version == version + 1
    assert result.samples_trained == 6
    assert result.samples_dropped == {"too_long": len(samples) - 6}
    assert result.metrics["tokens"] == 6 * 3  # each first call's 3 completion tokens
    assert result.metrics["context/timelines"] == 6
