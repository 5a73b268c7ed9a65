"""What every client launcher offers the researcher: the `Launcher` protocol.

Owns: `Launcher` (start a client, then ask about it or stop it by its record), `ClientRecord`
(what a launcher needs to find a client again — the `client_process` row satisfies it),
`ProcessInfo` (what `start` hands back) and `was_started`. Knows nothing of studies, the
graph or the gateway; `local.LocalLauncher` and `ray.RayJobLauncher` implement it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# The exit status a client stopped by its launcher reads as (SIGTERM, whatever the backend).
STOPPED_STATUS = -15
# The exit status of a client that vanished without telling how it ended (killed, or its
# Ray job is unknown to the cluster).
VANISHED_STATUS = -9


@dataclass
class ProcessInfo:
    pid: int | None  # None for a client that is not a process on this machine (a Ray job)
    host: str  # the machine, or the Ray job server's address
    log_path: Path
    exit_path: Path
    started_at: float
    job_id: str | None = None  # the Ray job's submission id


class ClientRecord(Protocol):
    """A started client as the database keeps it (`experiments_db.studies.ClientProcessRow`)."""

    pid: int | None
    job_id: str | None
    log_path: str


class Launcher(Protocol):
    """Starts `swarm run …` clients and follows them until they end.

    `name` is what the `client_process` row records as its launcher. `ships_files` says the
    clients run on other machines: the command must name `swarm` (on their PATH) and the
    workflow relative to `files`, which travels with the client."""

    name: str
    ships_files: bool

    def start(
        self,
        command: list[str],
        *,
        log_path: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        name: str | None = None,
        files: Path | None = None,
    ) -> ProcessInfo:
        """Start `command`; its output goes to `log_path`. `name`, stable per launch, makes a
        second `start` of the same launch adopt the first where the backend can tell."""
        ...

    def client_alive(self, client: ClientRecord) -> bool: ...

    def client_exit_status(self, client: ClientRecord) -> int | None:
        """How the client ended (its exit code; `STOPPED_STATUS` when stopped,
        `VANISHED_STATUS` when nobody can tell); None while it runs."""
        ...

    def stop_client(self, client: ClientRecord, *, timeout_s: float = 15.0) -> None: ...


def was_started(client: ClientRecord) -> bool:
    """A recorded launch that got as far as starting (a crash can fall in between)."""
    return client.pid is not None or client.job_id is not None


def exit_path_of(log_path: Path | str) -> Path:
    """Where the exit status of the client logging to `log_path` is written."""
    return Path(log_path).with_suffix(".exit")
