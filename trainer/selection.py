"""Which samples of a step train, and what became of each one: the trainer's drop rules.

`select_samples` takes scored episodes (`trainer.advantages.compute_advantages`) and
drops what must not train, each sample with its reason: every sample of a zero-variance
episode (`zero_variance`), then per sample a defect (`malformed`: no prompt, no
completion, a logprob or loss-mask count that is not the completion's length;
`no_trained_tokens`: an all-zero loss mask) or an age of more than `max_staleness`
versions (`stale`). What survives is a `TrainItem` (sample + its episode's advantage).
Merging into timelines (`trainer.policy.batching.merge_calls`) may still leave calls out
(`too_long`, `malformed`, `empty`); `Selection.outcomes` then gives the step's outcome
of every sample it was handed, which is what `StepResult` reports.

This is the one place these rules live: the gateway records what the trainer says, and
test fakes call these functions rather than copy them. Torch-free, plain records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from trainer.advantages import EpisodeAdvantages
from trainer.types import Sample, SampleOutcome


@dataclass
class TrainItem:
    sample: Sample
    advantage: float

    @property
    def length(self) -> int:
        return len(self.sample.prompt_token_ids) + len(self.sample.completion_token_ids)


@dataclass
class Selection:
    items: list[TrainItem] = field(default_factory=list)
    dropped: list[SampleOutcome] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)  # one per episode that trains

    def outcomes(self, left_out: Sequence[tuple[Sample, str]] = ()) -> list[SampleOutcome]:
        """Every sample's outcome: the dropped ones, then the items — trained unless
        merging left them out (`left_out`: those very `Sample` objects, with the reason)."""
        # by object, not by key: nothing makes a step's samples' keys distinct (unit tests
        # build many with call index 0), and each sample handed over is one outcome
        reasons = {id(sample): reason for sample, reason in left_out}
        return self.dropped + [
            SampleOutcome(item.sample.key, reasons.get(id(item.sample))) for item in self.items
        ]


def sample_defect(sample: Sample) -> str | None:
    """Why a sample cannot be trained, or None."""
    n = len(sample.completion_token_ids)
    if not sample.prompt_token_ids or n == 0 or len(sample.behaviour_logprobs) != n:
        return "malformed"
    if sample.loss_mask is not None:
        if len(sample.loss_mask) != n:
            return "malformed"
        if not any(sample.loss_mask):
            return "no_trained_tokens"
    return None


def select_samples(
    scored: EpisodeAdvantages, current_version: int, max_staleness: int
) -> Selection:
    out = Selection()
    for episode in scored.zero_variance:
        out.dropped.extend(SampleOutcome(s.key, "zero_variance") for s in episode.samples)
    for entry in scored.scored:
        trained = 0
        for sample in entry.episode.samples:
            reason = sample_defect(sample)
            if reason is None and current_version - sample.version > max_staleness:
                reason = "stale"
            if reason is not None:
                out.dropped.append(SampleOutcome(sample.key, reason))
                continue
            out.items.append(TrainItem(sample, entry.advantage))
            trained += 1
        if trained:
            out.advantages.append(entry.advantage)
    return out
