"""Serving a request of another API (Responses, Messages) through the chat core.

Owns: `serve_translated` — the translated chat request served exactly as
`/v1/chat/completions` is (`routes.openai.serve_admitted`: per-key admission held until the
answer or the stream ends, the chat core's `prepare`, then the translator's stream or whole
answer), keyed by the API's own credential. Thin: the translation itself is in
`gateway.openai.responses` / `gateway.openai.messages`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel

from gateway.http.routes.openai import serve_admitted
from gateway.http.state import GatewayState
from gateway.openai.chat import PreparedChat
from gateway.openai.wire import ChatCompletionRequest


async def serve_translated(
    request: Request,
    state: GatewayState,
    chat: ChatCompletionRequest,
    *,
    episode_id: str | None,
    token: str | None,
    stream: Callable[[PreparedChat], AsyncIterator[dict[str, str]]],
    complete: Callable[[PreparedChat], Awaitable[BaseModel]],
) -> Response:
    return await serve_admitted(
        request,
        state,
        chat,
        lambda: state.chat.prepare(chat, episode_id),
        stream,
        complete,
        token=token,
    )
