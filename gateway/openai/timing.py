"""How long each answered request took, for `/metrics`.

Owns `RequestClock` (started when a service begins preparing a request; `first_token()`
marks the first token any of its `n` choices got from the engine), `ServedRequest` (what
one answered request reports: once per request, however many choices it fanned out to)
and the `ServingObserver` interface the gateway's telemetry implements. Knows nothing
about Prometheus or HTTP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ServedRequest:
    """One request answered in full (every choice finished, the answer or `[DONE]` sent)."""

    model: str  # the served name: a base model or `<run>/<policy>`
    latency_s: float  # from preparing the request to its whole answer
    time_to_first_token_s: float | None  # None: no choice generated a token
    completion_tokens: int  # all choices together, as `usage.completion_tokens`


class ServingObserver(Protocol):
    def observe(self, request: ServedRequest) -> None: ...


class NoObserver:
    """For services built without telemetry (tests, embedded use)."""

    def observe(self, request: ServedRequest) -> None:
        pass


@dataclass
class RequestClock:
    """Monotonic times of one request: its start and its first generated token."""

    started: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None

    def first_token(self) -> None:
        """Mark the first token; later calls (more tokens, other choices) change nothing."""
        if self.first_token_at is None:
            self.first_token_at = time.monotonic()

    def served(self, model: str, completion_tokens: int) -> ServedRequest:
        now = time.monotonic()
        first = self.first_token_at
        return ServedRequest(
            model=model,
            latency_s=now - self.started,
            time_to_first_token_s=None if first is None else first - self.started,
            completion_tokens=completion_tokens,
        )
