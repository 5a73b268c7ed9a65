"""FastAPI dependencies shared by the routes: the gateway state, who is calling, and the
admin requirement that admin-only routers carry (`ADMIN_ONLY`).

All are `async def`: FastAPI runs plain `def` dependencies in a worker thread, which would
cost a thread hop per dependency per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gateway.http.auth import CallBinding, bearer_token, bind_openai_call, require_admin
from gateway.http.state import GatewayState


async def gateway_state(request: Request) -> GatewayState:
    return request.app.state.gateway


async def api_token(request: Request) -> str | None:
    return bearer_token(request.headers.get("authorization"))


async def openai_call_binding(request: Request) -> CallBinding:
    state: GatewayState = request.app.state.gateway
    return await bind_openai_call(
        token=bearer_token(request.headers.get("authorization")),
        path_episode_id=request.path_params.get("episode_id"),
        recorder=state.recorder,
        settings=state.settings,
    )


State = Annotated[GatewayState, Depends(gateway_state)]
Token = Annotated[str | None, Depends(api_token)]
Binding = Annotated[CallBinding, Depends(openai_call_binding)]


async def admin_key_required(state: State, token: Token) -> None:
    """401 unless the caller holds the admin key (open when none is configured)."""
    require_admin(token, state.settings)


# `APIRouter(dependencies=ADMIN_ONLY)`: every route of that router needs the admin key, and
# is refused (401) before its path, query or body is read
ADMIN_ONLY = [Depends(admin_key_required)]
