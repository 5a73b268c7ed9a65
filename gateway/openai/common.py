"""Small pieces both completion services share: ids, usage, recording off the loop.

Knows nothing about HTTP; recording goes through `EpisodeRecorder` in a worker thread so
the event loop never waits on the database.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

import anyio

from gateway.openai.wire import Usage
from gateway.recording.recorder import CallRecord, EpisodeRecorder
from trainer.types import ChatTokenizer, Completion, TokenLogprob

DONE_EVENT = "[DONE]"


def new_request_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


def now_s() -> int:
    return int(time.time())


def usage_of(prompt_tokens: int, completions: Sequence[Completion]) -> Usage:
    completion_tokens = sum(len(c.token_ids) for c in completions)
    return Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )


async def record_calls(
    recorder: EpisodeRecorder, episode_id: str | None, calls: Sequence[CallRecord]
) -> None:
    """Persist `calls` into the episode (no-op for plain inference) before answering."""
    if episode_id is None or not calls:
        return
    await anyio.to_thread.run_sync(recorder.record_calls, episode_id, calls)


def top_alternatives(
    tokenizer: ChatTokenizer, alternatives: Sequence[TokenLogprob], limit: int
) -> list[tuple[str, float]]:
    return [(tokenizer.token_text(alt.token_id), alt.logprob) for alt in alternatives[:limit]]
