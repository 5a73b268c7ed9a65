"""Swarm API routes: create an episode, read its token-level trace.

Thin: auth via `gateway.auth`, persistence via the recorder (off the event loop).
"""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request

from gateway.auth import require_admin, require_admin_or_episode_key
from gateway.routes.deps import State, Token
from gateway.state import GatewayState
from swarm.protocol import EpisodeCreate, EpisodeCreated, EpisodeTrace

router = APIRouter(prefix="/swarm", tags=["swarm"])


def _gateway_base_url(state: GatewayState, request: Request) -> str:
    return (state.settings.public_base_url or str(request.base_url)).rstrip("/")


@router.post("/episodes", response_model=EpisodeCreated)
async def create_episode(
    body: EpisodeCreate, request: Request, state: State, token: Token
) -> EpisodeCreated:
    require_admin(token, state.settings)
    episode = await anyio.to_thread.run_sync(
        lambda: state.recorder.create_episode(
            run=body.run,
            task_id=body.task_id,
            task_family=body.task_family,
            group_id=body.group_id,
            client_id=body.client_id,
        )
    )
    assert episode.api_key is not None
    return EpisodeCreated(
        episode_id=episode.episode_id,
        api_key=episode.api_key,
        base_url=_gateway_base_url(state, request) + "/v1",
        policy_versions=state.models.policy_versions(),
    )


@router.get("/episodes/{episode_id}", response_model=EpisodeTrace)
async def get_episode_trace(episode_id: str, state: State, token: Token) -> EpisodeTrace:
    await require_admin_or_episode_key(token, episode_id, state.recorder, state.settings)
    return await anyio.to_thread.run_sync(_trace_with_prompt_text, state, episode_id)


def _trace_with_prompt_text(state: GatewayState, episode_id: str) -> EpisodeTrace:
    """The trace, with each chat prompt spelled out token by token (specials included)."""
    trace = state.recorder.get_trace(episode_id)
    for call in trace.calls:
        served = state.models.find(call.model)
        if call.prompt_text is None and served is not None:
            call.prompt_text = "".join(map(served.tokenizer.token_text, call.prompt_token_ids))
    return trace
