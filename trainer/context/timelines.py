"""Timeline merging: an episode's calls to one policy become as few training sequences as
possible.

Calls are taken in the order they were recorded. A call whose prompt tokens start with an
existing timeline's full tokens (prompt + every completion so far) *extends* it: the new
prompt tokens (tool results, user turns, other agents' messages, the chat template's role
header) are context with loss mask 0, the new completion tokens are trained with mask 1.
Otherwise the call opens a new timeline, so agents that share a policy but keep different
histories get separate timelines, and a chat template that rewrites history (e.g. strips
earlier reasoning) simply starts over. Calls of different policies never mix.

The mask rule ("what a careful trainer trains on"): mask 1 exactly on the tokens the
policy sampled — the completion, including the end-of-turn token it generated (it must
learn to stop). Everything the chat template or the environment wrote is mask 0: the
role header `<|im_start|>assistant\\n` that opens a turn, a forced tool-call prefix, the
end-of-turn the template appends after a completion cut by `max_tokens`, the newline
after it, and every following message.

Extending a timeline leaves it exactly as long as the extending call (its prompt already
holds the whole timeline), so a timeline is never longer than its longest call, and the
training window (`max_tokens`) is a limit on calls: a call longer than the window is not
trained at all (counted as `too_long`) — cutting it would train on logprobs of a context
the policy never saw, and cutting its mask silently is what we never do. Empty completions and
malformed records (logprob count ≠ token count, ids outside the vocabulary) are skipped
and counted, never raised. Every call left out is listed with its reason
(`MergeResult.left_out`), so a trainer can say what became of each.

Torch-free: the gateway imports it for episode traces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from trainer.types import Sample


@dataclass
class CallSpan:
    """Where one call sits in its timeline: its new prompt tokens are
    `[prompt_start, completion_start)`, its completion `[completion_start, completion_end)`."""

    call_index: int
    prompt_start: int
    completion_start: int
    completion_end: int
    version: int


@dataclass
class Timeline:
    """One training sequence: token ids with a loss mask, and per token the behaviour
    logprob and temperature of sampled tokens (0.0 / 1.0 on context tokens)."""

    episode_id: str
    policy: str
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    temperatures: list[float] = field(default_factory=list)
    calls: list[CallSpan] = field(default_factory=list)

    @property
    def version(self) -> int:
        """The oldest weights version among its calls (what staleness is judged by)."""
        return min(span.version for span in self.calls)

    def __len__(self) -> int:
        return len(self.token_ids)

    def extend(self, sample: Sample) -> None:
        start = len(self.token_ids)
        prompt_tail = sample.prompt_token_ids[start:]
        self._append(prompt_tail, 0, [0.0] * len(prompt_tail), [1.0] * len(prompt_tail))
        completion_start = len(self.token_ids)
        n = len(sample.completion_token_ids)
        mask = sample.loss_mask if sample.loss_mask is not None else [1] * n
        temperatures = [sample.temperature_at(j) for j in range(n)]
        self._append(sample.completion_token_ids, mask, sample.behaviour_logprobs, temperatures)
        self.calls.append(
            CallSpan(
                sample.call_index, start, completion_start, len(self.token_ids), sample.version
            )
        )

    def _append(self, ids, mask, logprobs, temperatures) -> None:
        self.token_ids.extend(ids)
        self.loss_mask.extend([mask] * len(ids) if isinstance(mask, int) else mask)
        self.logprobs.extend(logprobs)
        self.temperatures.extend(temperatures)

    def to_sample(self) -> Sample:
        """The timeline as one trainer `Sample`: the first call's prompt is the prompt,
        everything after it the (partly masked) completion."""
        cut = self.calls[0].completion_start
        temperatures = self.temperatures[cut:]
        uniform = len(set(temperatures)) <= 1
        return Sample(
            episode_id=self.episode_id,
            policy=self.policy,
            prompt_token_ids=self.token_ids[:cut],
            completion_token_ids=self.token_ids[cut:],
            behaviour_logprobs=self.logprobs[cut:],
            version=self.version,
            loss_mask=self.loss_mask[cut:],
            call_index=self.calls[0].call_index,
            temperature=temperatures[0] if temperatures else 1.0,
            completion_temperatures=None if uniform else temperatures,
            call_indices=[span.call_index for span in self.calls],
        )


@dataclass
class MergeResult:
    timelines: list[Timeline]
    counts: Counter[str]  # calls, timelines, snaps, too_long, empty, malformed
    left_out: list[tuple[Sample, str]] = field(default_factory=list)  # (call, why)


def call_defect(sample: Sample, vocab_size: int | None = None) -> str | None:
    """Why a recorded call cannot be trained, or None."""
    n = len(sample.completion_token_ids)
    if n == 0:
        return "empty"
    if not sample.prompt_token_ids or len(sample.behaviour_logprobs) != n:
        return "malformed"
    if sample.loss_mask is not None and len(sample.loss_mask) != n:
        return "malformed"
    if vocab_size is not None:
        ids = (*sample.prompt_token_ids, *sample.completion_token_ids)
        if min(ids) < 0 or max(ids) >= vocab_size:
            return "malformed"
    return None


def _extends(timeline: Timeline, prompt: Sequence[int]) -> bool:
    n = len(timeline.token_ids)
    return len(prompt) >= n and list(prompt[:n]) == timeline.token_ids


def merge_timelines(
    samples: Sequence[Sample], max_tokens: int | None = None, vocab_size: int | None = None
) -> MergeResult:
    """Merge one episode's per-call samples (any policies) into timelines, per policy."""
    counts: Counter[str] = Counter()
    left_out: list[tuple[Sample, str]] = []
    timelines: list[Timeline] = []
    open_by_policy: dict[str, list[Timeline]] = {}
    call_timeline: dict[int, Timeline] = {}  # call index -> the timeline it went into
    for sample in sorted(samples, key=lambda s: s.call_index):
        counts["calls"] += 1
        defect = call_defect(sample, vocab_size)
        length = len(sample.prompt_token_ids) + len(sample.completion_token_ids)
        if defect is None and max_tokens is not None and length > max_tokens:
            defect = "too_long"
        if defect is not None:
            counts[defect] += 1
            left_out.append((sample, defect))
            continue
        candidates = open_by_policy.setdefault(sample.policy, [])
        # the longest timeline this call extends (the latest one first: the usual case)
        target = None
        for timeline in reversed(candidates):
            if _extends(timeline, sample.prompt_token_ids) and (
                target is None or len(timeline) > len(target)
            ):
                target = timeline
        if target is None:
            continued = (
                call_timeline.get(sample.continues) if sample.continues is not None else None
            )
            if continued is not None and continued.policy == sample.policy:
                counts["snaps"] += 1
            target = Timeline(sample.episode_id, sample.policy)
            candidates.append(target)
            timelines.append(target)
        target.extend(sample)
        call_timeline[sample.call_index] = target
    counts["timelines"] = len(timelines)
    return MergeResult(timelines, counts, left_out)
