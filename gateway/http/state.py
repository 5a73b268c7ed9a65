"""Everything a request handler needs, built once by `make_app` and kept on `app.state`.

Owns: the wiring between settings, served models, the recorder and the services, and
`check_state_dir`: a default SQLite database is never created fresh over a state dir whose
runs left checkpoints (the database was lost or emptied; a fresh one would orphan them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from experiments_db.errors import UnusableDatabase
from gateway.http.telemetry import Telemetry
from gateway.openai.admission import Admission
from gateway.openai.chat import ChatService
from gateway.openai.completions import CompletionsService
from gateway.openai.messages import MessagesService
from gateway.openai.responses import ResponsesService
from gateway.recording.drift import DriftTracker
from gateway.recording.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.runs.manager import RunManager
from gateway.runs.store import RunStore
from gateway.settings import GatewaySettings
from gateway.swarm_api.clients import ClientRegistry
from gateway.swarm_api.episodes import EpisodeService
from trainer.types import PolicyFactory


def check_state_dir(settings: GatewaySettings) -> None:
    """Raise `UnusableDatabase` when the gateway's own SQLite file is missing or empty but
    `runs/` holds checkpoints of an earlier database (a PostgreSQL URL or a `database_url`
    elsewhere is not judged)."""
    if settings.database_url:
        return
    path = settings.state_dir / "gateway.sqlite"
    if path.exists() and path.stat().st_size > 0:
        return
    runs = _runs_with_checkpoints(settings.runs_dir)
    if runs:
        shown = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        raise UnusableDatabase(
            f"{path} is {'empty (0 bytes)' if path.exists() else 'missing'} but "
            f"{settings.runs_dir} holds checkpoints of {len(runs)} run(s) ({shown}): a new "
            "database would orphan them; restore the database from a backup, or move "
            f"{settings.runs_dir} aside to start fresh"
        )


def _runs_with_checkpoints(runs_dir: Path) -> list[str]:
    if not runs_dir.is_dir():
        return []
    return sorted(
        run.name
        for run in runs_dir.iterdir()
        if (run / "checkpoints").is_dir() and any((run / "checkpoints").iterdir())
    )


@dataclass
class GatewayState:
    settings: GatewaySettings
    models: ModelRegistry
    recorder: EpisodeRecorder
    chat: ChatService
    completions: CompletionsService
    responses: ResponsesService  # `/v1/responses`, translated to `chat`
    messages: MessagesService  # `/v1/messages`, translated to `chat`
    clients: ClientRegistry
    runs: RunManager
    episodes: EpisodeService
    telemetry: Telemetry
    drift: DriftTracker
    admission: Admission

    @classmethod
    def build(
        cls,
        settings: GatewaySettings,
        models: ModelRegistry,
        recorder: EpisodeRecorder,
        policy_factory: PolicyFactory | None = None,
    ) -> GatewayState:
        store = RunStore(recorder.db)
        clients = ClientRegistry(
            db=recorder.db,
            recorder=recorder,
            lease_s=settings.client_lease_s,
            reap_interval_s=settings.client_reap_interval_s,
        )
        runs = RunManager(
            settings=settings, models=models, recorder=recorder, store=store, factory=policy_factory
        )
        episodes = EpisodeService(
            settings=settings, models=models, recorder=recorder, runs=runs, clients=clients
        )
        drift = DriftTracker(recorder, models)
        telemetry = Telemetry(runs, store, clients, drift, models)
        chat = ChatService(models, recorder, drift, settings.limits, telemetry)
        responses = ResponsesService(chat)
        recorder.on_close(responses.store.forget)
        return cls(
            settings=settings,
            models=models,
            recorder=recorder,
            chat=chat,
            responses=responses,
            messages=MessagesService(chat),
            completions=CompletionsService(models, recorder, settings.limits, telemetry),
            clients=clients,
            runs=runs,
            episodes=episodes,
            telemetry=telemetry,
            drift=drift,
            admission=Admission(settings.limits),
        )
