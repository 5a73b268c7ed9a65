"""How many runs a study trains at once: `parallel_runs` "auto" resolved against its gateway.

Owns: `resolve_parallel_runs` — a number the user gave stays; "auto" takes the gateway's
own `suggested_concurrent_runs` from `GET /capacity` (embedded or remote gateway alike),
and 1 when the gateway has no such endpoint (one older than it) — with the reason in
words, for the study's events and report. Knows nothing of the graph: `StudyContext`
(researcher/context.py) resolves its settings with it when it is built, at every start and
resume, and researcher/study.py records the outcome as an event.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ValidationError

from researcher.settings import StudySettings


class GatewayCapacity(BaseModel):
    """The fields of the gateway's `GET /capacity` the researcher reads (others ignored)."""

    device: str
    cpus: int
    suggested_concurrent_runs: int


class ReadsCapacity(Protocol):
    url: str

    def capacity(self) -> dict | None: ...


class ParallelRuns(BaseModel):
    runs: int
    reason: str  # "the gateway suggests 2 on 2 CPUs", "set by --parallel-runs"

    @property
    def message(self) -> str:
        return f"parallel runs: {self.runs} ({self.reason})"


def resolve_parallel_runs(requested: int | str, gateway: ReadsCapacity) -> ParallelRuns:
    if requested != "auto":
        return ParallelRuns(runs=int(requested), reason="set by --parallel-runs")
    body = gateway.capacity()
    if body is None:
        return ParallelRuns(
            runs=1, reason=f"the gateway at {gateway.url} has no /capacity (an older gateway)"
        )
    try:
        capacity = GatewayCapacity.model_validate(body)
    except ValidationError:
        return ParallelRuns(runs=1, reason=f"the gateway's /capacity was unreadable: {body!r:.200}")
    on = f"{capacity.cpus} CPUs" if capacity.device == "cpu" else capacity.device
    return ParallelRuns(
        runs=max(1, capacity.suggested_concurrent_runs),
        reason=f"the gateway suggests {capacity.suggested_concurrent_runs} on {on}",
    )


def with_resolved_parallel_runs(
    settings: StudySettings, gateway: ReadsCapacity
) -> tuple[StudySettings, ParallelRuns]:
    """`settings` with `parallel_runs` a number (what launch and monitor read), and why."""
    resolved = resolve_parallel_runs(settings.parallel_runs, gateway)
    return settings.model_copy(update={"parallel_runs": resolved.runs}), resolved
