"""OpenAI-compatible routes: `/v1/models`, `/v1/chat/completions`, `/v1/completions`.

The same router is mounted at `/v1` and at `/episodes/{episode_id}/v1` (calls there are
recorded into that episode; `episode_path` declares that parameter). Thin: validation by
the wire types, binding by `openai_call_binding`, per-key admission (`gateway.openai.admission`:
the lease is held until the answer or the stream ends), everything else in the services.
A non-streamed call whose client goes away is cancelled, and with it its engine requests.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from gateway.http.auth import bearer_token
from gateway.http.routes.deps import Binding, State
from gateway.http.state import GatewayState
from gateway.openai.admission import Lease, caller_key
from gateway.openai.sampling import check_limits
from gateway.openai.wire import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    CompletionRequest,
    CompletionResponse,
    ModelCard,
    ModelList,
)

router = APIRouter(tags=["openai"])
_SSE_HEADERS = {"Cache-Control": "no-cache"}
CLIENT_CLOSED_REQUEST = 499  # nginx's status for a client that left before the answer
T = TypeVar("T")
P = TypeVar("P")  # a prepared request (chat or completions)


async def episode_path(
    episode_id: Annotated[str, Path(description="The episode this call is recorded into.")],
) -> str:
    """Declares `/episodes/{episode_id}/v1/...`'s path parameter (binding reads it)."""
    return episode_id


def _admit(
    request: Request,
    state: GatewayState,
    body: ChatCompletionRequest | CompletionRequest,
    token: str | None,
):
    check_limits(body, state.settings.limits)  # a 400 before any 429
    host = request.client.host if request.client else None
    return state.admission.admit(caller_key(token, host), body.choice_count())


async def _released_after(events: AsyncIterator[str], lease: Lease) -> AsyncIterator[str]:
    try:
        async for event in events:
            yield event
    finally:
        lease.release()
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_client_leaves(request: Request, work: Awaitable[T]) -> T | Response:
    """`work`'s result; cancelled (its engine requests with it) if the client disconnects
    first. The body has been read, so the next ASGI message is the disconnect."""
    job = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({job, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (watcher, job):
            if not task.done():
                task.cancel()
        await asyncio.gather(watcher, job, return_exceptions=True)
    if job.cancelled():
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    return job.result()


async def stream_or_answer(
    request: Request,
    lease: Lease,
    events: Callable[[], AsyncIterator[str] | AsyncIterator[dict[str, str]]] | None,
    complete: Callable[[], Awaitable[BaseModel]],
) -> Response:
    """The SSE stream (`events`, when streaming) or the whole answer; the lease is given
    back when either ends."""
    if events is not None:
        stream = _released_after(events(), lease)
        weakref.finalize(stream, lease.release)  # also when the stream never starts
        return EventSourceResponse(stream, sep="\n", headers=_SSE_HEADERS)
    try:
        answer = await _unless_client_leaves(request, complete())
    finally:
        lease.release()
    return answer if isinstance(answer, Response) else _json(answer)


async def serve_admitted(
    request: Request,
    state: GatewayState,
    body: ChatCompletionRequest | CompletionRequest,
    prepare: Callable[[], Awaitable[P]],
    stream: Callable[[P], AsyncIterator[str] | AsyncIterator[dict[str, str]]],
    complete: Callable[[P], Awaitable[BaseModel]],
    *,
    token: str | None,
) -> Response:
    """Admit the caller (keyed by `token`, else its host), prepare the request, then stream
    or complete it; the admission lease is given back however it ends (a refused prepare
    included). The translated APIs (`routes.translated`) serve through this too."""
    lease = _admit(request, state, body, token)
    try:
        prepared = await prepare()
    except BaseException:
        lease.release()
        raise
    return await stream_or_answer(
        request,
        lease,
        (lambda: stream(prepared)) if body.stream else None,
        lambda: complete(prepared),
    )


def _json(model: BaseModel) -> Response:
    return Response(model.model_dump_json(), media_type="application/json")


def _model_card(state: State, name: str) -> ModelCard:
    served = state.models.get(name)
    return ModelCard(
        id=served.name,
        created=served.created,
        owned_by=served.owned_by,
        max_model_len=served.engine.max_context,
    )


@router.get("/models", response_model=ModelList)
async def list_models(state: State, _binding: Binding) -> Response:
    return _json(ModelList(data=[_model_card(state, name) for name in state.models.names()]))


@router.get("/models/{model:path}", response_model=ModelCard)
async def retrieve_model(model: str, state: State, _binding: Binding) -> Response:
    return _json(_model_card(state, model))


@router.post("/chat/completions", response_model=ChatCompletionResponse)
async def chat_completions(
    body: ChatCompletionRequest, state: State, binding: Binding, request: Request
) -> Response:
    episode = binding.episode_id
    return await serve_admitted(
        request,
        state,
        body,
        lambda: state.chat.prepare(body, episode),
        lambda prepared: state.chat.stream(prepared, episode),
        lambda prepared: state.chat.complete(prepared, episode),
        token=bearer_token(request.headers.get("authorization")),
    )


@router.post("/completions", response_model=CompletionResponse)
async def completions(
    body: CompletionRequest, state: State, binding: Binding, request: Request
) -> Response:
    episode = binding.episode_id
    return await serve_admitted(
        request,
        state,
        body,
        lambda: state.completions.prepare(body),
        lambda prepared: state.completions.stream(prepared, episode),
        lambda prepared: state.completions.complete(prepared, episode),
        token=bearer_token(request.headers.get("authorization")),
    )
