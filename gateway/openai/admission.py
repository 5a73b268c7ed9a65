"""Per-key admission: one caller cannot take every engine slot from the others.

Owns: counting the generations (choices) each caller has in flight, and refusing a request
that would take its caller past `RequestLimits.max_inflight_per_key` with a 429
`RateLimited` carrying `retry_after`. The caller is its bearer key (an episode key, the
admin key, or any other token) or, for a keyless call, its client address. A request is
always admitted when its caller has nothing in flight, so a request that is alone larger
than the limit still runs (its size is bounded by `max_choices_per_request`).

Knows nothing about engines, OpenAI shapes or what a key may do (`gateway.http.auth`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from gateway.errors import RateLimited
from gateway.settings import RequestLimits


def caller_key(token: str | None, client_host: str | None) -> str:
    """Who to count a call against: a digest of its bearer key, else its address (the
    raw key is not kept in memory longer than the request that carries it)."""
    if token:
        return "key:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    return f"address:{client_host or 'unknown'}"


@dataclass
class Lease:
    """Generations admitted for one request; `release` (idempotent) gives them back."""

    _admission: Admission
    key: str
    choices: int
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._admission._give_back(self.key, self.choices)


class Admission:
    """In-flight generations per caller. Single event loop: no locks needed."""

    def __init__(self, limits: RequestLimits):
        self._limits = limits
        self._inflight: Counter[str] = Counter()

    def inflight(self, key: str) -> int:
        return self._inflight[key]

    def admit(self, key: str, choices: int) -> Lease:
        """A lease on `choices` generations for `key`, or 429 when that is too many now."""
        held = self._inflight[key]
        most = self._limits.max_inflight_per_key
        if held and held + choices > most:
            raise RateLimited(
                f"Too many generations in flight for this API key: {held} running, this "
                f"request asks for {choices}, at most {most} at once "
                "(max_inflight_per_key). Retry after the earlier requests finish.",
                retry_after=self._limits.busy_retry_after_s,
            )
        self._inflight[key] = held + choices
        return Lease(self, key, choices)

    def _give_back(self, key: str, choices: int) -> None:
        left = self._inflight[key] - choices
        if left > 0:
            self._inflight[key] = left
        else:
            del self._inflight[key]
