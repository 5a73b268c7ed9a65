"""`GET /swarm/episodes/{id}`: an episode's token-level trace.

Owns: assembling `EpisodeTrace` — the recorded calls (chat prompts spelled token by token,
special tokens included: `prompt_token_texts`, one piece per id from the served model's
`ChatTokenizer.token_text`, joined into `prompt_text`), the calls merged into timelines by
the trainer's own merge (`trainer.context.merge_timelines`), keyed by policy name for calls
to the episode's run's policies and by model name for any other model, each spelled token
by token too (`token_texts`), and the episode's token-drift counts (per status, plus
`snaps`: calls that continue an earlier call yet open a new timeline). Knows nothing about
HTTP or torch.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gateway.recording.drift import drift_counts
from gateway.recording.recorder import CallRecord, EpisodeRecorder, episode_trace
from gateway.registry import ModelRegistry
from gateway.runs.manager import RunManager
from gateway.runs.samples import policy_of_call
from swarm.protocol import EpisodeTrace, TimelineCallTrace, TimelineTrace
from trainer.context.timelines import MergeResult, merge_timelines
from trainer.types import ChatTokenizer, Sample


def timeline_key(call: CallRecord, run: str, policies: Collection[str] | None) -> str:
    """The policy a call trains (`<run>/<policy>` → `<policy>`), else its model's name;
    with `policies` None (the run is not loaded here) any `<run>/` name is a policy."""
    if policies is not None:
        return policy_of_call(call, run, policies) or call.model
    prefix = run + "/"
    return call.model[len(prefix) :] if call.model.startswith(prefix) else call.model


def merged_calls(
    episode_id: str, run: str, calls: Sequence[CallRecord], policies: Collection[str] | None
) -> MergeResult:
    samples = [
        Sample(
            episode_id=episode_id,
            policy=timeline_key(call, run, policies),
            prompt_token_ids=call.prompt_token_ids,
            completion_token_ids=call.completion_token_ids,
            behaviour_logprobs=call.behaviour_logprobs,
            version=call.version,
            call_index=call.index,
            temperature=call.temperature,
            continues=call.continues,
        )
        for call in calls
    ]
    return merge_timelines(samples)


def token_texts(tokenizer: ChatTokenizer | None, token_ids: Sequence[int]) -> list[str] | None:
    """One text piece per id (None when the model is no longer served)."""
    return None if tokenizer is None else [tokenizer.token_text(i) for i in token_ids]


def timeline_traces(
    merged: MergeResult, tokenizers: dict[int, ChatTokenizer | None] | None = None
) -> dict[str, list[TimelineTrace]]:
    """`tokenizers`: call index → its model's tokenizer (a timeline is spelled by its
    first call's)."""
    tokenizers = tokenizers or {}
    traces: dict[str, list[TimelineTrace]] = {}
    for timeline in merged.timelines:
        first = timeline.calls[0].call_index if timeline.calls else None
        traces.setdefault(timeline.policy, []).append(
            TimelineTrace(
                token_ids=timeline.token_ids,
                loss_mask=timeline.loss_mask,
                logprobs=timeline.logprobs,
                calls=[
                    TimelineCallTrace(
                        call_index=span.call_index,
                        prompt_start=span.prompt_start,
                        completion_start=span.completion_start,
                        completion_end=span.completion_end,
                        version=span.version,
                    )
                    for span in timeline.calls
                ],
                token_texts=token_texts(tokenizers.get(first), timeline.token_ids),
            )
        )
    return traces


def build_trace(
    recorder: EpisodeRecorder, models: ModelRegistry, runs: RunManager, episode_id: str
) -> EpisodeTrace:
    """The whole trace (database reads: call it in a worker thread)."""
    episode = recorder.get_episode(episode_id)
    calls = recorder.get_calls(episode_id)
    trace = episode_trace(episode, calls)
    tokenizers: dict[int, ChatTokenizer | None] = {}
    for call in trace.calls:
        served = models.find(call.model)
        tokenizers[call.index] = served.tokenizer if served is not None else None
        call.prompt_token_texts = token_texts(tokenizers[call.index], call.prompt_token_ids)
        if call.prompt_token_texts is not None and (
            call.kind == "chat" or call.prompt_text is None
        ):
            call.prompt_text = "".join(call.prompt_token_texts)
    run = runs.find(episode.run)
    policies = list(run.plans) if run is not None else None
    merged = merged_calls(episode.episode_id, episode.run, calls, policies)
    trace.timelines = timeline_traces(merged, tokenizers)
    trace.drift = drift_counts(calls) | {"snaps": merged.counts["snaps"]}
    return trace
