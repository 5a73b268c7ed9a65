"""Everything a request handler needs, built once by `make_app` and kept on `app.state`.

Owns: the wiring between settings, served models, the recorder and the services.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.admission import Admission
from gateway.chat_service import ChatService
from gateway.clients import ClientRegistry
from gateway.completions_service import CompletionsService
from gateway.drift import DriftTracker
from gateway.episodes import EpisodeService
from gateway.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.run_store import RunStore
from gateway.runs import RunManager
from gateway.settings import GatewaySettings
from gateway.telemetry import Telemetry
from trainer.types import PolicyFactory


@dataclass
class GatewayState:
    settings: GatewaySettings
    models: ModelRegistry
    recorder: EpisodeRecorder
    chat: ChatService
    completions: CompletionsService
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
        return cls(
            settings=settings,
            models=models,
            recorder=recorder,
            chat=ChatService(models, recorder, drift, settings.limits),
            completions=CompletionsService(models, recorder, settings.limits),
            clients=clients,
            runs=runs,
            episodes=episodes,
            telemetry=Telemetry(runs, store, clients, drift),
            drift=drift,
            admission=Admission(settings.limits),
        )
