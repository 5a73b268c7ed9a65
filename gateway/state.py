"""Everything a request handler needs, built once by `make_app` and kept on `app.state`.

Owns: the wiring between settings, served models, the recorder and the services.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.chat_service import ChatService
from gateway.completions_service import CompletionsService
from gateway.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.settings import GatewaySettings


@dataclass
class GatewayState:
    settings: GatewaySettings
    models: ModelRegistry
    recorder: EpisodeRecorder
    chat: ChatService
    completions: CompletionsService

    @classmethod
    def build(
        cls, settings: GatewaySettings, models: ModelRegistry, recorder: EpisodeRecorder
    ) -> GatewayState:
        return cls(
            settings=settings,
            models=models,
            recorder=recorder,
            chat=ChatService(models, recorder),
            completions=CompletionsService(models, recorder),
        )
