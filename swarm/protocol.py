"""Wire types of the swarm API, shared by the gateway and the swarm client.

Owns: the JSON shapes of episode creation and episode traces. Must not know about torch,
the trainer, or the gateway's internals; only pydantic.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

CallKind = Literal["chat", "completions"]
EpisodeStatus = Literal["open", "finished", "aborted"]


class EpisodeCreate(BaseModel):
    """`POST /swarm/episodes` body.

    `run` names a training run (`POST /runs`). The default, "default", when no run of that
    name exists, records the episode without training on it (the issue-2 behaviour).
    """

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
    model: str | None = None  # OpenAI `model` of the run's default (first) policy: "<run>/<policy>"
    models: dict[str, str] = Field(default_factory=dict)  # policy name -> OpenAI model name
    group_id: str | None = None


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
    # one text piece per prompt token (the tokenizer's decode of that id alone, special
    # tokens included); None when the gateway no longer serves the call's model
    prompt_token_texts: list[str] | None = None
    prompt_text: str | None = None
    completion_text: str
    temperature: float = 1.0  # the distribution `logprobs` are of: logits / temperature
    started_at: float
    first_token_at: float
    finished_at: float
    # chat: how the prompt was built from the episode's earlier calls (token-drift repair):
    # "fresh" (continues none), "exact", "repaired" (generated ids reused where re-tokenizing
    # differs), "unrepaired" (continues `continues` but that turn was rewritten)
    drift: str | None = None
    continues: int | None = None  # the index of the earlier call it continues


class TimelineCallTrace(BaseModel):
    """Where one call sits in its timeline: its new prompt tokens are
    `[prompt_start, completion_start)`, its completion `[completion_start, completion_end)`."""

    call_index: int
    prompt_start: int
    completion_start: int
    completion_end: int
    version: int


class TimelineTrace(BaseModel):
    """One training sequence merged from an episode's calls to one policy: loss mask 1 on
    sampled tokens, 0 on context; logprobs of sampled tokens (0.0 on context)."""

    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    calls: list[TimelineCallTrace]
    token_texts: list[str] | None = None  # one text piece per token id, as in CallTrace


class EpisodeTrace(BaseModel):
    """`GET /swarm/episodes/{id}`: an episode, every call recorded into it, the calls
    merged into timelines per policy (or per model, for calls to models the run does not
    train), and its token-drift counts (per status, plus `snaps`: calls that continue an
    earlier call but open a new timeline)."""

    episode_id: str
    status: EpisodeStatus
    run: str
    task_id: str
    task_family: str | None = None
    group_id: str | None = None
    client_id: str | None = None
    calls: list[CallTrace]
    timelines: dict[str, list[TimelineTrace]] = Field(default_factory=dict)
    drift: dict[str, int] = Field(default_factory=dict)


class EpisodeSummary(BaseModel):
    """One row of `GET /runs/{id}/episodes`: an episode without its calls. `reward` is as
    the client sent it (a float, or per policy); `step` is the training step that consumed
    it (None: not yet, or never); `finished_at` is when it was finished or aborted."""

    episode_id: str
    task_id: str
    task_family: str | None = None
    status: EpisodeStatus
    reward: float | dict[str, float] | None = None
    created_at: float
    finished_at: float | None = None
    step: int | None = None
    client_id: str | None = None
    group_id: str | None = None


# -- clients ------------------------------------------------------------------------------


class ClientRegister(BaseModel):
    """`POST /swarm/clients` body."""

    name: str = Field(min_length=1, max_length=200)
    code_version: str | None = Field(None, max_length=256)  # e.g. a hash of the workflow file
    labels: dict[str, str] = Field(default_factory=dict)


class ClientRegistered(BaseModel):
    client_id: str
    lease_s: float  # heartbeat at least this often; a lapsed lease counts as DELETE


class ClientPublic(BaseModel):
    client_id: str
    name: str
    code_version: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    status: Literal["active", "gone"]
    registered_at: float
    last_heartbeat_at: float
    episodes_open: int = 0


# -- finishing episodes ---------------------------------------------------------------------

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class EpisodeFinish(BaseModel):
    """`POST /swarm/episodes/{id}/finish` body. NaN/inf rewards are refused (422)."""

    reward: FiniteFloat | dict[str, FiniteFloat]
    metrics: dict[str, FiniteFloat] = Field(default_factory=dict)


class EpisodeAbort(BaseModel):
    """`POST /swarm/episodes/{id}/abort` body."""

    reason: str = ""


class EpisodeResult(BaseModel):
    """Answer to finish / abort."""

    episode_id: str
    status: EpisodeStatus
    rewards: dict[str, float] = Field(default_factory=dict)  # per policy
    samples: int = 0  # samples this episode added to the run's buffer


# -- runs ---------------------------------------------------------------------------------

RunStatus = Literal["starting", "running", "paused", "stopped", "finished", "failed"]
RUN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
TASK_FAMILY_MAX_CHARS = 200


def check_task_mix(mix: dict[str, float] | None) -> dict[str, float] | None:
    """Task family → weight: names non-empty, weights finite and ≥ 0, with a positive sum.
    (The gateway cannot know the families up front: clients choose tasks.)"""
    if mix is None:
        return None
    for family, weight in mix.items():
        if not family or len(family) > TASK_FAMILY_MAX_CHARS:
            raise ValueError(
                f"task family names must have 1 to {TASK_FAMILY_MAX_CHARS} characters "
                f"(got {len(family)})"
            )
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"the weight of {family!r} must be finite and >= 0 (got {weight})")
    if not sum(mix.values()) > 0:
        raise ValueError("the weights must have a positive sum")
    return mix


class TaskMixSchedule(BaseModel):
    """A linear schedule from the run's `task_mix` to `to` over `steps` training steps,
    counted from the step at which the schedule or `task_mix` was last set."""

    to: dict[str, float]
    steps: int = Field(ge=1)

    _to = field_validator("to")(check_task_mix)


class LoraSpec(BaseModel):
    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | None = None


class PolicySpec(BaseModel):
    base_model: str | None = None  # default: the gateway's first served model
    lora: LoraSpec | None = None


class RunSettings(BaseModel):
    """Everything `POST /runs` takes besides name and policies. `PATCH /runs/{id}` may change
    the fields in `RunPatch` while the run trains."""

    algorithm: Literal["grpo", "rloo", "reinforce"] = "grpo"
    lr: float = Field(1e-5, gt=0.0, le=1.0)
    weight_decay: float = Field(0.0, ge=0.0)
    max_grad_norm: float = Field(1.0, gt=0.0)
    clip_eps: float = Field(0.2, gt=0.0, lt=1.0)
    kl_coef: float = Field(0.0, ge=0.0)
    group_size: int = Field(8, ge=1, le=1024)
    batch_groups: int = Field(4, ge=1, le=4096)
    max_staleness: int = Field(1, ge=0)
    zero_variance_groups: Literal["drop", "keep"] = "drop"
    # an open group (fewer than group_size finished episodes) whose first episode finished
    # more than group_timeout_s ago is closed: "train" keeps it when it holds at least
    # min_group_size episodes, "drop" drops it (and smaller ones are dropped either way)
    partial_groups: Literal["train", "drop"] = "train"
    min_group_size: int = Field(2, ge=1)  # ≤ group_size (ignored when group_size is 1)
    group_timeout_s: float = Field(60.0, gt=0.0, allow_inf_nan=False)
    micro_batch_tokens: int = Field(4096, ge=64)
    # how an episode's calls are laid out for training: one sequence per call ("none"),
    # merged timelines ("timeline"), or timelines packed as prefix trees ("tree", fastest)
    merge: Literal["none", "timeline", "tree"] = "tree"
    max_sequence_tokens: int | None = Field(None, ge=16)  # longer calls are dropped, counted
    task_mix: dict[str, float] | None = None
    task_mix_schedule: TaskMixSchedule | None = None  # needs task_mix
    # back-pressure: new groups wait (429 buffer_full) while the run holds this many
    # complete, open and in-flight groups (None: 4 × batch_groups)
    max_buffered_groups: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    checkpoint_every: int | None = Field(None, ge=1)  # steps; None: only on request and at the end
    seed: int = 0
    # checkpoints kept: the newest keep_checkpoints plus the best by reward/mean, only the
    # newest with its optimizer state (None: the gateway's --keep-checkpoints; 0: every
    # checkpoint kept whole, the final one resumable too)
    keep_checkpoints: int | None = Field(None, ge=0, le=1000)

    @property
    def buffered_groups_limit(self) -> int:
        return self.max_buffered_groups or 4 * self.batch_groups

    @field_validator("min_group_size")
    @classmethod
    def _at_most_group_size(cls, value: int, info: ValidationInfo) -> int:
        group_size = info.data.get("group_size")  # absent when group_size itself is invalid
        if group_size is not None and group_size > 1 and value > group_size:
            raise ValueError(f"must be at most group_size ({group_size}), got {value}")
        return value

    _task_mix = field_validator("task_mix")(check_task_mix)

    @field_validator("task_mix_schedule")
    @classmethod
    def _needs_task_mix(
        cls, value: TaskMixSchedule | None, info: ValidationInfo
    ) -> TaskMixSchedule | None:
        if value is not None and info.data.get("task_mix") is None:
            raise ValueError("a schedule starts from task_mix: set task_mix too")
        return value


class RunCreate(RunSettings):
    """`POST /runs` body."""

    name: str = Field(pattern=RUN_NAME_PATTERN)
    policies: dict[str, PolicySpec] = Field(default_factory=lambda: {"policy": PolicySpec()})
    resume_from: str | None = None  # a checkpoint directory of an earlier run (single policy)


class RunPatch(BaseModel):
    """`PATCH /runs/{id}` body: live edits, applied from the next training step."""

    lr: float | None = Field(None, gt=0.0, le=1.0)
    weight_decay: float | None = Field(None, ge=0.0)
    max_grad_norm: float | None = Field(None, gt=0.0)
    clip_eps: float | None = Field(None, gt=0.0, lt=1.0)
    kl_coef: float | None = Field(None, ge=0.0)
    batch_groups: int | None = Field(None, ge=1, le=4096)
    max_staleness: int | None = Field(None, ge=0)
    zero_variance_groups: Literal["drop", "keep"] | None = None
    partial_groups: Literal["train", "drop"] | None = None
    min_group_size: int | None = Field(None, ge=1)
    group_timeout_s: float | None = Field(None, gt=0.0, allow_inf_nan=False)
    merge: Literal["none", "timeline", "tree"] | None = None
    task_mix: dict[str, float] | None = None
    task_mix_schedule: TaskMixSchedule | None = None
    max_buffered_groups: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    checkpoint_every: int | None = Field(None, ge=1)
    keep_checkpoints: int | None = Field(None, ge=0, le=1000)

    _task_mix = field_validator("task_mix")(check_task_mix)


class PolicyPublic(BaseModel):
    name: str
    model: str  # the OpenAI `model` name: "<run>/<policy>"
    base_model: str
    lora: LoraSpec | None = None
    version: int


class RunCounters(BaseModel):
    episodes_finished: int = 0
    episodes_aborted: int = 0
    samples_buffered: int = 0
    samples_trained: int = 0
    samples_dropped: int = 0


class RunPublic(RunCounters):
    """`GET /runs/{id}`."""

    id: str  # equals the run's name
    name: str
    status: RunStatus
    step: int
    settings: RunSettings
    policies: dict[str, PolicyPublic]
    created_at: float
    error: str | None = None  # why the run failed, when it did


class MetricPoint(BaseModel):
    step: int
    name: str  # e.g. "reward/mean", "reward/std", "loss", "kl", "grad_norm"
    value: float
    time: float
    policy: str | None = None  # the policy it measures; None for run-wide values ("episodes")


class CheckpointPublic(BaseModel):
    step: int
    path: str
    created_at: float
