"""`make_app`: the gateway's FastAPI app, built from torch-free interfaces.

Owns: the composition of routes, middleware and error handlers around the served models,
the recorder, the settings and the policy factory it is given, and the app's lifespan
(at startup, restoring the runs an earlier process left in the database; the client-lease
reaper; on shutdown, the runs' training loops and policies, then the database engine). Must not
import torch or the trainer's torch side: the composition root (`gateway/__main__.py`)
builds the engines and the factory and passes them in, and tests pass fakes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping

from fastapi import Depends, FastAPI

from experiments_db.db import dispose
from gateway.errors import install_error_handlers
from gateway.http.body_limit import LimitRequestBody
from gateway.http.routes import health, messages, metrics, openai, responses, runs, swarm
from gateway.http.state import GatewayState
from gateway.http.telemetry import CountRequests
from gateway.http.web_guards import gateway_guards
from gateway.recording.recorder import EpisodeRecorder
from gateway.registry import ModelRegistry
from gateway.settings import GatewaySettings
from trainer.types import PolicyFactory, ServedModel


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state: GatewayState = app.state.gateway
    await state.runs.restore()  # the runs of an earlier process on this database
    reaper = asyncio.create_task(state.clients.reap_forever(), name="client-reaper")
    try:
        yield
    finally:
        reaper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reaper
        await state.runs.close()
        dispose(state.recorder.db)  # a SQLite log is checkpointed into the file


def make_app(
    models: Mapping[str, ServedModel] | Iterable[ServedModel],
    recorder: EpisodeRecorder,
    settings: GatewaySettings,
    policy_factory: PolicyFactory | None = None,
) -> FastAPI:
    """The gateway app. Without a `policy_factory` it serves and records but cannot train
    (`POST /runs` answers 501)."""
    app = FastAPI(
        title="swarmrl gateway",
        summary="OpenAI-compatible inference, episode recording and RL training runs.",
        lifespan=_lifespan,
    )
    state = GatewayState.build(settings, ModelRegistry(models), recorder, policy_factory)
    app.state.gateway = state
    app.add_middleware(LimitRequestBody, max_body_bytes=settings.max_body_bytes)
    install_error_handlers(app)  # after: its catch-all middleware wraps the body limit
    app.add_middleware(gateway_guards, settings=settings)  # Host, Origin, JSON-only
    app.add_middleware(CountRequests, telemetry=state.telemetry)  # outermost: counts 500s too
    for router in (openai.router, responses.router, messages.router):
        app.include_router(router, prefix="/v1")
        app.include_router(
            router,
            prefix="/episodes/{episode_id}/v1",
            dependencies=[Depends(openai.episode_path)],  # declares episode_id in the schema
            generate_unique_id_function=lambda route: f"episode_{route.name}",
        )
    app.include_router(swarm.router)
    app.include_router(swarm.admin_router)
    app.include_router(runs.router)
    app.include_router(runs.run_readers)
    app.include_router(health.router)
    app.include_router(metrics.router)
    return app
