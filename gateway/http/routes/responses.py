"""`POST /v1/responses` (the OpenAI Responses API), mounted like the chat routes at `/v1`
and `/episodes/{episode_id}/v1`; errors are OpenAI-shaped (the gateway's own handlers).
Thin: validation by `gateway.openai.responses_wire`, binding by `openai_call_binding`,
translation by `gateway.openai.responses`, serving by `serve_translated`.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.http.auth import bearer_token
from gateway.http.routes.deps import Binding, State
from gateway.http.routes.translated import serve_translated
from gateway.openai.responses_wire import ResponseCreateRequest, ResponseObject

router = APIRouter(tags=["openai"])


@router.post("/responses", response_model=ResponseObject)
async def create_response(
    body: ResponseCreateRequest, state: State, binding: Binding, request: Request
) -> Response:
    episode = binding.episode_id
    turn = state.responses.translate(body, episode)
    return await serve_translated(
        request,
        state,
        turn.chat,
        episode_id=episode,
        token=bearer_token(request.headers.get("authorization")),
        stream=lambda prepared: state.responses.stream(turn, prepared, episode),
        complete=lambda prepared: state.responses.complete(turn, prepared, episode),
    )
