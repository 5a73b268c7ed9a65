"""OpenAI-compatible routes: `/v1/models`, `/v1/chat/completions`, `/v1/completions`.

The same router is mounted at `/v1` and at `/episodes/{episode_id}/v1` (calls there are
recorded into that episode). Thin: validation by the wire types, binding by
`openai_call_binding`, everything else in the services.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from sse_starlette import EventSourceResponse

from gateway.openai_api import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    CompletionRequest,
    CompletionResponse,
    ModelCard,
    ModelList,
)
from gateway.routes.deps import Binding, State

router = APIRouter(tags=["openai"])
_SSE_HEADERS = {"Cache-Control": "no-cache"}


def _json(model: ChatCompletionResponse | CompletionResponse | ModelList | ModelCard) -> Response:
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
async def chat_completions(body: ChatCompletionRequest, state: State, binding: Binding) -> Response:
    prepared = await state.chat.prepare(body, binding.episode_id)
    if body.stream:
        events = state.chat.stream(prepared, binding.episode_id)
        return EventSourceResponse(events, sep="\n", headers=_SSE_HEADERS)
    return _json(await state.chat.complete(prepared, binding.episode_id))


@router.post("/completions", response_model=CompletionResponse)
async def completions(body: CompletionRequest, state: State, binding: Binding) -> Response:
    prepared = await state.completions.prepare(body)
    if body.stream:
        events = state.completions.stream(prepared, binding.episode_id)
        return EventSourceResponse(events, sep="\n", headers=_SSE_HEADERS)
    return _json(await state.completions.complete(prepared, binding.episode_id))
