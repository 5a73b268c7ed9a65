"""Swarm clients: registration, heartbeats, leases, and what a client's departure means.

Owns: `ClientRegistry` — the clients of this gateway process. A client registers, then
heartbeats at least every `lease_s` seconds; one that is deleted or whose lease lapses is
gone: its id answers 404, and its open episodes are aborted (finished ones stay). A client
registering under the name of an active one supersedes it (the old one is gone at once,
answering 404 `client_superseded`). Leases
are checked by `reap_forever`, a task of the app's lifespan. Heartbeats are kept in
memory; registrations and departures are persisted. Knows nothing about HTTP or torch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, field

import anyio
from sqlalchemy.engine import Engine

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.models import ClientRow
from gateway.errors import ClientNotFound, ClientSuperseded, EpisodeNotOpen
from gateway.recording.recorder import EpisodeRecorder
from swarm.protocol import ClientPublic, ClientRegister, ClientRegistered

log = logging.getLogger(__name__)


@dataclass
class Client:
    client_id: str
    name: str
    code_version: str | None
    labels: dict[str, str]
    registered_at: float
    last_heartbeat_at: float
    status: str = "active"
    deadline: float = field(default=0.0)  # time.monotonic() after which the lease lapsed
    leaving: bool = False  # deleted; its open episodes are being aborted (then "gone")
    superseded_by: str | None = None  # the client that registered later under the same name
    run: str | None = None  # registered with a client key of this run: confined to it


class ClientRegistry:
    def __init__(
        self,
        *,
        db: Engine,
        recorder: EpisodeRecorder,
        lease_s: float,
        reap_interval_s: float,
    ):
        self._db = db
        self._recorder = recorder
        self.lease_s = lease_s
        self.reap_interval_s = reap_interval_s
        self._clients: dict[str, Client] = {}

    async def register(self, body: ClientRegister, *, run: str | None = None) -> ClientRegistered:
        """A new client (confined to `run` when registered with that run's client key).
        Active clients of the same name are superseded first: the name is the client's
        identity, so one registering under it again is a restarted process whose
        predecessor's open episodes must not wait for its lease to lapse. A confined client
        supersedes only clients of its own run (another run's client of that name is left
        alone: the name is scoped to the run for it)."""
        now = time.time()
        client = Client(
            client_id="cl-" + secrets.token_hex(8),
            name=body.name,
            code_version=body.code_version,
            labels=dict(body.labels),
            registered_at=now,
            last_heartbeat_at=now,
            deadline=time.monotonic() + self.lease_s,
            run=run,
        )
        row = ClientRow(
            id=client.client_id,
            name=client.name,
            code_version=client.code_version,
            labels=client.labels,
            registered_at=now,
        )
        same_name = [c for c in self._clients.values() if c.name == body.name]
        for old in [c for c in same_name if run is None or c.run == run]:
            if old.status == "active" and not old.leaving:
                old.superseded_by = client.client_id  # before any await: it answers so now
                await self._retire(
                    old, reason=f"superseded by client {client.client_id} under the same name"
                )
        await anyio.to_thread.run_sync(self._insert, row)
        self._clients[client.client_id] = client
        log.info("client %s registered (%s)", client.client_id, client.name)
        return ClientRegistered(client_id=client.client_id, lease_s=self.lease_s)

    def _insert(self, row: ClientRow) -> None:
        with session_scope(self._db) as session:
            crud.insert_client(session, client=row)

    def active(self, client_id: str) -> Client:
        client = self._clients.get(client_id)
        if client is not None and client.superseded_by is not None:
            raise ClientSuperseded(
                f"Client {client_id!r} was superseded: client {client.superseded_by!r} "
                f"registered under the same name {client.name!r}. Clients that run at the "
                "same time need distinct names.",
                param="client_id",
            )
        if client is None or client.status != "active" or client.leaving:
            raise ClientNotFound(
                f"No active client {client_id!r} (deleted, or its lease lapsed); register again.",
                param="client_id",
            )
        return client

    def heartbeat(self, client_id: str) -> ClientRegistered:
        client = self.active(client_id)
        client.last_heartbeat_at = time.time()
        client.deadline = time.monotonic() + self.lease_s
        return ClientRegistered(client_id=client_id, lease_s=self.lease_s)

    async def delete(self, client_id: str, *, reason: str = "client deleted") -> None:
        """The client is gone; its open episodes are aborted with `reason`. It answers 404
        at once, and is listed as gone once its episodes are aborted."""
        await self._retire(self.active(client_id), reason=reason)

    async def _retire(self, client: Client, *, reason: str) -> None:
        client.leaving = True
        log.info("client %s gone: %s", client.client_id, reason)
        try:
            await anyio.to_thread.run_sync(self._depart, client.client_id, reason)
        finally:
            client.status = "gone"

    def _depart(self, client_id: str, reason: str) -> None:
        with session_scope(self._db) as session:
            crud.mark_client_gone(session, client_id=client_id, at=time.time(), reason=reason)
        for episode_id in self._recorder.open_episode_ids(client_id=client_id):
            with contextlib.suppress(EpisodeNotOpen):  # its finish landed first: kept
                self._recorder.abort_episode(episode_id, reason=reason)

    async def list_public(self, *, include_gone: bool = False) -> list[ClientPublic]:
        open_counts = await anyio.to_thread.run_sync(self._recorder.open_episodes_by_client)
        return [
            ClientPublic(
                client_id=c.client_id,
                name=c.name,
                code_version=c.code_version,
                labels=c.labels,
                status=c.status,  # type: ignore[arg-type]
                registered_at=c.registered_at,
                last_heartbeat_at=c.last_heartbeat_at,
                episodes_open=open_counts.get(c.client_id, 0),
            )
            for c in self._clients.values()
            if include_gone or c.status == "active"
        ]

    @property
    def active_count(self) -> int:
        return sum(1 for c in self._clients.values() if c.status == "active")

    async def reap(self) -> list[str]:
        """Treat every client whose lease lapsed as deleted; their ids."""
        now = time.monotonic()
        lapsed = [
            c.client_id
            for c in self._clients.values()
            if c.status == "active" and not c.leaving and c.deadline < now
        ]
        for client_id in lapsed:
            await self.delete(client_id, reason="client lease lapsed")
        return lapsed

    async def reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.reap_interval_s)
            try:
                await self.reap()
            except Exception:
                log.exception("reaping lapsed clients failed; trying again")
