"""Timeline merging (`trainer.context.timelines`): an episode's calls become as few
training sequences as possible, the loss mask trains exactly the sampled tokens, policies
never mix, and bad records are counted and skipped, never raised."""

from __future__ import annotations

import pytest

from trainer.context.timelines import CallSpan, merge_timelines
from trainer.types import Sample

VOCAB = 49152


def call(
    index: int,
    prompt: list[int],
    completion: list[int],
    *,
    policy: str = "p",
    episode: str = "e",
    version: int = 0,
    temperature: float = 1.0,
    continues: int | None = None,
    logprobs: list[float] | None = None,
) -> Sample:
    """A recorded call whose behaviour logprobs say which call and token they belong to."""
    if logprobs is None:
        logprobs = [-(index + 1) - j / 100 for j in range(len(completion))]
    return Sample(
        episode_id=episode,
        policy=policy,
        prompt_token_ids=list(prompt),
        completion_token_ids=list(completion),
        behaviour_logprobs=logprobs,
        version=version,
        call_index=index,
        temperature=temperature,
        continues=continues,
    )


# -- the mask rule, on the real chat template ----------------------------------------------


@pytest.fixture(scope="module")
def chat(tiny_loaded):
    tok = tiny_loaded.tokenizer

    def render(messages):
        text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return tok.encode(text, add_special_tokens=False)

    def encode(text):
        return tok.encode(text, add_special_tokens=False)

    return tok, render, encode


def test_sampled_tokens_are_trained_and_what_the_template_or_tools_wrote_is_context(chat):
    tok, render, encode = chat
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    header = encode("<|im_start|>assistant\n")
    # call 0 stops by generating <|im_end|>; a tool answers
    m0 = [{"role": "user", "content": "What is 2+3? Use the calculator."}]
    p0 = render(m0)
    c0 = encode("calc(2+3)") + [im_end]
    # call 1 is cut by max_tokens: no <|im_end|>; the template appends one in the next prompt
    m1 = m0 + [{"role": "assistant", "content": "calc(2+3)"}, {"role": "tool", "content": "5"}]
    p1 = render(m1)
    c1 = encode("The answer is")
    m2 = m1 + [{"role": "assistant", "content": "The answer is"}, {"role": "user", "content": "?"}]
    p2 = render(m2)
    c2 = encode("5.") + [im_end]
    # the template re-renders history to the very ids that were sampled
    assert p1[: len(p0) + len(c0)] == p0 + c0 and p2[: len(p1) + len(c1)] == p1 + c1

    result = merge_timelines(
        [call(0, p0, c0, version=3), call(1, p1, c1, version=2), call(2, p2, c2, version=3)],
        vocab_size=VOCAB,
    )

    assert result.counts["calls"] == 3 and result.counts["timelines"] == 1
    (timeline,) = result.timelines
    assert timeline.token_ids == p2 + c2
    assert timeline.calls == [
        CallSpan(0, 0, len(p0), len(p0) + len(c0), 3),
        CallSpan(1, len(p0) + len(c0), len(p1), len(p1) + len(c1), 2),
        CallSpan(2, len(p1) + len(c1), len(p2), len(p2) + len(c2), 3),
    ]
    assert timeline.version == 2
    trained = [i for i, m in enumerate(timeline.loss_mask) if m]
    expected = [i for s in timeline.calls for i in range(s.completion_start, s.completion_end)]
    assert trained == expected
    # the <|im_end|> the policy generated is trained ...
    assert timeline.token_ids[len(p0) + len(c0) - 1] == im_end
    assert timeline.loss_mask[len(p0) + len(c0) - 1] == 1
    # ... the one the template appended after the length-cut completion is not
    cut_end = len(p1) + len(c1)
    assert timeline.token_ids[cut_end] == im_end and timeline.loss_mask[cut_end] == 0
    # neither the role headers opening turns, nor the tool result
    for span in timeline.calls[1:]:
        opening = range(span.completion_start - len(header), span.completion_start)
        assert [timeline.token_ids[i] for i in opening] == header
        assert not any(timeline.loss_mask[i] for i in opening)
    tool_result = timeline.token_ids.index(encode("5")[0], len(p0) + len(c0))
    assert tool_result < len(p1) and timeline.loss_mask[tool_result] == 0
    # behaviour logprobs on sampled tokens only; context tokens carry 0.0
    for span, c in zip(timeline.calls, (c0, c1, c2), strict=True):
        got = timeline.logprobs[span.completion_start : span.completion_end]
        assert got == [-(span.call_index + 1) - j / 100 for j in range(len(c))]
        assert set(timeline.logprobs[span.prompt_start : span.completion_start]) <= {0.0}


def test_to_sample_round_trips_tokens_mask_logprobs_and_temperatures():
    p0, c0 = [5, 6, 7], [8, 9]
    p1, c1 = p0 + c0 + [10, 11], [12]
    p2, c2 = p1 + c1 + [13], [14, 15, 16]
    samples = [
        call(4, p0, c0, temperature=0.7, version=1),
        call(5, p1, c1, temperature=1.0, version=1),
        call(6, p2, c2, temperature=0.7, version=0),
    ]
    samples[2].loss_mask = [1, 0, 1]  # a recorded mask inside a completion is kept
    (timeline,) = merge_timelines(samples).timelines

    s = timeline.to_sample()

    assert s.prompt_token_ids == p0
    assert s.prompt_token_ids + s.completion_token_ids == timeline.token_ids == p2 + c2
    assert s.loss_mask == [1, 1, 0, 0, 1, 0, 1, 0, 1]
    assert s.behaviour_logprobs == [-5.0, -5.01, 0.0, 0.0, -6.0, 0.0, -7.0, -7.01, -7.02]
    assert [s.temperature_at(j) for j in range(len(s.completion_token_ids))] == [
        0.7, 0.7, 1.0, 1.0, 1.0, 1.0, 0.7, 0.7, 0.7,
    ]  # fmt: skip
    assert s.call_index == 4 and s.call_indices == [4, 5, 6] and s.version == 0
    assert (s.episode_id, s.policy) == ("e", "p")


def test_every_trained_token_of_a_merged_sample_keeps_its_calls_temperature():
    (timeline,) = merge_timelines(
        [call(0, [1, 2], [3], temperature=0.5), call(1, [1, 2, 3, 4], [5], temperature=0.5)]
    ).timelines
    s = timeline.to_sample()
    assert s.loss_mask == [1, 0, 1]
    assert s.temperature_at(0) == s.temperature_at(2) == 0.5


# -- which calls share a timeline ---------------------------------------------------------


def test_two_agents_sharing_a_policy_with_different_histories_get_two_timelines():
    alice, bob = [1, 100, 2], [1, 200, 2]  # different system prompts, same policy
    a0, b0 = call(0, alice, [10, 11]), call(1, bob, [20])
    a1 = call(2, alice + [10, 11] + [3, 4], [12])
    b1 = call(3, bob + [20] + [3, 4], [21, 22])
    a2 = call(4, a1.prompt_token_ids + [12, 5], [13])

    result = merge_timelines([b1, a2, a0, a1, b0])  # recorded order is the call index

    assert result.counts["timelines"] == 2 and result.counts["snaps"] == 0
    first, second = result.timelines
    assert [s.call_index for s in first.calls] == [0, 2, 4]
    assert [s.call_index for s in second.calls] == [1, 3]
    assert first.token_ids == a2.prompt_token_ids + [13]
    assert second.token_ids == b1.prompt_token_ids + [21, 22]


def test_calls_of_two_policies_never_mix_even_when_one_sees_the_others_history():
    planner0 = call(0, [1, 2], [3, 4], policy="planner")
    # the coder's prompt is the planner's whole timeline plus more: it still opens its own
    coder0 = call(1, [1, 2, 3, 4, 5], [6], policy="coder")
    planner1 = call(2, [1, 2, 3, 4, 5, 6, 7], [8], policy="planner")
    coder1 = call(3, [1, 2, 3, 4, 5, 6, 9], [10], policy="coder")

    result = merge_timelines([planner0, coder0, planner1, coder1])

    assert result.counts["timelines"] == 2
    by_policy = {t.policy: t for t in result.timelines}
    assert [s.call_index for s in by_policy["planner"].calls] == [0, 2]
    assert [s.call_index for s in by_policy["coder"].calls] == [1, 3]
    assert by_policy["planner"].token_ids == [1, 2, 3, 4, 5, 6, 7, 8]
    # the coder's timeline starts at its own first call: the planner's tokens are context
    assert by_policy["coder"].token_ids == [1, 2, 3, 4, 5, 6, 9, 10]
    assert by_policy["coder"].loss_mask == [0, 0, 0, 0, 0, 1, 0, 1]
    assert by_policy["coder"].calls[0].completion_start == 5


def test_a_branch_off_the_trunk_opens_a_new_timeline_and_counts_a_snap():
    trunk = call(0, [1, 2, 3], [4, 5])
    follow = call(1, [1, 2, 3, 4, 5, 6], [7], continues=0)
    branch = call(2, [1, 2, 3, 4, 5, 8, 9], [10, 11], continues=0)  # continues call 0 again
    after_branch = call(3, [1, 2, 3, 4, 5, 8, 9, 10, 11, 12], [13], continues=2)

    result = merge_timelines([trunk, follow, branch, after_branch])

    assert result.counts["timelines"] == 2 and result.counts["snaps"] == 1
    main, side = result.timelines
    assert [s.call_index for s in main.calls] == [0, 1]
    assert main.token_ids == [1, 2, 3, 4, 5, 6, 7]
    assert [s.call_index for s in side.calls] == [2, 3]
    # the branch repeats the trunk as context; only its own completions train
    assert side.token_ids == [1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]
    assert side.calls[0] == CallSpan(2, 0, 7, 9, 0)
    assert side.loss_mask == [0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1]


def test_a_call_extends_the_longest_timeline_it_starts_with():
    short = call(0, [1], [2])
    long = call(1, [1, 2, 3], [4])  # extends the first
    other = call(2, [7], [8])
    both = call(3, [1, 2, 3, 4, 5], [6])
    result = merge_timelines([short, long, other, both])
    assert result.counts["timelines"] == 2
    assert [s.call_index for s in result.timelines[0].calls] == [0, 1, 3]


def test_a_branch_without_a_continues_link_is_a_new_timeline_but_not_a_snap():
    result = merge_timelines(
        [call(0, [1, 2], [3]), call(1, [1, 2, 3, 4], [5]), call(2, [1, 2], [6])]
    )
    assert result.counts["timelines"] == 2 and result.counts["snaps"] == 0


# -- bad input: counted, skipped, never raised ----------------------------------------------


def _mismatched_logprobs():
    return call(1, [1, 2, 3, 4, 9], [5, 6], logprobs=[-1.0])


def _id_beyond_vocab():
    return call(1, [1, 2, 3, 4, 9], [VOCAB])


def _negative_id():
    return call(1, [1, 2, 3, 4, -1], [5])


def _mask_of_wrong_length():
    bad = call(1, [1, 2, 3, 4, 9], [5, 6])
    bad.loss_mask = [1]
    return bad


def _empty_prompt():
    return call(1, [], [5, 6])


def _empty_completion():
    return call(1, [1, 2, 3, 4, 9], [])


@pytest.mark.parametrize(
    ("make_bad", "reason"),
    [
        (_mismatched_logprobs, "malformed"),
        (_id_beyond_vocab, "malformed"),
        (_negative_id, "malformed"),
        (_mask_of_wrong_length, "malformed"),
        (_empty_prompt, "malformed"),
        (_empty_completion, "empty"),
    ],
)
def test_a_bad_call_is_counted_and_skipped_and_the_others_still_merge(make_bad, reason):
    good0 = call(0, [1, 2, 3], [4])
    good2 = call(2, [1, 2, 3, 4, 9, 5, 6, 7], [8])

    result = merge_timelines([good0, make_bad(), good2], vocab_size=VOCAB)

    assert result.counts["calls"] == 3 and result.counts[reason] == 1
    assert sum(result.counts[r] for r in ("malformed", "empty", "too_long")) == 1
    (timeline,) = result.timelines
    assert [s.call_index for s in timeline.calls] == [0, 2]
    assert timeline.token_ids == [1, 2, 3, 4, 9, 5, 6, 7, 8]
    assert timeline.loss_mask == [0, 0, 0, 1, 0, 0, 0, 0, 1]


def test_a_call_longer_than_the_window_is_dropped_whole_never_cut():
    fits = call(0, [1, 2, 3, 4], [5, 6])  # exactly the window
    too_long = call(1, [1, 2, 3, 4, 5, 6, 7], [8])
    alone_too_long = call(2, [9] * 6, [9])

    result = merge_timelines([fits, too_long, alone_too_long], max_tokens=6)

    assert result.counts["too_long"] == 2 and result.counts["calls"] == 3
    (timeline,) = result.timelines
    assert timeline.token_ids == [1, 2, 3, 4, 5, 6]
    assert [s.call_index for s in timeline.calls] == [0]
    assert all(len(t) <= 6 for t in result.timelines)


def test_only_bad_calls_give_no_timelines():
    result = merge_timelines([_empty_completion(), _negative_id()], vocab_size=VOCAB)
    assert result.timelines == [] and result.counts["timelines"] == 0
    assert result.counts["empty"] == 1 and result.counts["malformed"] == 1


def test_an_episode_of_a_thousand_calls_in_a_chain_merges_into_one_timeline():
    samples, tokens = [], [1, 2]
    for i in range(1000):
        completion = [3 + i % 50]
        samples.append(
            call(i, tokens, completion, version=i // 100, continues=i - 1 if i else None)
        )
        tokens = tokens + completion + [60 + i % 7]  # e.g. a tool result of one token
    samples[500] = call(500, samples[500].prompt_token_ids, [], continues=499)  # one empty

    result = merge_timelines(samples, vocab_size=VOCAB)

    assert result.counts["calls"] == 1000 and result.counts["empty"] == 1
    assert result.counts["timelines"] == 1 and result.counts["snaps"] == 0
    (timeline,) = result.timelines
    assert len(timeline.calls) == 999 and timeline.version == 0
    assert timeline.token_ids == samples[-1].prompt_token_ids + samples[-1].completion_token_ids
    assert sum(timeline.loss_mask) == 999
