"""Helpers for the Responses and Messages API tests: a gateway serving one model with the
real tiny-model tokenizer (SmolLM2's ChatML template) and a scripted engine, so replies —
tool calls included — are chosen token ids; SSE events read back as (event, data)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from fastapi.testclient import TestClient

from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.fakes import ScriptedEngine
from trainer.tokenizer import HFChatTokenizer
from trainer.types import ServedModel

BASE = "smol"
PARIS = "The capital is Paris."
WEATHER_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def reply_ids(tok: HFChatTokenizer, text: str) -> list[int]:
    """`text` as the model would sample it, ending on EOS."""
    (eos,) = tok.eos_token_ids
    return tok.encode(text) + [eos]


@contextmanager
def scripted_gateway(
    recorder: EpisodeRecorder,
    settings: GatewaySettings,
    tok: HFChatTokenizer,
    replies: Sequence[Sequence[int]],
) -> Iterator[tuple[TestClient, ScriptedEngine]]:
    engine = ScriptedEngine(tok, replies)
    served = ServedModel(name=BASE, tokenizer=tok, engine=engine)
    with TestClient(make_app([served], recorder, settings)) as client:
        yield client, engine


def new_episode(client: TestClient) -> dict:
    response = client.post("/swarm/episodes", json={"task_id": "t-1"})
    assert response.status_code == 200, response.text
    return response.json()


def trace_of(client: TestClient, episode: dict) -> dict:
    response = client.get(f"/swarm/episodes/{episode['episode_id']}")
    assert response.status_code == 200, response.text
    return response.json()


def recorded_messages(recorder: EpisodeRecorder, episode: dict) -> list[list[dict]]:
    """The chat messages each recorded call was rendered from."""
    return [call.messages for call in recorder.get_calls(episode["episode_id"])]


def sse_events(text: str) -> list[tuple[str, dict]]:
    """An SSE body's events as (event name, parsed data), in order."""
    events = []
    name = None
    for line in text.splitlines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
            name = None
    return events


def assert_one_timeline(trace: dict, calls: int) -> dict:
    """Every call of the episode continues the one before: one timeline of them all."""
    assert len(trace["calls"]) == calls
    for call in trace["calls"][1:]:
        assert call["drift"] in ("exact", "repaired"), call["drift"]
    (timeline,) = trace["timelines"][BASE]
    last = trace["calls"][-1]
    assert timeline["token_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]
    assert [span["call_index"] for span in timeline["calls"]] == list(range(calls))
    return timeline
