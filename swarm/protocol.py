"""Wire types of the swarm API, shared by the gateway and the swarm client.

Owns: the JSON shapes of episode creation and episode traces. Must not know about torch,
the trainer, or the gateway's internals; only pydantic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

CallKind = Literal["chat", "completions"]
EpisodeStatus = Literal["open", "finished", "aborted"]


class EpisodeCreate(BaseModel):
    """`POST /swarm/episodes` body."""

    client_id: str | None = None
    run: str = "default"
    task_id: str = Field(min_length=1)
    task_family: str | None = None
    group_id: str | None = None


class EpisodeCreated(BaseModel):
    """What a client needs to run one episode with any OpenAI-compatible agent."""

    episode_id: str
    api_key: str
    base_url: str  # an OpenAI base URL; the api_key binds calls to this episode
    policy_versions: dict[str, int]


class CallTrace(BaseModel):
    """One recorded completion, token by token."""

    index: int
    request_id: str
    choice_index: int = 0
    kind: CallKind
    model: str
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[tuple[int, float]]] | None = None  # per token: (token_id, logprob)
    versions: list[int]
    version: int
    finish_reason: str
    token_texts: list[str]
    prompt_text: str | None = None
    completion_text: str
    started_at: float
    first_token_at: float
    finished_at: float


class EpisodeTrace(BaseModel):
    """`GET /swarm/episodes/{id}`: an episode and every call recorded into it."""

    episode_id: str
    status: EpisodeStatus
    run: str
    task_id: str
    task_family: str | None = None
    group_id: str | None = None
    client_id: str | None = None
    calls: list[CallTrace]
