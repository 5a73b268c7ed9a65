"""Torch-free records and interfaces that the trainer shares with the gateway.

The gateway may import this module (and `trainer.chat_format`, `trainer.errors`,
`trainer.context`) but never the torch side of the trainer. Everything here is plain
Python: dataclasses for records, `Protocol`s for the two things the gateway needs from a
served model — a tokenizer that knows the chat format, and an inference engine that turns
prompt token ids into tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

# a checkpoint's optimizer state (`trainer.checkpoint`): only a restart needs it, so the
# gateway removes it from every checkpoint but the one a restart would resume from
OPTIMIZER_FILE = "optimizer.pt"
# the float32 master weights, beside the optimizer state when the weights are saved in a
# narrower training dtype (bf16): a restart needs them, nothing else does
MASTER_WEIGHTS_FILE = "master_weights.pt"
RESUME_FILES = (OPTIMIZER_FILE, MASTER_WEIGHTS_FILE)

FinishReason = Literal["stop", "length", "abort"]


@dataclass(frozen=True)
class Grammar:
    """What a completion's text must match: constrained decoding (`trainer.grammar` builds
    and checks them; each engine enforces them with its grammar library).

    `lark` is the whole completion in llguidance's Lark dialect (it may embed JSON schemas
    as `%json {...}`); the torch engine compiles it with llguidance, vLLM with its
    "guidance" backend (the same library). `kind` says what asked for it: "json_object", "json_schema", "tool_call" (a forced call), "tool_auto" (calls
    well-formed once opened), "json_or_tool" (a JSON answer or a call)."""

    kind: str
    lark: str


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion. Validated by the caller (the gateway answers 400)."""

    max_tokens: int = 256
    temperature: float = 1.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means no top-k cut
    stop: tuple[str, ...] = ()  # stop strings; the text is cut before the first match
    seed: int | None = None
    top_logprobs: int = 0  # how many alternatives to report per token (0..20)
    ignore_eos: bool = False
    grammar: Grammar | None = None  # constrained decoding: the text must match it


@dataclass(frozen=True)
class TokenLogprob:
    token_id: int
    logprob: float


@dataclass
class GeneratedToken:
    """One sampled token, streamed from the engine as soon as it exists.

    `logprob` is the log-probability of `token_id` under the distribution it was sampled
    from (logits / temperature, before top-p/top-k truncation; raw logits when greedy;
    renormalised over the tokens a grammar allowed when the request has one).
    `text` is the piece of completion text this token made visible (may be "" while a
    multi-byte character is incomplete, or when the token is a special/stop token).
    """

    token_id: int
    logprob: float
    text: str
    version: int  # weights version that produced this token
    top_logprobs: list[TokenLogprob] = field(default_factory=list)


@dataclass
class Completion:
    """A finished completion: everything the recorder and the trainer need."""

    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str  # the visible completion text (special tokens removed, cut at a stop string)
    finish_reason: FinishReason
    versions: list[int]  # one per token; equal unless the weights changed mid-completion
    top_logprobs: list[list[TokenLogprob]] = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)  # per token, as streamed
    # the temperature `logprobs` were computed at (logits / temperature); 1.0 when greedy
    temperature: float = 1.0
    started_at: float = 0.0  # time.time() when the request entered the engine
    first_token_at: float = 0.0
    finished_at: float = 0.0
    # constrained decoding (None when the request had no grammar): per token, whether a
    # grammar mask chose among fewer tokens than the vocabulary (`logprobs` are then of the
    # masked, renormalised distribution), and each token's logprob without the mask (None
    # when the engine cannot see it, e.g. vLLM); docs/training.md says which trains
    constrained: list[bool] | None = None
    unconstrained_logprobs: list[float] | None = None

    @property
    def version(self) -> int:
        """The weights version the completion started with (-1 if nothing was generated)."""
        return self.versions[0] if self.versions else -1


@dataclass
class StreamEnd:
    """Last item of an engine stream: the whole completion."""

    completion: Completion


@runtime_checkable
class InferenceEngine(Protocol):
    """Turns prompt token ids into sampled tokens; serves many requests at once.

    Implementations run off the event loop (a worker thread, a process, a Ray actor) so
    that awaiting them never blocks the HTTP server. They may also have the load gauges of
    `EngineLoad` (optional: not part of the runtime check).
    """

    @property
    def version(self) -> int:
        """Current weights version (bumped by the training loop after each update)."""
        ...

    @property
    def max_context(self) -> int:
        """Most tokens (prompt + completion) one sequence may hold."""
        ...

    def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        """Yield each token as it is sampled, then one `StreamEnd`.

        Closing the iterator early (client went away) cancels the request.
        """
        ...

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        """Run one request to completion."""
        ...


class EngineLoad(Protocol):
    """Optional read-only properties of an `InferenceEngine`: how loaded it is, read with
    `getattr` by the gateway's `/metrics` at scrape time, from another thread. An engine
    without them, or answering None, is left out of those series."""

    @property
    def requests_waiting(self) -> int | None:
        """Requests submitted and not yet in the decode batch."""
        ...

    @property
    def sequences_active(self) -> int | None:
        """Sequences in the current decode batch."""
        ...

    @property
    def max_batch(self) -> int | None:
        """Most sequences one decode batch holds."""
        ...


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as OpenAI sends it (not guaranteed valid)


@dataclass
class RenderedPrompt:
    """A chat rendered to token ids, ready for the engine.

    `completion_prefix` is text the chat format forced at the start of the assistant turn
    (e.g. the opening of a tool call when `tool_choice` names a function); it is already
    part of `token_ids` and must be prepended to the generated text before parsing.

    `text` is the rendered chat (prefix included). When the chat continues an earlier call
    of the same episode (`history` given to `render_chat`), `drift` says how its prompt
    was built (`trainer.context.drift`: fresh, exact, repaired, unrepaired) and
    `continues` names the earlier call's index.
    """

    token_ids: list[int]
    completion_prefix: str = ""
    text: str = ""
    drift: str = "fresh"
    continues: int | None = None


@dataclass
class ParsedAssistant:
    """A completion's text split into what OpenAI calls `content` and `tool_calls`."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class PriorCall:
    """What token-drift repair (`trainer.context.drift`) needs of an earlier call of the
    same episode."""

    index: int
    model: str
    messages: list[dict[str, Any]]
    prompt_text: str  # the rendered prompt, forced tool-call prefix included
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    reply: ParsedAssistant  # what the agent got back as the assistant message


@runtime_checkable
class ChatTokenizer(Protocol):
    """The model's tokenizer plus its chat format (template, tool-call syntax)."""

    @property
    def eos_token_ids(self) -> frozenset[int]: ...

    @property
    def vocab_size(self) -> int:
        """Token ids run from 0 to vocab_size - 1."""
        ...

    def encode(self, text: str) -> list[int]:
        """Plain text to ids, no special tokens added (for /v1/completions)."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Ids to text, special tokens dropped."""
        ...

    def token_text(self, token_id: int) -> str:
        """The raw text of one token, special tokens included (for traces)."""
        ...

    def render_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        *,
        history: Sequence[PriorCall] | None = None,
        model: str | None = None,
    ) -> RenderedPrompt:
        """OpenAI-style messages (dicts) to prompt token ids with the generation prompt.

        `history`: the episode's earlier calls; when the chat answers one of them to
        `model` (the served name), its generated ids are reused (token-drift repair).
        Implementations may ignore it (the prompt is then "fresh").
        Raises `trainer.errors.ChatFormatError` when the chat template rejects them."""
        ...

    def parse_assistant(self, text: str, tools_offered: bool) -> ParsedAssistant:
        """Split generated text into content and tool calls."""
        ...


@dataclass
class ServedModel:
    """What the gateway serves under one OpenAI `model` name."""

    name: str
    tokenizer: ChatTokenizer
    engine: InferenceEngine
    owned_by: str = "swarmrl"
    created: int = 0


# -- training ------------------------------------------------------------------------------
# What the gateway hands the trainer, and what it gets back. Torch-free, like the rest.


# A sample's identity: (episode id, policy, call index), the `sample` table's unique key.
SampleKey = tuple[str, str, int]


@dataclass
class Sample:
    """One training sequence: a prompt and the completion the policy sampled for it.

    `loss_mask` marks the completion tokens that are trained (1) or only context (0); None
    means all of them. A recorded call is one sample; `trainer.context` merges the calls of
    an episode into timeline samples whose completion interleaves sampled tokens (mask 1)
    with context the policy did not sample (tool results, user turns; mask 0, logprob 0).
    """

    episode_id: str
    policy: str
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    behaviour_logprobs: list[float]  # per completion token, from the engine that sampled it
    version: int  # weights version the completion started with
    loss_mask: list[int] | None = None
    call_index: int = 0
    temperature: float = (
        1.0  # behaviour logprobs are of logits / temperature; the trainer matches it
    )
    # per completion token when a merged sample's calls were sampled at different temperatures
    completion_temperatures: list[float] | None = None
    # the earlier call of the same conversation this call continues (the gateway's drift
    # tracker sets it); a continuing call that cannot extend that call's timeline is a "snap"
    continues: int | None = None
    call_indices: list[int] | None = None  # the calls a merged sample holds (None: call_index)

    @property
    def key(self) -> SampleKey:
        """Which recorded call this is (a merged sample: its first call)."""
        return (self.episode_id, self.policy, self.call_index)

    def temperature_at(self, j: int) -> float:
        """The temperature completion token `j`'s behaviour logprob was taken at."""
        if self.completion_temperatures is not None:
            return self.completion_temperatures[j]
        return self.temperature


@dataclass
class EpisodeSamples:
    """One finished episode as one policy sees it: its reward and its samples (maybe none)."""

    episode_id: str
    reward: float
    samples: list[Sample] = field(default_factory=list)


@dataclass
class Group:
    """Episodes of the same task that share a GRPO/RLOO baseline (`group_id`)."""

    group_id: str
    episodes: list[EpisodeSamples]


@dataclass(frozen=True)
class SampleOutcome:
    """What a step did with one sample it was given: trained (`dropped` None), or dropped
    with the reason — `zero_variance`, `stale`, `malformed`, `no_trained_tokens`,
    `too_long`, `empty` (docs/training.md says when each applies)."""

    key: SampleKey
    dropped: str | None = None

    @property
    def trained(self) -> bool:
        return self.dropped is None


@dataclass
class StepResult:
    """What one `train_step` did: one outcome per sample of its groups, the weights version
    after it, and `metrics` with names like `loss`, `kl`, `grad_norm`, `reward/mean`,
    `reward/std`, `advantage/mean`, `tokens`, `step_seconds`, `tokens_per_second`.
    The sample counts are derived from the outcomes, never kept beside them."""

    version: int  # the weights version the engine serves after this step
    metrics: dict[str, float]
    outcomes: list[SampleOutcome] = field(default_factory=list)

    @property
    def samples_trained(self) -> int:
        return sum(outcome.trained for outcome in self.outcomes)

    @property
    def samples_dropped(self) -> dict[str, int]:
        """Reason → count, e.g. {"stale": 3, "zero_variance": 8}; no zero counts."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.dropped is not None:
                counts[outcome.dropped] = counts.get(outcome.dropped, 0) + 1
        return counts


@runtime_checkable
class PolicyTrainer(Protocol):
    """Trains one policy and keeps its engine serving the newest weights.

    `train_step` runs on the process's compute thread (it never blocks the event loop) and,
    when it returns, the engine already serves the new weights (`version` went up by one).
    """

    @property
    def version(self) -> int: ...

    async def train_step(self, groups: Sequence[Group], settings: Any) -> StepResult:
        """One update from complete groups. `settings` is a `trainer.config.TrainSettings`
        (read each step, so live edits such as a new lr apply at the next step)."""
        ...

    async def save_checkpoint(self, directory: str, *, resumable: bool = True) -> None:
        """A Hugging Face directory (safetensors in the training dtype + config + tokenizer,
        loadable by transformers/vLLM) plus `trainer_state.json` and, when `resumable`, the
        `RESUME_FILES` a restart needs (`optimizer.pt`; `master_weights.pt` when the masters
        are wider than the saved weights). Raises `InsufficientDisk` (nothing written) when
        the filesystem lacks room."""
        ...

    def close(self) -> None:
        """Stop the engine and free the weights."""
        ...


@dataclass
class Policy:
    """A trainable policy as the gateway holds it: served under `served.name`
    (`<run>/<policy>`), trained by `trainer`."""

    served: ServedModel
    trainer: PolicyTrainer


@runtime_checkable
class PolicyFactory(Protocol):
    """Builds policies for new runs (loading weights is slow: it runs off the event loop)."""

    async def create(
        self,
        *,
        served_name: str,
        base_model: str,
        lora: dict[str, Any] | None,
        seed: int,
        resume_from: str | None = None,
    ) -> Policy:
        """`base_model` is any name `trainer.model.load_model` takes (or a checkpoint
        directory); `resume_from` a checkpoint directory whose weights and optimizer
        state the policy starts from."""
        ...
