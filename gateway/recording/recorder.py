"""The episode recorder: episodes, their secret keys, and every call recorded into them.

Owns: creating episodes (id + API key), resolving a key to its episode, and persisting
each recorded completion through `experiments_db` before the HTTP response goes out.
Methods are synchronous and thread-safe; the HTTP layer calls them off the event loop
(`anyio.to_thread.run_sync`). Knows nothing about HTTP, OpenAI wire types, or torch.

Episode lifecycle: an episode is created "open", then finished (with its reward, its
samples written in the same transaction) or aborted, once. Calls are recorded only into
open episodes. Which calls become samples, and what a reward means, is decided by the
caller (`gateway.swarm_api.episodes`); the recorder only makes each transition atomic, lets the
end writers (`on_end_in_transaction`: the run side's counters) write in that transaction,
and tells its close listeners (`on_close`: the drift tracker) when an episode stops taking
calls. It knows nothing of runs' counters.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from experiments_db import crud
from experiments_db.db import make_engine, session_scope
from experiments_db.migrate import GATEWAY, upgrade_engine
from experiments_db.models import CallRow, EpisodeRow, SampleRow
from gateway.errors import EpisodeNotFound, EpisodeNotOpen
from gateway.settings import GatewaySettings
from swarm.protocol import CallKind, CallTrace, EpisodeTrace
from trainer.types import Completion

EPISODE_KEY_PREFIX = "sk-ep-"


def hash_api_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()


@dataclass(frozen=True)
class EpisodeRecord:
    episode_id: str
    run: str
    task_id: str
    task_family: str | None
    group_id: str | None
    client_id: str | None
    status: str
    created_at: float
    api_key: str | None = None  # only known right after creation; the database keeps a hash
    reward: float | dict[str, float] | None = None  # as the client sent it
    metrics: dict[str, float] | None = None
    finished_at: float | None = None
    abort_reason: str | None = None
    step: int | None = None  # the training step that consumed it

    @classmethod
    def from_row(cls, row: EpisodeRow, api_key: str | None = None) -> EpisodeRecord:
        return cls(
            episode_id=row.id,
            run=row.run,
            task_id=row.task_id,
            task_family=row.task_family,
            group_id=row.group_id,
            client_id=row.client_id,
            status=row.status,
            created_at=row.created_at,
            api_key=api_key,
            reward=row.reward,
            metrics=row.metrics,
            finished_at=row.finished_at,
            abort_reason=row.abort_reason,
            step=row.step,
        )


@dataclass
class CallRecord:
    """One completion as the trainer needs it; `index` is assigned when it is recorded."""

    request_id: str
    kind: CallKind
    model: str
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    logprobs: list[float]
    versions: list[int]
    version: int
    token_texts: list[str]
    completion_text: str
    finish_reason: str
    started_at: float
    first_token_at: float
    finished_at: float
    choice_index: int = 0
    top_logprobs: list[list[tuple[int, float]]] | None = None
    prompt_text: str | None = None  # completions: as sent; chat: the rendered chat
    messages: list[dict[str, Any]] | None = None  # as the client sent them (chat)
    tools: list[dict[str, Any]] | None = None
    temperature: float = 1.0  # what `logprobs` were computed at (see trainer.types.Completion)
    drift: str | None = None  # chat: fresh | exact | repaired | unrepaired (trainer.context.drift)
    continues: int | None = None  # chat: the earlier call of this episode it continues
    completion_prefix: str | None = None  # chat: the forced tool-call opening, in the prompt
    # constrained decoding (see trainer.types.Completion); None without a grammar
    constrained: list[bool] | None = None
    unconstrained_logprobs: list[float] | None = None
    index: int = field(default=-1)

    @classmethod
    def from_completion(
        cls,
        completion: Completion,
        *,
        request_id: str,
        choice_index: int,
        kind: CallKind,
        model: str,
        finish_reason: str,
        prompt_text: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
        drift: str | None = None,
        continues: int | None = None,
        completion_prefix: str | None = None,
    ) -> CallRecord:
        top = completion.top_logprobs
        return cls(
            request_id=request_id,
            choice_index=choice_index,
            kind=kind,
            model=model,
            prompt_token_ids=list(completion.prompt_token_ids),
            completion_token_ids=list(completion.token_ids),
            logprobs=list(completion.logprobs),
            top_logprobs=[[(t.token_id, t.logprob) for t in alts] for alts in top]
            if any(top)
            else None,
            versions=list(completion.versions),
            version=completion.version,
            token_texts=list(completion.token_texts),
            completion_text=completion.text,
            finish_reason=finish_reason,
            temperature=completion.temperature,
            started_at=completion.started_at,
            first_token_at=completion.first_token_at,
            finished_at=completion.finished_at,
            prompt_text=prompt_text,
            messages=messages,
            tools=tools,
            drift=drift,
            continues=continues,
            completion_prefix=completion_prefix,
            constrained=completion.constrained,
            unconstrained_logprobs=completion.unconstrained_logprobs,
        )

    @property
    def behaviour_logprobs(self) -> list[float]:
        """What training compares its recomputed logprobs with: without the grammar mask
        where the engine recorded them (docs/training.md, "Constrained decoding")."""
        if self.unconstrained_logprobs is not None:
            return list(self.unconstrained_logprobs)
        return list(self.logprobs)

    def to_row(self, episode_id: str) -> CallRow:
        return CallRow(episode_id=episode_id, **asdict(self))

    @classmethod
    def from_row(cls, row: CallRow) -> CallRecord:
        values = row.model_dump(exclude={"id", "episode_id"})
        values["temperature"] = values["temperature"] or 1.0
        if values["top_logprobs"] is not None:
            values["top_logprobs"] = [
                [(int(tid), float(lp)) for tid, lp in alts] for alts in values["top_logprobs"]
            ]
        return cls(**values)

    def to_trace(self) -> CallTrace:
        return CallTrace(
            **{name: value for name, value in asdict(self).items() if name in _TRACE_FIELDS}
        )


_TRACE_FIELDS = frozenset(CallTrace.model_fields)


SampleBuilder = Callable[[EpisodeRecord, list[CallRecord]], list[SampleRow]]
# (the open transaction, the episode as it ends — "finished" or "aborted" —, its samples)
EndWriter = Callable[[Session, EpisodeRecord, Sequence[SampleRow]], None]


def episode_not_open(episode_id: str, status: str, abort_reason: str | None) -> EpisodeNotOpen:
    """The 409 for using an episode that is finished or aborted."""
    if status == "aborted":
        why = f" ({abort_reason})" if abort_reason else ""
        return EpisodeNotOpen(f"Episode {episode_id!r} was aborted{why}.", param="episode_id")
    return EpisodeNotOpen(f"Episode {episode_id!r} is finished already.", param="episode_id")


def _not_open(row: EpisodeRow) -> EpisodeNotOpen:
    return episode_not_open(row.id, row.status, row.abort_reason)


def episode_trace(episode: EpisodeRecord, calls: Sequence[CallRecord]) -> EpisodeTrace:
    """The episode and its calls (the gateway adds timelines: `gateway.swarm_api.traces`)."""
    return EpisodeTrace(
        episode_id=episode.episode_id,
        status=episode.status,
        run=episode.run,
        task_id=episode.task_id,
        task_family=episode.task_family,
        group_id=episode.group_id,
        client_id=episode.client_id,
        calls=[call.to_trace() for call in calls],
    )


class EpisodeRecorder:
    """Creates episodes and records calls into them, persisted in `experiments_db`."""

    def __init__(self, db: Engine):
        self._db = db
        self._lock = threading.Lock()
        self._episode_by_key_hash: dict[str, str] = {}
        self._next_call_index: dict[str, int] = {}  # open episodes this process recorded into
        self._close_listeners: list[Callable[[str], None]] = []
        self._end_writers: list[EndWriter] = []

    @classmethod
    def open(cls, database_url: str) -> EpisodeRecorder:
        db = make_engine(database_url)
        upgrade_engine(db, GATEWAY)  # Alembic: creates or upgrades the gateway tables
        return cls(db)

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> EpisodeRecorder:
        return cls.open(settings.resolved_database_url)

    @property
    def db(self) -> Engine:
        """The database engine, shared with the other stores of the gateway."""
        return self._db

    def on_close(self, listener: Callable[[str], None]) -> None:
        """Call `listener(episode_id)` after an episode is finished or aborted here."""
        self._close_listeners.append(listener)

    def on_end_in_transaction(self, writer: EndWriter) -> None:
        """Call `writer(session, episode, samples)` inside the transaction that finishes or
        aborts an episode: what it writes commits with the episode's end, or not at all. A
        writer given twice runs once."""
        if writer not in self._end_writers:
            self._end_writers.append(writer)

    def _ended(self, session: Session, row: EpisodeRow, samples: Sequence[SampleRow]) -> None:
        episode = EpisodeRecord.from_row(row)
        for writer in self._end_writers:
            writer(session, episode, samples)

    def known_call_count(self, episode_id: str) -> int | None:
        """How many calls the open episode holds, if this process knows without the
        database (it created the episode or recorded into it); None otherwise, or once it
        is closed."""
        return self._next_call_index.get(episode_id)

    def _closed(self, episode_id: str) -> None:
        for listener in self._close_listeners:
            listener(episode_id)

    def create_episode(
        self,
        *,
        run: str,
        task_id: str,
        task_family: str | None = None,
        group_id: str | None = None,
        client_id: str | None = None,
    ) -> EpisodeRecord:
        api_key = EPISODE_KEY_PREFIX + secrets.token_urlsafe(24)
        row = EpisodeRow(
            id="ep-" + secrets.token_hex(8),
            api_key_sha256=hash_api_key(api_key),
            run=run,
            task_id=task_id,
            task_family=task_family,
            group_id=group_id,
            client_id=client_id,
            status="open",
            created_at=time.time(),
        )
        with session_scope(self._db) as session:
            crud.insert_episode(session, episode=row)
        with self._lock:
            self._episode_by_key_hash[row.api_key_sha256] = row.id
            self._next_call_index[row.id] = 0
        return EpisodeRecord.from_row(row, api_key=api_key)

    def resolve_key(self, api_key: str) -> str | None:
        """The id of the episode that `api_key` belongs to, or None."""
        key_hash = hash_api_key(api_key)
        episode_id = self._episode_by_key_hash.get(key_hash)
        if episode_id is not None:
            return episode_id
        with session_scope(self._db) as session:
            row = crud.find_episode_by_key_hash(session, api_key_sha256=key_hash)
        if row is None:
            return None
        with self._lock:
            self._episode_by_key_hash[key_hash] = row.id
        return row.id

    def get_episode(self, episode_id: str) -> EpisodeRecord:
        with session_scope(self._db) as session:
            row = crud.get_episode(session, episode_id=episode_id)
        if row is None:
            raise EpisodeNotFound(f"No episode with id {episode_id!r}.", param="episode_id")
        return EpisodeRecord.from_row(row)

    def ensure_open(self, episode_id: str) -> None:
        """Raise `EpisodeNotOpen` (409) unless the episode takes calls, so a call into a
        finished or aborted episode is refused before anything is generated."""
        with session_scope(self._db) as session:
            row = crud.get_episode(session, episode_id=episode_id)
        if row is None:
            raise EpisodeNotFound(f"No episode with id {episode_id!r}.", param="episode_id")
        if row.status != "open":
            raise _not_open(row)

    def has_episode(self, episode_id: str) -> bool:
        if episode_id in self._next_call_index:
            return True
        with session_scope(self._db) as session:
            return crud.get_episode(session, episode_id=episode_id) is not None

    def record_call(self, episode_id: str, call: CallRecord) -> CallRecord:
        return self.record_calls(episode_id, [call])[0]

    def record_calls(self, episode_id: str, calls: Sequence[CallRecord]) -> list[CallRecord]:
        """Persist `calls` (one transaction) and give each its index within the episode."""
        with self._lock:
            with session_scope(self._db) as session:
                next_index = self._next_call_index.get(episode_id)
                if next_index is None:
                    row = crud.get_episode(session, episode_id=episode_id)
                    if row is None:
                        raise EpisodeNotFound(f"No episode with id {episode_id!r}.")
                    if row.status != "open":
                        raise _not_open(row)
                    next_index = crud.count_calls(session, episode_id=episode_id)
                for offset, call in enumerate(calls):
                    call.index = next_index + offset
                crud.insert_calls(session, calls=[call.to_row(episode_id) for call in calls])
            self._next_call_index[episode_id] = next_index + len(calls)
        return list(calls)

    def get_calls(self, episode_id: str) -> list[CallRecord]:
        with session_scope(self._db) as session:
            rows = crud.list_calls(session, episode_id=episode_id)
        return [CallRecord.from_row(row) for row in rows]

    def get_trace(self, episode_id: str) -> EpisodeTrace:
        return episode_trace(self.get_episode(episode_id), self.get_calls(episode_id))

    def finish_episode(
        self,
        episode_id: str,
        *,
        reward: float | dict[str, float],
        metrics: dict[str, float],
        make_samples: SampleBuilder,
    ) -> tuple[EpisodeRecord, list[SampleRow]]:
        """Close an open episode with its reward and persist the samples `make_samples` builds
        from its calls (and what the end writers write) in one transaction."""
        with self._lock:
            with session_scope(self._db) as session:
                row = self._open_row(session, episode_id)
                calls = [
                    CallRecord.from_row(r) for r in crud.list_calls(session, episode_id=episode_id)
                ]
                samples = make_samples(EpisodeRecord.from_row(row), calls)
                row.status, row.reward, row.metrics = "finished", reward, metrics
                row.finished_at = time.time()
                session.add(row)
                crud.insert_samples(session, samples=samples)
                self._ended(session, row, samples)
            self._next_call_index.pop(episode_id, None)
        self._closed(episode_id)
        return EpisodeRecord.from_row(row), samples

    def abort_episode(self, episode_id: str, *, reason: str) -> tuple[EpisodeRecord, bool]:
        """Abort an open episode; aborting an aborted one changes nothing (the bool says
        whether this call aborted it); a finished one cannot be aborted."""
        with self._lock:
            with session_scope(self._db) as session:
                row = crud.get_episode(session, episode_id=episode_id)
                if row is None:
                    raise EpisodeNotFound(f"No episode with id {episode_id!r}.", param="episode_id")
                if row.status == "aborted":
                    return EpisodeRecord.from_row(row), False
                if row.status != "open":
                    raise _not_open(row)
                row.status, row.abort_reason, row.finished_at = "aborted", reason, time.time()
                session.add(row)
                self._ended(session, row, [])
            self._next_call_index.pop(episode_id, None)
        self._closed(episode_id)
        return EpisodeRecord.from_row(row), True

    def open_episode_ids(
        self, *, run: str | None = None, client_id: str | None = None
    ) -> list[str]:
        with session_scope(self._db) as session:
            return crud.list_open_episode_ids(session, run=run, client_id=client_id)

    def list_episodes(
        self,
        *,
        run: str,
        status: str | None = None,
        group_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[EpisodeRecord]:
        """A page of the run's episodes (all, or of one status and/or group), newest first."""
        with session_scope(self._db) as session:
            rows = crud.list_episodes(
                session, run=run, status=status, group_id=group_id, limit=limit, offset=offset
            )
            return [EpisodeRecord.from_row(row) for row in rows]

    def open_episodes_by_client(self) -> dict[str, int]:
        with session_scope(self._db) as session:
            return crud.count_open_episodes_by_client(session)

    def _open_row(self, session, episode_id: str) -> EpisodeRow:
        row = crud.get_episode(session, episode_id=episode_id)
        if row is None:
            raise EpisodeNotFound(f"No episode with id {episode_id!r}.", param="episode_id")
        if row.status != "open":
            raise _not_open(row)
        return row
