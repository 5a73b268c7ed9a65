"""Token-drift tracking for the chat calls of open episodes.

Owns: `DriftTracker` — for each open episode, what drift repair needs of its earlier chat
calls (`trainer.context.drift.PriorCall`: messages, rendered prompt, prompt and completion
ids, the reply the agent got), kept in memory while the episode is open (filled as calls
are recorded, dropped when it finishes or aborts) and loaded from the database when this
process holds none (a restarted gateway); and the running totals of repaired and
unrepaired prompts per served model (read by `/metrics`). `drift_counts` counts an
episode's calls by drift status. Plain inference never touches any of it.

A cached list is always complete: a call is remembered before its answer goes out, so an
agent can only send back replies the cache holds; a load that raced with a recording is
used once and not cached. Knows nothing about HTTP or torch.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

from gateway.recording.recorder import CallRecord, EpisodeRecorder
from gateway.registry import ModelRegistry
from trainer.chat_format import parse_reply
from trainer.context.drift import PriorCall
from trainer.types import ParsedAssistant

DRIFT_STATUSES = ("fresh", "exact", "repaired", "unrepaired")


def prior_call(call: CallRecord, reply: ParsedAssistant) -> PriorCall | None:
    """What a later call needs of `call` to continue it (None: not a chat call drift
    repair can continue, e.g. one recorded before prompts were kept as text)."""
    if call.kind != "chat" or call.messages is None or call.prompt_text is None:
        return None
    return PriorCall(
        index=call.index,
        model=call.model,
        messages=call.messages,
        prompt_text=call.prompt_text,
        prompt_token_ids=call.prompt_token_ids,
        completion_token_ids=call.completion_token_ids,
        reply=reply,
    )


def drift_counts(calls: Sequence[CallRecord]) -> dict[str, int]:
    """Chat requests by drift status (the choices of one request share one prompt, so a
    request counts once)."""
    counts = Counter(
        call.drift for call in calls if call.drift is not None and call.choice_index == 0
    )
    return {status: counts.get(status, 0) for status in DRIFT_STATUSES}


class DriftTracker:
    def __init__(self, recorder: EpisodeRecorder, models: ModelRegistry):
        self._recorder = recorder
        self._models = models
        self._lock = threading.Lock()
        self._priors: dict[str, list[PriorCall]] = {}  # episode id -> its chat calls so far
        self._remembered: Counter[str] = Counter()  # episode id -> remember() calls seen
        self._totals: Counter[tuple[str, str]] = Counter()  # (model, status) -> requests
        recorder.on_close(self.forget)

    def cached(self, episode_id: str) -> list[PriorCall] | None:
        """The episode's earlier chat calls if known without the database (no lock, no
        I/O: safe on the event loop); None means `load`."""
        priors = self._priors.get(episode_id)
        if priors is not None:
            return list(priors)
        if self._recorder.known_call_count(episode_id) == 0:
            return []  # opened by this process, nothing recorded yet
        return None

    def load(self, episode_id: str) -> list[PriorCall]:
        """The episode's earlier chat calls from the database (in a worker thread).

        Replies are parsed again from the recorded text; a call made with tools but
        `tool_choice: "none"` is parsed as if tools were offered (the choice is not
        recorded), which can only turn a repair into "unrepaired", never a wrong splice."""
        with self._lock:
            seen = self._remembered[episode_id]
        priors = []
        for call in self._recorder.get_calls(episode_id):
            served = self._models.find(call.model)
            if served is None:
                continue  # no longer served, so no call can continue it
            text = (call.completion_prefix or "") + call.completion_text
            reply = parse_reply(
                served.tokenizer,
                text,
                tools_offered=bool(call.tools),
                finish_reason=call.finish_reason,
            )
            prior = prior_call(call, reply)
            if prior is not None:
                priors.append(prior)
        with self._lock:
            cached = self._priors.get(episode_id)
            if cached is not None:
                return list(cached)
            if (
                self._remembered[episode_id] == seen
                and self._recorder.known_call_count(episode_id) is not None
            ):
                self._priors[episode_id] = list(priors)
        return priors

    def remember(
        self, episode_id: str, calls: Sequence[CallRecord], replies: Sequence[ParsedAssistant]
    ) -> None:
        """Add just-recorded chat calls (indices assigned) with the replies they gave."""
        new = [prior_call(call, reply) for call, reply in zip(calls, replies, strict=True)]
        with self._lock:
            if self._recorder.known_call_count(episode_id) is None:  # closed meanwhile
                self._priors.pop(episode_id, None)
                self._remembered.pop(episode_id, None)
                return
            first = self._remembered[episode_id] == 0
            self._remembered[episode_id] += 1
            priors = self._priors.get(episode_id)
            if priors is None:
                if not (first and min(call.index for call in calls) == 0):
                    return  # not cached: the next call loads the whole history
                priors = self._priors[episode_id] = []
            known = {prior.index for prior in priors}
            priors.extend(p for p in new if p is not None and p.index not in known)
            priors.sort(key=lambda prior: prior.index)

    def forget(self, episode_id: str) -> None:
        """The episode is closed: drop what was kept for it."""
        with self._lock:
            self._priors.pop(episode_id, None)
            self._remembered.pop(episode_id, None)

    def count(self, model: str, status: str) -> None:
        """Tally one episode-bound chat request's drift status."""
        with self._lock:
            self._totals[(model, status)] += 1

    def totals(self) -> dict[tuple[str, str], int]:
        """(model, status) -> chat requests so far, in this process."""
        with self._lock:
            return dict(self._totals)
