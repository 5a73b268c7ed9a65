"""Swarm API routes: clients (register, heartbeat, delete, list) and episodes (create,
finish, abort, read the token-level trace).

Thin: auth via `gateway.http.auth`, logic in `ClientRegistry` and `EpisodeService`. With an
admin key configured, client routes and episode creation need it or a client key of the
run (which reaches only the clients it registered and the episodes of its run: 403
otherwise); finish, abort and the trace take the admin key, that episode's own key, or a
client key of the episode's run. Listing clients stays admin-only: it is on `admin_router`
(`ADMIN_ONLY`), where every route needs the admin key.
"""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request, Response

from gateway.http.auth import require_admin_or_episode_key, require_run_access, swarm_caller
from gateway.http.routes.deps import ADMIN_ONLY, State, Token
from gateway.http.state import GatewayState
from gateway.swarm_api.traces import build_trace
from swarm.protocol import (
    ClientPublic,
    ClientRegister,
    ClientRegistered,
    EpisodeAbort,
    EpisodeCreate,
    EpisodeCreated,
    EpisodeFinish,
    EpisodeResult,
    EpisodeTrace,
)

router = APIRouter(prefix="/swarm", tags=["swarm"])  # callers checked per route (see above)
admin_router = APIRouter(prefix="/swarm", tags=["swarm"], dependencies=ADMIN_ONLY)


def _gateway_base_url(state: GatewayState, request: Request) -> str:
    return (state.settings.public_base_url or str(request.base_url)).rstrip("/")


# -- clients --------------------------------------------------------------------------------


@router.post("/clients", response_model=ClientRegistered)
async def register_client(body: ClientRegister, state: State, token: Token) -> ClientRegistered:
    caller = swarm_caller(token, state.settings)
    return await state.clients.register(body, run=caller.run)


@router.post("/clients/{client_id}/heartbeat", response_model=ClientRegistered)
async def heartbeat(client_id: str, state: State, token: Token) -> ClientRegistered:
    caller = swarm_caller(token, state.settings)
    require_run_access(caller, state.clients.active(client_id).run, what="the clients")
    return state.clients.heartbeat(client_id)


@router.delete("/clients/{client_id}", status_code=204)
async def delete_client(client_id: str, state: State, token: Token) -> Response:
    caller = swarm_caller(token, state.settings)
    require_run_access(caller, state.clients.active(client_id).run, what="the clients")
    await state.clients.delete(client_id)
    return Response(status_code=204)


@admin_router.get("/clients", response_model=list[ClientPublic])
async def list_clients(state: State, include_gone: bool = False) -> list[ClientPublic]:
    return await state.clients.list_public(include_gone=include_gone)


# -- episodes -------------------------------------------------------------------------------


@router.post("/episodes", response_model=EpisodeCreated)
async def create_episode(
    body: EpisodeCreate, request: Request, state: State, token: Token
) -> EpisodeCreated:
    caller = swarm_caller(token, state.settings)
    if caller.confined:
        require_run_access(caller, body.run, what="the episodes")
        if body.client_id is not None:
            require_run_access(caller, state.clients.active(body.client_id).run, what="clients")
    return await state.episodes.create(body, _gateway_base_url(state, request) + "/v1")


@router.post("/episodes/{episode_id}/finish", response_model=EpisodeResult)
async def finish_episode(
    episode_id: str, body: EpisodeFinish, state: State, token: Token
) -> EpisodeResult:
    await require_admin_or_episode_key(token, episode_id, state.recorder, state.settings)
    return await state.episodes.finish(episode_id, body)


@router.post("/episodes/{episode_id}/abort", response_model=EpisodeResult)
async def abort_episode(
    episode_id: str, body: EpisodeAbort, state: State, token: Token
) -> EpisodeResult:
    await require_admin_or_episode_key(token, episode_id, state.recorder, state.settings)
    return await state.episodes.abort(episode_id, body.reason)


@router.get("/episodes/{episode_id}", response_model=EpisodeTrace)
async def get_episode_trace(episode_id: str, state: State, token: Token) -> EpisodeTrace:
    await require_admin_or_episode_key(token, episode_id, state.recorder, state.settings)
    return await anyio.to_thread.run_sync(
        build_trace, state.recorder, state.models, state.runs, episode_id
    )
