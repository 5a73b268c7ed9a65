"""Token-drift repair through the gateway: an agent sends back what the gateway generated,
and the next prompt starts with the ids the model sampled, so the episode's calls merge
into one timeline; repairs, unrepaired drifts and snaps are counted in the trace, the run's
metrics and `/metrics`. Real SmolLM2 tokenizer and ChatML template, a scripted engine."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.runs.buffer import BufferedGroup, FinishedEpisode
from gateway.runs.training import step_metrics
from gateway.settings import GatewaySettings
from tests.fakes import FakePolicyTrainer, ScriptedEngine
from tests.unit.gateway.conftest import bearer, create_run, eventually, finish, run_state
from trainer.tokenizer import HFChatTokenizer
from trainer.types import Policy, ServedModel

BASE = "smol"
QUESTION = {"role": "user", "content": "Capital of France?"}
PARIS = "The capital is Paris."


def paris_in_pieces(tok: HFChatTokenizer) -> list[int]:
    """PARIS as a model may sample it: ' Paris' as ' Par' + 'is', which re-tokenizes as one."""
    (eos,) = tok.eos_token_ids
    pieces = tok.encode(" Par") + tok.encode("is")
    assert len(pieces) == 2 and tok.encode(" Paris") != pieces
    return tok.encode("The capital is") + pieces + tok.encode(".") + [eos]


def madrid(tok: HFChatTokenizer) -> list[int]:
    (eos,) = tok.eos_token_ids
    return tok.encode("Madrid.") + [eos]


class Gateway:
    """An app serving one model with the real tokenizer and a scripted engine."""

    def __init__(self, recorder: EpisodeRecorder, settings: GatewaySettings, tok, replies):
        self.engine = ScriptedEngine(tok, replies)
        self.tok = tok
        served = ServedModel(name=BASE, tokenizer=tok, engine=self.engine)
        self.client = TestClient(make_app([served], recorder, settings))
        self.client.__enter__()
        self.open = True

    def close(self) -> None:
        if self.open:
            self.open = False
            self.client.__exit__(None, None, None)


@pytest.fixture
def gateways(recorder, settings) -> Iterator[Any]:
    opened: list[Gateway] = []

    def start(tok, replies, recorder_=None) -> Gateway:
        gateway = Gateway(recorder_ or recorder, settings, tok, replies)
        opened.append(gateway)
        return gateway

    yield start
    for gateway in opened:
        gateway.close()


def open_episode(client: TestClient, **fields) -> dict:
    response = client.post("/swarm/episodes", json={"task_id": "t-1", **fields})
    assert response.status_code == 200, response.text
    return response.json()


def chat(client: TestClient, episode: dict, messages: list[dict], model=BASE, **fields) -> str:
    body = {"model": model, "messages": messages, **fields}
    response = client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    assert response.status_code == 200, response.text
    if fields.get("stream"):
        return PARIS  # the scripted reply; the stream's text is checked elsewhere
    return response.json()["choices"][0]["message"]["content"]


def trace_of(client: TestClient, episode: dict) -> dict:
    response = client.get(f"/swarm/episodes/{episode['episode_id']}")
    assert response.status_code == 200, response.text
    return response.json()


def follow_up(reply: str) -> list[dict]:
    return [
        QUESTION,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "Spain?"},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_sent_back_keeps_its_sampled_ids_and_the_calls_make_one_timeline(
    gateways, tiny_tokenizer, stream
):
    gateway = gateways(tiny_tokenizer, [paris_in_pieces(tiny_tokenizer), madrid(tiny_tokenizer)])
    client = gateway.client
    episode = open_episode(client)
    reply = chat(client, episode, [QUESTION], stream=stream)
    assert reply == PARIS

    chat(client, episode, follow_up(reply))

    trace = trace_of(client, episode)
    first, second = trace["calls"]
    head = first["prompt_token_ids"] + first["completion_token_ids"]
    assert second["prompt_token_ids"][: len(head)] == head
    assert gateway.engine.requests[1][0] == second["prompt_token_ids"]  # what was generated from
    assert (first["drift"], first["continues"]) == ("fresh", None)
    assert (second["drift"], second["continues"]) == ("repaired", 0)
    (timeline,) = trace["timelines"][BASE]
    assert timeline["token_ids"] == second["prompt_token_ids"] + second["completion_token_ids"]
    assert [span["call_index"] for span in timeline["calls"]] == [0, 1]
    span = timeline["calls"][1]
    mask = timeline["loss_mask"]
    assert set(mask[span["prompt_start"] : span["completion_start"]]) == {0}
    assert set(mask[span["completion_start"] : span["completion_end"]]) == {1}
    assert trace["drift"] == {"fresh": 1, "exact": 0, "repaired": 1, "unrepaired": 0, "snaps": 0}
    metrics = client.get("/metrics").text
    assert f'swarmrl_drift_repairs_total{{model="{BASE}"}} 1.0' in metrics


def test_every_trace_token_has_its_text_piece_and_a_timeline_reads_as_its_decoded_ids(
    gateways, tiny_tokenizer
):
    gateway = gateways(tiny_tokenizer, [paris_in_pieces(tiny_tokenizer), madrid(tiny_tokenizer)])
    client = gateway.client
    episode = open_episode(client)
    chat(client, episode, follow_up(chat(client, episode, [QUESTION])))

    trace = trace_of(client, episode)
    for call in trace["calls"]:
        assert len(call["prompt_token_texts"]) == len(call["prompt_token_ids"])
        assert "".join(call["prompt_token_texts"]) == call["prompt_text"]
    (timeline,) = trace["timelines"][BASE]
    assert len(timeline["token_texts"]) == len(timeline["token_ids"])
    decoded = tiny_tokenizer.hf.decode(timeline["token_ids"], skip_special_tokens=False)
    assert "".join(timeline["token_texts"]) == decoded
    assert "<|im_start|>" in timeline["token_texts"]  # special tokens spelled, one piece each


def test_an_edited_reply_is_unrepaired_logged_and_its_call_is_a_snap(
    gateways, tiny_tokenizer, caplog
):
    gateway = gateways(tiny_tokenizer, [paris_in_pieces(tiny_tokenizer), madrid(tiny_tokenizer)])
    client = gateway.client
    episode = open_episode(client)
    chat(client, episode, [QUESTION])

    with caplog.at_level(logging.INFO, logger="gateway.openai.chat"):
        chat(client, episode, follow_up("The capital is Paris, of course."))

    trace = trace_of(client, episode)
    second = trace["calls"][1]
    assert (second["drift"], second["continues"]) == ("unrepaired", 0)
    assert len(trace["timelines"][BASE]) == 2
    assert trace["drift"]["unrepaired"] == 1 and trace["drift"]["snaps"] == 1
    assert trace["drift"]["repaired"] == 0
    logged = [r.getMessage() for r in caplog.records if "unrepaired" in r.getMessage()]
    assert len(logged) == 1 and episode["episode_id"] in logged[0]
    metrics = client.get("/metrics").text
    assert f'swarmrl_drift_unrepaired_total{{model="{BASE}"}} 1.0' in metrics


def test_a_restarted_gateway_loads_the_episodes_history_from_the_database(
    gateways, tiny_tokenizer, settings
):
    before = gateways(tiny_tokenizer, [paris_in_pieces(tiny_tokenizer)])
    episode = open_episode(before.client)
    reply = chat(before.client, episode, [QUESTION])
    before.close()

    after = gateways(
        tiny_tokenizer, [madrid(tiny_tokenizer)], EpisodeRecorder.from_settings(settings)
    )
    chat(after.client, episode, follow_up(reply))

    first, second = trace_of(after.client, episode)["calls"]
    head = first["prompt_token_ids"] + first["completion_token_ids"]
    assert second["prompt_token_ids"][: len(head)] == head
    assert (second["drift"], second["continues"]) == ("repaired", 0)


def test_the_kept_history_is_dropped_when_the_episode_finishes(gateways, tiny_tokenizer):
    gateway = gateways(tiny_tokenizer, [paris_in_pieces(tiny_tokenizer)])
    client = gateway.client
    tracker = client.app.state.gateway.drift
    episode = open_episode(client)
    assert tracker.cached(episode["episode_id"]) == []
    chat(client, episode, [QUESTION])
    assert [prior.index for prior in tracker.cached(episode["episode_id"])] == [0]

    assert finish(client, episode, 1.0).status_code == 200

    assert tracker.cached(episode["episode_id"]) is None
    assert episode["episode_id"] not in tracker._priors


def test_plain_inference_never_asks_for_an_episode_history(gateways, tiny_tokenizer, monkeypatch):
    gateway = gateways(tiny_tokenizer, [madrid(tiny_tokenizer)])
    tracker = gateway.client.app.state.gateway.drift

    def refuse(*_args):
        raise AssertionError("plain inference looked up a history")

    monkeypatch.setattr(tracker, "cached", refuse)
    monkeypatch.setattr(tracker, "load", refuse)
    body = {"model": BASE, "messages": [QUESTION]}
    response = gateway.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text


# -- runs --------------------------------------------------------------------------------------


class ScriptedPolicyFactory:
    """Policies served with the real tokenizer and a scripted engine."""

    def __init__(self, tok: HFChatTokenizer, replies: list[list[int]]):
        self.tok = tok
        self.replies = replies
        self.trainers: dict[str, FakePolicyTrainer] = {}

    async def create(self, *, served_name: str, **_options: Any) -> Policy:
        engine = ScriptedEngine(self.tok, self.replies)
        trainer = self.trainers[served_name] = FakePolicyTrainer(engine)
        return Policy(ServedModel(name=served_name, tokenizer=self.tok, engine=engine), trainer)


def test_a_runs_step_metrics_sum_its_episodes_drift_and_samples_carry_what_they_continue(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    factory = ScriptedPolicyFactory(tok, [paris_in_pieces(tok), madrid(tok), madrid(tok)])
    served = ServedModel(BASE, tok, ScriptedEngine(tok))
    with TestClient(make_app([served], recorder, settings, policy_factory=factory)) as client:
        create_run(client, group_size=1, zero_variance_groups="keep", batch_groups=1, max_steps=1)
        episode = open_episode(client, run="r")
        reply = chat(client, episode, [QUESTION], model="r/policy")
        chat(client, episode, follow_up(reply), model="r/policy")  # repaired
        chat(client, episode, follow_up("Paris!"), model="r/policy")  # unrepaired
        trace = trace_of(client, episode)
        assert finish(client, episode, 1.0).status_code == 200
        eventually(lambda: run_state(client)["step"] >= 1)
        points = client.get("/runs/r/metrics").json()

    assert set(trace["timelines"]) == {"policy"} and len(trace["timelines"]["policy"]) == 2
    values = {(p["policy"], p["name"]): p["value"] for p in points}
    assert values[(None, "drift/repaired")] == 1.0
    assert values[(None, "drift/unrepaired")] == 1.0
    (groups, _settings), *_ = factory.trainers["r/policy"].steps
    samples = groups[0].episodes[0].samples
    assert [(s.call_index, s.continues) for s in samples] == [(0, None), (1, 0), (2, 0)]


def test_step_metrics_sum_drift_over_the_batchs_episodes():
    def episode(name: str, drift: dict[str, int]) -> FinishedEpisode:
        return FinishedEpisode(name, None, rewards={}, drift=drift)

    batch = [
        BufferedGroup("a", [episode("a", {"repaired": 2, "fresh": 1})]),
        BufferedGroup("b", [episode("b", {"repaired": 1, "unrepaired": 1}), episode("c", {})]),
    ]
    values = step_metrics(batch, {})
    assert values[(None, "drift/repaired")] == 3.0
    assert values[(None, "drift/unrepaired")] == 1.0
