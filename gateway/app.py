"""`make_app`: the gateway's FastAPI app, built from torch-free interfaces.

Owns: the composition of routes, middleware and error handlers around the served models,
the recorder and the settings it is given. Must not import torch or the trainer's torch
side: the composition root (`gateway/__main__.py`) builds the engines and passes them in,
and tests pass fakes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fastapi import FastAPI

from gateway.body_limit import LimitRequestBody
from gateway.errors import install_error_handlers
from gateway.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.routes import health, openai, swarm
from gateway.settings import GatewaySettings
from gateway.state import GatewayState
from trainer.types import ServedModel


def make_app(
    models: Mapping[str, ServedModel] | Iterable[ServedModel],
    recorder: EpisodeRecorder,
    settings: GatewaySettings,
) -> FastAPI:
    app = FastAPI(
        title="swarmrl gateway",
        summary="OpenAI-compatible inference and episode recording for RL training.",
    )
    app.state.gateway = GatewayState.build(settings, ModelRegistry(models), recorder)
    app.add_middleware(LimitRequestBody, max_body_bytes=settings.max_body_bytes)
    install_error_handlers(app)  # after: its catch-all middleware wraps the body limit
    app.include_router(openai.router, prefix="/v1")
    app.include_router(
        openai.router,
        prefix="/episodes/{episode_id}/v1",
        generate_unique_id_function=lambda route: f"episode_{route.name}",
    )
    app.include_router(swarm.router)
    app.include_router(health.router)
    return app
