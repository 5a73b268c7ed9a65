"""The stream-to-caller bridge both rollout engines use, and `stream`/`generate` on it.

An engine produces a request's items (`GeneratedToken`s, then one `StreamEnd`, or an
exception) on a thread or event loop of its own; the caller awaits them on whatever loop it
runs. `relay` owns that hand-over: an asyncio queue on the caller's loop, a thread-safe
`emit` that feeds it from anywhere, and the cancel hook that runs when the caller closes
the stream early. What a request is, where it runs and how it is cancelled is the
engine's business (`submit`); this module knows nothing of models, vLLM or torch.

`RelayedEngine` gives an engine `stream` and `generate` (the completion a stream ends with)
from one `_submit(prompt_token_ids, params, emit)` method, and refuses streams once the
engine is shut down.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable, Sequence

from trainer.errors import EngineFailure, EngineStopped
from trainer.types import Completion, GeneratedToken, SamplingParams, StreamEnd

Emit = Callable[[GeneratedToken | StreamEnd | BaseException], None]
"""Thread-safe: delivers a token, the end, or the exception that ends the stream."""


async def relay(
    submit: Callable[[Emit], Callable[[], None]],
) -> AsyncIterator[GeneratedToken | StreamEnd]:
    """Yield a request's items as the engine emits them, up to and including `StreamEnd`;
    an emitted exception is raised here.

    `submit(emit)` starts the request (it may raise to refuse it) and returns the function
    that cancels it; that runs when the stream ends in any way, including the caller
    closing it early. Nothing runs before the first `__anext__`.
    """
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[GeneratedToken | StreamEnd | BaseException] = asyncio.Queue()

    def emit(item: GeneratedToken | StreamEnd | BaseException) -> None:
        try:
            loop.call_soon_threadsafe(inbox.put_nowait, item)
        except RuntimeError:  # the requester's loop is closed; nobody is listening
            pass

    cancel = submit(emit)
    try:
        while True:
            item = await inbox.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if isinstance(item, StreamEnd):
                return
    finally:
        cancel()


async def completion_of(stream: AsyncIterator[GeneratedToken | StreamEnd]) -> Completion:
    """The completion a stream ends with (an engine's `generate`)."""
    async for item in stream:
        if isinstance(item, StreamEnd):
            return item.completion
    raise EngineFailure("the engine stream ended without a completion")


class RelayedEngine:
    """`InferenceEngine.stream` and `.generate` for an engine that starts a request in
    `_submit(prompt_token_ids, params, emit)` and returns its cancel (see `relay`). Once
    `_stopped` is set (shutdown), new streams are refused with `EngineStopped`."""

    _stopped: threading.Event

    def _submit(
        self, prompt_token_ids: Sequence[int], params: SamplingParams, emit: Emit
    ) -> Callable[[], None]:
        raise NotImplementedError

    def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[GeneratedToken | StreamEnd]:
        return relay(functools.partial(self._submit_unless_stopped, prompt_token_ids, params))

    async def generate(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> Completion:
        return await completion_of(self.stream(prompt_token_ids, params))

    def _submit_unless_stopped(
        self, prompt_token_ids: Sequence[int], params: SamplingParams, emit: Emit
    ) -> Callable[[], None]:
        if self._stopped.is_set():
            raise EngineStopped("the engine has been shut down")
        return self._submit(prompt_token_ids, params, emit)
