"""`POST /v1/messages` (the Anthropic Messages API), mounted like the chat routes at `/v1`
and `/episodes/{episode_id}/v1`.

Owns: the key a Messages client sends (`x-api-key`, as the anthropic SDK does, or
`Authorization: Bearer`), bound to an episode by the same rules as the OpenAI routes, and
answering every error of this route in Anthropic's shape (`AnthropicErrorRoute`: body
validation, binding, translation, admission and generation errors alike; what middleware
refuses before routing — body too large, Host/Origin/JSON guards — stays OpenAI-shaped).
Thin otherwise: translation by `gateway.openai.messages`, serving by `serve_translated`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.errors import (
    GatewayError,
    RateLimited,
    as_gateway_error,
    validation_error_to_gateway_error,
)
from gateway.http.auth import CallBinding, bearer_token, bind_openai_call
from gateway.http.routes.deps import State
from gateway.http.routes.translated import serve_translated
from gateway.openai.messages import anthropic_error
from gateway.openai.messages_wire import ErrorBody, MessageOut, MessagesRequest


def _error_response(error: GatewayError) -> JSONResponse:
    headers = None
    if isinstance(error, RateLimited):
        headers = {"Retry-After": str(max(1, math.ceil(error.retry_after)))}
    body = anthropic_error(error.status, error.message).model_dump()
    return JSONResponse(body, status_code=error.status, headers=headers)


class AnthropicErrorRoute(APIRoute):
    """A route whose errors (validation and dependencies included) are Anthropic-shaped."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handle = super().get_route_handler()

        async def handle_with_anthropic_errors(request: Request) -> Response:
            try:
                return await handle(request)
            except RequestValidationError as error:
                return _error_response(validation_error_to_gateway_error(error))
            except StarletteHTTPException as error:  # e.g. a body that is not UTF-8 JSON
                body = anthropic_error(error.status_code, str(error.detail)).model_dump()
                return JSONResponse(body, status_code=error.status_code, headers=error.headers)
            except Exception as error:  # logged by as_gateway_error when unexpected
                return _error_response(as_gateway_error(error))

        return handle_with_anthropic_errors


router = APIRouter(tags=["anthropic"], route_class=AnthropicErrorRoute)


def messages_api_key(request: Request) -> str | None:
    """`Authorization: Bearer` first, else `x-api-key`."""
    return bearer_token(request.headers.get("authorization")) or (
        request.headers.get("x-api-key") or None
    )


async def messages_call_binding(request: Request) -> CallBinding:
    state = request.app.state.gateway
    return await bind_openai_call(
        token=messages_api_key(request),
        path_episode_id=request.path_params.get("episode_id"),
        recorder=state.recorder,
        settings=state.settings,
    )


MessagesBinding = Annotated[CallBinding, Depends(messages_call_binding)]


@router.post(
    "/messages",
    response_model=MessageOut,
    responses={400: {"model": ErrorBody}, 401: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)
async def create_message(
    body: MessagesRequest, state: State, binding: MessagesBinding, request: Request
) -> Response:
    episode = binding.episode_id
    turn = state.messages.translate(body)
    return await serve_translated(
        request,
        state,
        turn.chat,
        episode_id=episode,
        token=messages_api_key(request),
        stream=lambda prepared: state.messages.stream(turn, prepared, episode),
        complete=lambda prepared: state.messages.complete(turn, prepared, episode),
    )
