"""Swarm clients: registration, heartbeats, leases, and what a client's departure means.

Owns: `ClientRegistry` — the clients of this gateway process. A client registers, then
heartbeats at least every `lease_s` seconds; one that is deleted or whose lease lapses is
gone: its id answers 404, and its open episodes are aborted (finished ones stay). Leases
are checked by `reap_forever`, a task of the app's lifespan. Heartbeats are kept in
memory; registrations and departures are persisted. Knows nothing about HTTP or torch.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field

import anyio
from sqlalchemy.engine import Engine

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.models import ClientRow
from gateway.errors import ClientNotFound
from gateway.recorder import EpisodeRecorder
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

    async def register(self, body: ClientRegister) -> ClientRegistered:
        now = time.time()
        client = Client(
            client_id="cl-" + secrets.token_hex(8),
            name=body.name,
            code_version=body.code_version,
            labels=dict(body.labels),
            registered_at=now,
            last_heartbeat_at=now,
            deadline=time.monotonic() + self.lease_s,
        )
        row = ClientRow(
            id=client.client_id,
            name=client.name,
            code_version=client.code_version,
            labels=client.labels,
            registered_at=now,
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
        client = self.active(client_id)
        client.leaving = True
        log.info("client %s gone: %s", client_id, reason)
        try:
            await anyio.to_thread.run_sync(self._depart, client_id, reason)
        finally:
            client.status = "gone"

    def _depart(self, client_id: str, reason: str) -> None:
        with session_scope(self._db) as session:
            crud.mark_client_gone(session, client_id=client_id, at=time.time(), reason=reason)
        for episode_id in self._recorder.open_episode_ids(client_id=client_id):
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
