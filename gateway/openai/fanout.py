"""Running the `n` engine requests of one API call concurrently.

Owns: `generate_all` (wait for every completion; one failure cancels the rest), `collect`
(a stream's completion, with a hook for its first token; the stream closed however the
wait ends — that is how a cancelled non-streamed call cancels its engine request) and
`merge_streams` (interleave token streams as they arrive, and close every engine stream
when the consumer stops early — that is how a client disconnect cancels generation).
Knows nothing about HTTP or OpenAI shapes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

from trainer.errors import EngineFailure
from trainer.types import Completion, GeneratedToken, StreamEnd

T = TypeVar("T")
_DONE = object()


async def generate_all(requests: Sequence[Awaitable[T]]) -> list[T]:
    if len(requests) == 1:
        return [await requests[0]]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_await(request)) for request in requests]
    return [task.result() for task in tasks]


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def collect(
    stream: AsyncIterator[GeneratedToken | StreamEnd],
    first_token: Callable[[], None] | None = None,
) -> Completion:
    """The completion an engine stream ends with; the stream is closed on any way out.
    `first_token` is called when the stream's first token arrives (request timing)."""
    try:
        async for item in stream:
            if isinstance(item, StreamEnd):
                return item.completion
            if first_token is not None:
                first_token()
                first_token = None
    finally:
        await close_stream(stream)
    raise EngineFailure("the engine stream ended without a completion")


async def close_stream(stream: AsyncIterator[object]) -> None:
    """Close an async iterator even while our own task is being cancelled."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


async def merge_streams(streams: Sequence[AsyncIterator[T]]) -> AsyncIterator[tuple[int, T]]:
    """Yield `(stream_index, item)` in arrival order until every stream is exhausted."""
    if len(streams) == 1:
        try:
            async for item in streams[0]:
                yield 0, item
        finally:
            await close_stream(streams[0])
        return

    queue: asyncio.Queue[tuple[int, object]] = asyncio.Queue()

    async def pump(index: int, stream: AsyncIterator[T]) -> None:
        try:
            async for item in stream:
                await queue.put((index, item))
            await queue.put((index, _DONE))
        except Exception as error:  # handed to the consumer, which re-raises it
            await queue.put((index, error))
        finally:
            await close_stream(stream)

    tasks = [asyncio.create_task(pump(i, stream)) for i, stream in enumerate(streams)]
    try:
        remaining = len(streams)
        while remaining:
            index, item = await queue.get()
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.gather(*tasks, return_exceptions=True)
