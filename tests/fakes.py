"""Fakes of the trainer's torch-free interfaces, for gateway tests and benchmarks.

`CharTokenizer` is one token per character plus BOS/EOS, with a tiny chat format and
`<tool_call>{...}</tool_call>` tool-call syntax. `EchoEngine` "generates" a deterministic
reply (by default: echo the last user message) token by token, with fake logprobs,
honouring max_tokens and stop strings; `ScriptedEngine` generates the ids it is told to. `FakePolicyTrainer` / `FakePolicyFactory` implement
the training interfaces: the trainer records the groups it is given, decides which samples
train with the real trainer's own rules (`trainer.selection`: zero-variance groups, stale
versions, malformed samples), reports each sample's outcome, bumps its engine's version
when something trained and returns plausible metrics; switches make it (or the factory)
raise. None knows about HTTP or torch.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from trainer.advantages import compute_advantages
from trainer.errors import InsufficientDisk
from trainer.selection import select_samples
from trainer.types import (
    MASTER_WEIGHTS_FILE,
    OPTIMIZER_FILE,
    Completion,
    GeneratedToken,
    Group,
    ParsedAssistant,
    Policy,
    RenderedPrompt,
    SamplingParams,
    ServedModel,
    StepResult,
    StreamEnd,
    TokenLogprob,
    ToolCall,
)

BOS_ID = 1
EOS_ID = 2
_CHAR_OFFSET = 16
_SPECIAL_TEXT = {BOS_ID: "<s>", EOS_ID: "</s>"}
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class CharTokenizer:
    """One token per character; ids are `ord(char) + 16`; 1 and 2 are BOS and EOS."""

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset({EOS_ID})

    @property
    def vocab_size(self) -> int:
        return 0x110000 + _CHAR_OFFSET

    def encode(self, text: str) -> list[int]:
        return [ord(char) + _CHAR_OFFSET for char in text]

    def decode(self, token_ids: Sequence[int]) -> str:
        return "".join(chr(t - _CHAR_OFFSET) for t in token_ids if t >= _CHAR_OFFSET)

    def token_text(self, token_id: int) -> str:
        if token_id < _CHAR_OFFSET:
            return _SPECIAL_TEXT.get(token_id, f"<|special_{token_id}|>")
        return chr(token_id - _CHAR_OFFSET)

    def render_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        *,
        history: Sequence[Any] | None = None,  # ignored: prompts are always "fresh"
        model: str | None = None,
    ) -> RenderedPrompt:
        text = ""
        if tools:
            names = [tool["function"]["name"] for tool in tools]
            text += f"<|tools|>{json.dumps(names)}\n"
        for message in messages:
            content = message.get("content") or ""
            for call in message.get("tool_calls") or []:
                function = call["function"]
                content += f'<tool_call>{{"name": "{function["name"]}", "arguments": {function["arguments"]}}}</tool_call>'
            text += f"<|{message['role']}|>{content}\n"
        text += "<|assistant|>"
        prefix = ""
        if isinstance(tool_choice, dict):
            prefix = f'<tool_call>{{"name": "{tool_choice["function"]["name"]}", "arguments": '
        return RenderedPrompt(
            [BOS_ID, *self.encode(text + prefix)], completion_prefix=prefix, text=text + prefix
        )

    def parse_assistant(self, text: str, tools_offered: bool) -> ParsedAssistant:
        if not tools_offered:
            return ParsedAssistant(content=text)
        calls = []
        for i, match in enumerate(_TOOL_CALL.finditer(text)):
            try:
                payload = json.loads(match.group(1))
            except json.JSONDecodeError:
                continue  # like the real parser: a broken call is left in the content
            if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
                continue
            arguments = json.dumps(payload.get("arguments", {}))
            calls.append(ToolCall(id=f"call_{i}", name=payload["name"], arguments=arguments))
        content = _TOOL_CALL.sub("", text).strip() or None
        return ParsedAssistant(content=content if calls else text, tool_calls=calls)


def echo_last_user_message(prompt_text: str) -> str:
    """The default fake policy: repeat what the user said last."""
    _, marker, rest = prompt_text.rpartition("<|user|>")
    if not marker:
        return "echo: " + prompt_text[-20:]
    return "echo: " + rest.split("\n", 1)[0]


class EngineExploded(RuntimeError):
    pass


class EchoEngine:
    """A deterministic engine; `token_delay_s` makes it slow, `explode` makes it raise
    (True: an unexpected error; an exception instance: that exception)."""

    def __init__(
        self,
        tokenizer: CharTokenizer | None = None,
        *,
        max_context: int = 512,
        token_delay_s: float = 0.0,
        reply: Callable[[str], str] = echo_last_user_message,
        explode: bool | Exception = False,
    ):
        self.tokenizer = tokenizer or CharTokenizer()
        self._max_context = max_context
        self.token_delay_s = token_delay_s
        self.reply = reply
        self.explode = explode
        self.weights_version = 0
        self.requests: list[tuple[list[int], SamplingParams]] = []
        self.closed_early = 0

    @property
    def version(self) -> int:
        return self.weights_version

    @property
    def max_context(self) -> int:
        return self._max_context

    def _plan(self, prompt_token_ids: Sequence[int], params: SamplingParams):
        text = self.reply(self.tokenizer.decode(prompt_token_ids))
        finish = "stop"
        cut = [text.find(s) for s in params.stop if s in text]
        if cut:
            text = text[: min(cut)]
            token_ids = self.tokenizer.encode(text)
        else:
            token_ids = [*self.tokenizer.encode(text), EOS_ID]
        if len(token_ids) > params.max_tokens:
            token_ids = token_ids[: params.max_tokens]
            finish = "length"
        return token_ids, finish

    async def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        self.requests.append((list(prompt_token_ids), params))
        if isinstance(self.explode, Exception):
            raise self.explode
        if self.explode:
            raise EngineExploded("engine exploded: SECRET-INTERNAL-DETAIL")
        started_at = time.time()
        token_ids, finish = self._plan(prompt_token_ids, params)
        completion = Completion(
            prompt_token_ids=list(prompt_token_ids),
            token_ids=[],
            logprobs=[],
            text="",
            finish_reason=finish,
            versions=[],
            started_at=started_at,
        )
        finished = False
        try:
            for position, token_id in enumerate(token_ids):
                if self.token_delay_s:
                    await asyncio.sleep(self.token_delay_s)
                token = self._token(position, token_id, params)
                if position == 0:
                    completion.first_token_at = time.time()
                completion.token_ids.append(token_id)
                completion.logprobs.append(token.logprob)
                completion.versions.append(token.version)
                completion.top_logprobs.append(token.top_logprobs)
                completion.token_texts.append(token.text)
                completion.text += token.text
                yield token
            completion.finished_at = time.time()
            finished = True
            yield StreamEnd(completion)
        finally:
            if not finished:
                self.closed_early += 1

    def _token(self, position: int, token_id: int, params: SamplingParams) -> GeneratedToken:
        logprob = -0.1 - 0.01 * position
        alternatives = [TokenLogprob(token_id + k, logprob - k) for k in range(params.top_logprobs)]
        eos = token_id in self.tokenizer.eos_token_ids
        text = "" if eos else self.tokenizer.token_text(token_id)
        return GeneratedToken(token_id, logprob, text, self.weights_version, alternatives)

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        async for item in self.stream(prompt_token_ids, params):
            if isinstance(item, StreamEnd):
                return item.completion
        raise AssertionError("the stream ended without a StreamEnd")


class ScriptedEngine(EchoEngine):
    """Generates exactly the token ids it is given, one list per request in order (for
    tests that need chosen ids, e.g. a word sampled in pieces that re-tokenize as one);
    works with any `ChatTokenizer`. A list ending in an EOS id finishes with "stop"."""

    def __init__(self, tokenizer: Any, replies: Sequence[Sequence[int]] = (), **options: Any):
        super().__init__(tokenizer, **options)
        self.replies = [list(reply) for reply in replies]

    def _plan(self, prompt_token_ids: Sequence[int], params: SamplingParams):
        assert self.replies, "ScriptedEngine: no scripted reply left"
        token_ids = self.replies.pop(0)
        stopped = bool(token_ids) and token_ids[-1] in self.tokenizer.eos_token_ids
        return token_ids, "stop" if stopped else "length"


def fake_served_model(name: str = "fake-model", **engine_options: Any) -> ServedModel:
    tokenizer = CharTokenizer()
    return ServedModel(
        name=name, tokenizer=tokenizer, engine=EchoEngine(tokenizer, **engine_options)
    )


class TrainerExploded(RuntimeError):
    pass


class FakePolicyTrainer:
    """Records every `train_step`; `explode=True` makes the next steps raise;
    `step_gate` (an asyncio.Event), when set up, holds each step until it is set;
    `extra_metrics` are added to every step's metrics (NaN, inf: whatever a test needs)."""

    def __init__(self, engine: EchoEngine, *, explode: bool = False):
        self.engine = engine
        self.explode = explode
        self.steps: list[tuple[list[Group], Any]] = []
        self.checkpoints: list[str] = []
        self.closed = False
        self.released = False  # release_training ran (the run ended)
        self.disk_full = False  # save_checkpoint raises InsufficientDisk
        self.step_gate: asyncio.Event | None = None
        self.extra_metrics: dict[str, float] = {}

    @property
    def version(self) -> int:
        return self.engine.weights_version

    async def train_step(self, groups: Sequence[Group], settings: Any) -> StepResult:
        self.steps.append((list(groups), settings))
        if self.step_gate is not None:
            await self.step_gate.wait()
        if self.explode:
            raise TrainerExploded("optimizer blew up: loss is nan")
        scored = compute_advantages(groups, settings.algorithm, settings.zero_variance_groups)
        selection = select_samples(scored, self.version, settings.max_staleness)
        if selection.items:  # as the real trainer: no update, no new weights version
            self.engine.weights_version += 1
        return StepResult(
            version=self.engine.weights_version,
            metrics={"loss": 0.5 / max(1, self.engine.weights_version), "kl": 0.0, "grad_norm": 1.0}
            | self.extra_metrics,
            outcomes=selection.outcomes(),
        )

    async def save_checkpoint(self, directory: str, *, resumable: bool = True) -> None:
        if self.disk_full:
            raise InsufficientDisk(
                f"not enough disk space for a checkpoint in {directory}", needed=2**30, free=2**20
            )
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        state = {"version": self.version, "resumable": resumable}
        (path / "trainer_state.json").write_text(json.dumps(state))
        if resumable:  # as a bf16-autocast policy writes: masters beside the moments
            (path / OPTIMIZER_FILE).write_bytes(b"adam moments")
            (path / MASTER_WEIGHTS_FILE).write_bytes(b"float32 masters")
        self.checkpoints.append(directory)

    def release_training(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


class FakePolicyFactory:
    """Builds `EchoEngine` policies; `fail_with` makes `create` raise it; every call and
    every trainer is kept for the test to inspect."""

    def __init__(self, *, fail_with: Exception | None = None, **engine_options: Any):
        self.fail_with = fail_with
        self.engine_options = engine_options
        self.calls: list[dict[str, Any]] = []
        self.trainers: dict[str, FakePolicyTrainer] = {}

    async def create(
        self,
        *,
        served_name: str,
        base_model: str,
        lora: dict[str, Any] | None,
        seed: int,
        resume_from: str | None = None,
    ) -> Policy:
        self.calls.append(
            dict(
                served_name=served_name,
                base_model=base_model,
                lora=lora,
                seed=seed,
                resume_from=resume_from,
            )
        )
        if self.fail_with is not None:
            raise self.fail_with
        served = fake_served_model(served_name, **self.engine_options)
        assert isinstance(served.engine, EchoEngine)
        trainer = FakePolicyTrainer(served.engine)
        self.trainers[served_name] = trainer
        return Policy(served=served, trainer=trainer)
