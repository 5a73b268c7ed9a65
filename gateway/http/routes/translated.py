"""Serving a request of another API (Responses, Messages) through the chat core.

Owns: `serve_translated` — per-key admission for the translated chat request (the lease is
held until the answer or the stream ends), the chat core's `prepare`, then the translator's
stream or whole answer, the way `/v1/chat/completions` serves (`routes.openai`). Thin:
the translation itself is in `gateway.openai.responses` / `gateway.openai.messages`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel

from gateway.http.routes.openai import stream_or_answer
from gateway.http.state import GatewayState
from gateway.openai.admission import caller_key
from gateway.openai.chat import PreparedChat
from gateway.openai.sampling import check_limits
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
    check_limits(chat, state.settings.limits)  # a 400 before any 429
    host = request.client.host if request.client else None
    lease = state.admission.admit(caller_key(token, host), chat.choice_count())
    try:
        prepared = await state.chat.prepare(chat, episode_id)
    except BaseException:
        lease.release()
        raise
    return await stream_or_answer(
        request,
        lease,
        (lambda: stream(prepared)) if chat.stream else None,
        lambda: complete(prepared),
    )
