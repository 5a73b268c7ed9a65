"""Wire types of the swarm API, shared by the gateway and the swarm client.

Owns: the JSON shapes of episode creation and episode traces, and of run control — where
every run setting's type, bounds and default is declared, once (`RunSettings`). Must not
know about torch, the trainer, or the gateway's internals; only pydantic.
"""

from __future__ import annotations

import math
import re
import typing
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

CallKind = Literal["chat", "completions"]
EpisodeStatus = Literal["open", "finished", "aborted"]

# names that become paths or labels: no separators, no control characters, bounded
RUN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PolicyName = Annotated[str, StringConstraints(pattern=RUN_NAME_PATTERN)]
# free text shown in lists and logs: printable (no C0/C1 control characters), bounded
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    found = CONTROL_CHARACTER.search(text)
    if found:
        raise ValueError(
            f"must not contain control characters (found {found.group()!r} at {found.start()})"
        )
    return text


PrintableText = Annotated[str, AfterValidator(_printable)]
ID_MAX_CHARS = 200  # task ids, group ids, task families, run references, label keys
LABEL_VALUE_MAX_CHARS = 256
MAX_LABELS = 64
TASK_FAMILY_MAX_CHARS = 200
ShortText = Annotated[str, StringConstraints(max_length=ID_MAX_CHARS)]


class EpisodeCreate(BaseModel):
    """`POST /swarm/episodes` body.

    `run` names a training run (`POST /runs`). The default, "default", when no run of that
    name exists, records the episode without training on it (the issue-2 behaviour).
    """

    client_id: ShortText | None = None
    run: ShortText = "default"
    task_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    task_family: str | None = Field(None, max_length=TASK_FAMILY_MAX_CHARS)
    group_id: ShortText | None = None


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
    # constrained decoding (None without a grammar): per token, whether the grammar mask
    # moved its logprob (`logprobs` are of the masked distribution the token was sampled
    # from), and each token's logprob without the mask (what training compares against)
    constrained: list[bool] | None = None
    unconstrained_logprobs: list[float] | None = None


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

    name: PrintableText = Field(min_length=1, max_length=200)
    code_version: str | None = Field(None, max_length=256)  # e.g. a hash of the workflow file
    labels: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX_CHARS)],
        Annotated[str, StringConstraints(max_length=LABEL_VALUE_MAX_CHARS)],
    ] = Field(default_factory=dict, max_length=MAX_LABELS)


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
# bounds at the wire: a reward (or an episode metric) outside them is a 422 naming the limit
# and the episode stays open (finish again, or abort); statistics of bounded values cannot
# overflow anywhere downstream
REWARD_LIMIT = 1e6
METRIC_LIMIT = 1e12
MAX_EPISODE_METRICS = 64


def _within(limit: float, what: str) -> AfterValidator:
    # a validator, not ge/le: union error paths then stay `reward`, `reward.<policy>`
    def check(value: float) -> float:
        if abs(value) > limit:
            raise ValueError(f"{what} must be between -{limit:.0f} and {limit:.0f}, got {value:g}")
        return value

    return AfterValidator(check)


def _bounded(limit: float, what: str) -> tuple[object, ...]:
    schema = {"minimum": -limit, "maximum": limit}  # the schema still tells the bounds
    return Field(allow_inf_nan=False, json_schema_extra=schema), _within(limit, what)


Reward = Annotated[float, *_bounded(REWARD_LIMIT, "a reward")]
EpisodeMetric = Annotated[float, *_bounded(METRIC_LIMIT, "a metric")]


class EpisodeFinish(BaseModel):
    """`POST /swarm/episodes/{id}/finish` body. Rewards are finite with |r| ≤ 1e6 and
    metrics finite with |m| ≤ 1e12 (422 otherwise; the episode stays open)."""

    reward: Reward | dict[str, Reward]
    metrics: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX_CHARS)], EpisodeMetric
    ] = Field(default_factory=dict, max_length=MAX_EPISODE_METRICS)


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
MAX_TASK_FAMILIES = 1000
MAX_COUNT = 1_000_000_000  # steps, checkpoint intervals, staleness: far beyond any real run
MAX_TOKENS = 1 << 20


def check_task_mix(mix: dict[str, float] | None) -> dict[str, float] | None:
    """Task family → weight: names non-empty, weights finite and ≥ 0, with a positive sum.
    (The gateway cannot know the families up front: clients choose tasks.)"""
    if mix is None:
        return None
    if len(mix) > MAX_TASK_FAMILIES:
        raise ValueError(f"at most {MAX_TASK_FAMILIES} task families (got {len(mix)})")
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
    steps: int = Field(ge=1, le=MAX_COUNT)

    _to = field_validator("to")(check_task_mix)


class LoraSpec(BaseModel):
    r: int = Field(16, ge=1, le=4096)
    alpha: int = Field(32, ge=1, le=65536)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[Annotated[str, StringConstraints(max_length=ID_MAX_CHARS)]] | None = Field(
        None, max_length=256
    )


class PolicySpec(BaseModel):
    base_model: str | None = Field(None, max_length=4096)  # default: the first served model
    lora: LoraSpec | None = None


# -- run settings: declared once, here ----------------------------------------------------
# Every run setting's type, bounds and default is declared once: the field of `RunSettings`
# (with the bounded types below, which the researcher's factor catalogue reads too).
# `RunPatch` is generated from it; the trainer's `trainer.config.TrainSettings` declares only
# the names and types an update reads (no defaults, no bounds), and the gateway hands it a
# run's settings at each step. tests/unit/gateway/test_run_settings_reach.py checks that every
# one of them can be set through POST /runs and PATCH and is documented in docs/api.md.


def _real(**bounds: float) -> object:
    return Field(allow_inf_nan=False, **bounds)


Lr = Annotated[float, _real(gt=0.0, le=1.0)]
WeightDecay = Annotated[float, _real(ge=0.0, le=1.0)]
AdamBeta = Annotated[float, _real(ge=0.0, lt=1.0)]
MaxGradNorm = Annotated[float, _real(gt=0.0, le=1e6)]
ClipEps = Annotated[float, _real(gt=0.0, lt=1.0)]
KlCoef = Annotated[float, _real(ge=0.0, le=1e3)]
GroupSize = Annotated[int, Field(ge=1, le=1024)]
BatchGroups = Annotated[int, Field(ge=1, le=4096)]
MaxStaleness = Annotated[int, Field(ge=0, le=MAX_COUNT)]
MinGroupSize = Annotated[int, Field(ge=1, le=1024)]
GroupTimeout = Annotated[float, _real(gt=0.0, le=7 * 24 * 3600.0)]
MicroBatchTokens = Annotated[int, Field(ge=64, le=MAX_TOKENS)]
MaxSequenceTokens = Annotated[int, Field(ge=16, le=MAX_TOKENS)]
MaxBufferedGroups = Annotated[int, Field(ge=1, le=1_000_000)]
KeepCheckpoints = Annotated[int, Field(ge=0, le=1000)]
StepCount = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]
TaskMix = Annotated[dict[str, float], AfterValidator(check_task_mix)]


class RunSettings(BaseModel):
    """Everything `POST /runs` takes besides name and policies. `PATCH /runs/{id}` may change
    all but `FIXED_AT_CREATION` while the run trains (`RunPatch`). The trainer reads the
    fields of `trainer.config.TrainSettings` from it at every step."""

    algorithm: Literal["grpo", "rloo", "reinforce"] = "grpo"
    lr: Lr = 1e-5
    weight_decay: WeightDecay = 0.0
    adam_betas: tuple[AdamBeta, AdamBeta] = (0.9, 0.999)
    max_grad_norm: MaxGradNorm = 1.0
    clip_eps: ClipEps = 0.2  # PPO-clip range of importance ratios
    kl_coef: KlCoef = 0.0  # KL to the frozen base policy; 0: off (no reference model kept)
    group_size: GroupSize = 8
    batch_groups: BatchGroups = 4
    max_staleness: MaxStaleness = 1  # samples more than this many versions old are dropped
    zero_variance_groups: Literal["drop", "keep"] = "drop"
    # grpo only (no effect on rloo/reinforce): "group" divides the group-centred reward by
    # the group's std + eps; "none" keeps only r - mean of the group (Dr. GRPO)
    scale_rewards: Literal["group", "none"] = "group"
    # an open group (fewer than group_size finished episodes) whose first episode finished
    # more than group_timeout_s ago is closed: "train" keeps it when it holds at least
    # min_group_size episodes, "drop" drops it (and smaller ones are dropped either way)
    partial_groups: Literal["train", "drop"] = "train"
    min_group_size: MinGroupSize = 2  # ≤ group_size (ignored when group_size is 1)
    group_timeout_s: GroupTimeout = 60.0
    micro_batch_tokens: MicroBatchTokens = 4096  # tokens per forward/backward chunk
    # how an episode's calls are laid out for training: one sequence per call ("none"),
    # merged timelines ("timeline"), or timelines packed as prefix trees ("tree", fastest)
    merge: Literal["none", "timeline", "tree"] = "tree"
    # the longest call an update takes (None: the engine's context); longer calls are
    # dropped and counted as `too_long`, never cut
    max_sequence_tokens: MaxSequenceTokens | None = None
    task_mix: TaskMix | None = None
    task_mix_schedule: TaskMixSchedule | None = None  # needs task_mix
    # back-pressure: new groups wait (429 buffer_full) while the run holds this many
    # complete, open and in-flight groups (None: 4 × batch_groups)
    max_buffered_groups: MaxBufferedGroups | None = None
    max_steps: StepCount | None = None  # updates: a batch that trained nothing is no step
    # a run whose last this-many batches in a row trained nothing (every sample dropped:
    # zero variance, stale, ...) ends "stopped", its `error` saying why (None: never)
    max_dropped_batches: StepCount | None = 50
    checkpoint_every: StepCount | None = None  # steps; None: only on request and at the end
    seed: Seed = 0
    # checkpoints kept: the newest keep_checkpoints plus the best by reward/mean, only the
    # newest with its optimizer state (None: the gateway's --keep-checkpoints; 0: every
    # checkpoint kept whole, the final one resumable too)
    keep_checkpoints: KeepCheckpoints | None = None

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

    @field_validator("task_mix_schedule")
    @classmethod
    def _needs_task_mix(
        cls, value: TaskMixSchedule | None, info: ValidationInfo
    ) -> TaskMixSchedule | None:
        if value is not None and info.data.get("task_mix") is None:
            raise ValueError("a schedule starts from task_mix: set task_mix too")
        return value


# the settings a live run keeps as it was created; PATCH may change every other one
FIXED_AT_CREATION = frozenset(
    {"algorithm", "group_size", "micro_batch_tokens", "max_sequence_tokens", "seed"}
)


class RunCreate(RunSettings):
    """`POST /runs` body. Unknown fields are refused (422 naming the field): a misspelt
    setting must not silently train with the default."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=RUN_NAME_PATTERN)
    # policy names become directory names of checkpoints: the run-name pattern
    policies: dict[PolicyName, PolicySpec] = Field(
        default_factory=lambda: {"policy": PolicySpec()}, max_length=64
    )
    resume_from: str | None = Field(None, max_length=4096)  # a checkpoint dir of an earlier run


def _field_errors(
    title: str, fields: dict[str, object], kind: str, message: str
) -> ValidationError:
    return ValidationError.from_exception_data(
        title,
        [
            InitErrorDetails(type=PydanticCustomError(kind, message), loc=(name,), input=value)
            for name, value in fields.items()
        ],
    )


class _LiveEdits(BaseModel):
    """What `RunPatch` adds to its fields: any other field is a 422 naming it."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _only_live_settings(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        extra = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not extra:
            return data
        fixed = {k: v for k, v in extra.items() if k in RunCreate.model_fields}
        if fixed:
            raise _field_errors(
                cls.__name__,
                fixed,
                "not_patchable",
                "is fixed when the run is created and cannot change on a live run "
                "(create a new run instead)",
            )
        raise _field_errors(
            cls.__name__,
            extra,
            "unknown_field",
            f"is not a run setting; PATCH takes {', '.join(cls.model_fields)}",
        )


def _live_edits_model() -> type[_LiveEdits]:
    # each field of RunSettings but FIXED_AT_CREATION, with its own type and bounds, None
    # when absent; a field sent as null is set (it clears max_steps, ...)
    declared = typing.get_type_hints(RunSettings, include_extras=True)
    fields: dict[str, typing.Any] = {
        name: (declared[name] | None, None)
        for name in RunSettings.model_fields
        if name not in FIXED_AT_CREATION
    }
    return create_model(
        "RunPatch",
        __base__=_LiveEdits,
        __module__=__name__,
        __doc__=(
            "`PATCH /runs/{id}` body: live edits, applied from the next training step: every "
            "run setting but `FIXED_AT_CREATION`. Any other field is a 422 naming it: a "
            'setting fixed at creation (`group_size`, `algorithm`, ...) "cannot change on a '
            'live run"; an unknown one lists the patchable fields.'
        ),
        **fields,
    )


RunPatch = _live_edits_model()


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
    step: int  # optimizer updates: batches from which at least one policy trained a sample
    settings: RunSettings
    policies: dict[str, PolicyPublic]
    created_at: float
    # why the run failed, paused for disk, or stopped itself (max_dropped_batches)
    error: str | None = None
    # batches the trainer took but no policy trained any sample from (no step), by the
    # reason that dropped most of their samples ("zero_variance", "stale", ...); the run's
    # current streak of them (reset by each step; max_dropped_batches ends the run)
    batches_dropped: dict[str, int] = Field(default_factory=dict)
    batches_dropped_in_a_row: int = 0


class MetricPoint(BaseModel):
    step: int
    name: str  # e.g. "reward/mean", "reward/std", "loss", "kl", "grad_norm"
    value: float
    time: float
    policy: str | None = None  # the policy it measures; None for run-wide values ("episodes")


class CheckpointCreate(BaseModel):
    """`POST /runs/{id}/checkpoints` body, optional (none: `{"optimizer": true}`). Unknown
    fields are refused (422 naming the field)."""

    model_config = ConfigDict(extra="forbid")

    # false: weights only (in the training dtype), no optimizer state: a quarter of the
    # size, but a restart from it continues with a fresh optimizer
    optimizer: bool = True


class CheckpointPublic(BaseModel):
    step: int
    # the step directory, `path/<policy>` each policy's checkpoint; for a single-policy run
    # it is that policy's checkpoint too (symlinks): `from_pretrained(path)` loads it
    path: str
    created_at: float
    # each policy's checkpoint directory (a Hugging Face model + tokenizer)
    policies: dict[str, str] = Field(default_factory=dict)
    # every policy's optimizer state is kept: a restart continues exactly from here
    optimizer: bool = False


class ClientKey(BaseModel):
    """`POST /runs/{run}/client-keys`: a key for the swarm clients of one run. It registers
    clients, runs and reads that run's episodes and reads the run; it controls nothing."""

    api_key: str
    run: str
