"""`GET /metrics` is Prometheus text with per-run and per-model serving series (latency, time
to first token, tokens, engine load), and each app has its own registry."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from gateway.http.app import make_app
from gateway.http.telemetry import EngineLoadCollector
from gateway.registry import ModelRegistry
from tests.fakes import CharTokenizer, EchoEngine
from tests.unit.gateway.conftest import (
    MODEL,
    chat_as,
    chat_body,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
    sse_data,
)
from trainer.types import ServedModel


def scrape(client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_parse_as_prometheus_text_with_run_series(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for reward in (1.0, 0.5):
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode)
        finish(trainer_client, episode, reward)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    trainer_client.post("/swarm/clients", json={"name": "w"})

    samples = scrape(trainer_client)
    run = (("run", "r"),)
    assert samples[("swarmrl_run_step", run)] == 1
    assert samples[("swarmrl_run_status", (("run", "r"), ("status", "running")))] == 1
    assert samples[("swarmrl_run_status", (("run", "r"), ("status", "paused")))] == 0
    assert samples[("swarmrl_policy_version", (("policy", "policy"), ("run", "r")))] == 1
    assert samples[("swarmrl_run_reward_mean", (("policy", "policy"), ("run", "r")))] == 0.75
    assert samples[("swarmrl_run_episodes_total", (("outcome", "finished"), ("run", "r")))] == 2
    assert samples[("swarmrl_run_samples_total", (("outcome", "trained"), ("run", "r")))] == 2
    assert samples[("swarmrl_run_samples_buffered", run)] == 0
    assert samples[("swarmrl_clients_active", ())] == 1
    chat = (("method", "POST"), ("route", "/v1/chat/completions"), ("status", "200"))
    assert samples[("swarmrl_http_requests_total", chat)] == 2
    finish_route = (
        ("method", "POST"),
        ("route", "/swarm/episodes/{episode_id}/finish"),
        ("status", "200"),
    )
    assert samples[("swarmrl_http_requests_total", finish_route)] == 2


def test_each_app_has_its_own_registry(make_client):
    first, second = make_client(), make_client()
    first.get("/healthz")
    first.get("/healthz")
    second.get("/healthz")
    health = (("method", "GET"), ("route", "/healthz"), ("status", "200"))
    assert scrape(first)[("swarmrl_http_requests_total", health)] == 2
    assert scrape(second)[("swarmrl_http_requests_total", health)] == 1


def test_unknown_routes_are_counted_under_one_label(client):
    client.get("/no/such/route/1")
    client.get("/no/such/route/2")
    unmatched = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert scrape(client)[("swarmrl_http_requests_total", unmatched)] == 2


# -- serving: latency, time to first token, tokens, engine load ---------------------------

SERVING_SERIES = (
    "swarmrl_request_latency_seconds_count",
    "swarmrl_request_latency_seconds_sum",
    "swarmrl_time_to_first_token_seconds_count",
    "swarmrl_time_to_first_token_seconds_sum",
    "swarmrl_generated_tokens_total",
)
ENGINE_SERIES = (
    "swarmrl_engine_requests_waiting",
    "swarmrl_engine_sequences_active",
    "swarmrl_engine_max_batch",
    "swarmrl_engine_batch_occupancy",
)


def serving(client, model: str = MODEL) -> dict[str, float]:
    samples = scrape(client)
    return {name: samples.get((name, (("model", model),)), 0.0) for name in SERVING_SERIES}


def grew(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before[name] for name in SERVING_SERIES}


def streamed_usage(response) -> dict:
    assert response.status_code == 200, response.text
    payloads = sse_data(response.text)
    assert payloads[-1] == "[DONE]"
    return json.loads(payloads[-2])["usage"]


def check_one_request(delta: dict[str, float], completion_tokens: int) -> None:
    assert delta["swarmrl_request_latency_seconds_count"] == 1
    assert delta["swarmrl_time_to_first_token_seconds_count"] == 1
    ttft = delta["swarmrl_time_to_first_token_seconds_sum"]
    assert 0 < ttft <= delta["swarmrl_request_latency_seconds_sum"]
    assert delta["swarmrl_generated_tokens_total"] == completion_tokens > 0


@pytest.mark.parametrize("n", [1, 3])
def test_a_whole_and_a_streamed_chat_each_count_once_with_their_tokens(make_client, n):
    client = make_client(token_delay_s=0.002)
    before = serving(client)
    response = client.post("/v1/chat/completions", json=chat_body("whole", n=n))
    assert response.status_code == 200, response.text
    after_whole = serving(client)
    check_one_request(grew(before, after_whole), response.json()["usage"]["completion_tokens"])

    body = chat_body("streamed", n=n, stream=True, stream_options={"include_usage": True})
    usage = streamed_usage(client.post("/v1/chat/completions", json=body))
    check_one_request(grew(after_whole, serving(client)), usage["completion_tokens"])


def test_text_completions_count_too_streamed_and_not(make_client):
    client = make_client(token_delay_s=0.002)
    before = serving(client)
    body = {"model": MODEL, "prompt": ["one", "two"], "max_tokens": 4}
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 200, response.text
    after_whole = serving(client)
    check_one_request(grew(before, after_whole), response.json()["usage"]["completion_tokens"])

    body |= {"stream": True, "stream_options": {"include_usage": True}}
    usage = streamed_usage(client.post("/v1/completions", json=body))
    check_one_request(grew(after_whole, serving(client)), usage["completion_tokens"])


def test_refused_requests_are_not_timed(client):
    response = client.post("/v1/chat/completions", json=chat_body(top_logprobs=2))
    assert response.status_code == 400
    assert set(serving(client).values()) == {0.0}


def test_an_engine_without_load_gauges_is_left_out_of_them(client):
    samples = scrape(client)
    assert not [key for key in samples if key[0] in ENGINE_SERIES]


@pytest.fixture
def tiny_served(tiny_loaded, tiny_tokenizer) -> Iterator[Any]:
    from trainer.config import EngineConfig
    from trainer.engine import TorchEngine
    from trainer.types import ServedModel

    engine = TorchEngine(tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=2))
    try:
        yield ServedModel(name="tiny", tokenizer=tiny_tokenizer, engine=engine)
    finally:
        engine.shutdown()


def test_the_tiny_model_reports_latency_tokens_and_its_engine_load(tiny_served, recorder, settings):
    app = make_app([tiny_served], recorder, settings)
    with TestClient(app) as client:
        before = serving(client, "tiny")
        body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        after_whole = serving(client, "tiny")
        check_one_request(grew(before, after_whole), response.json()["usage"]["completion_tokens"])
        body |= {"stream": True, "stream_options": {"include_usage": True}}
        usage = streamed_usage(client.post("/v1/chat/completions", json=body))
        check_one_request(grew(after_whole, serving(client, "tiny")), usage["completion_tokens"])

        samples = scrape(client)
        tiny = (("model", "tiny"),)
        assert samples[("swarmrl_engine_max_batch", tiny)] == 2
        assert samples[("swarmrl_engine_requests_waiting", tiny)] == 0
        assert 0 <= samples[("swarmrl_engine_sequences_active", tiny)] <= 2
        assert 0 <= samples[("swarmrl_engine_batch_occupancy", tiny)] <= 1


def test_engine_load_gauges_show_a_full_batch_and_the_request_waiting_behind_it(tiny_served):
    from trainer.types import SamplingParams

    engine = tiny_served.engine
    collector = EngineLoadCollector(ModelRegistry([tiny_served]))
    params = SamplingParams(max_tokens=500, ignore_eos=True)
    prompt = tiny_served.tokenizer.encode("hello there")

    def gauges() -> dict[str, float]:
        return {
            family.name: family.samples[0].value for family in collector.collect() if family.samples
        }

    async def three_requests_on_a_batch_of_two() -> dict[str, float]:
        streams = [engine.stream(prompt, params) for _ in range(3)]
        firsts = [asyncio.ensure_future(anext(stream)) for stream in streams]  # submits each
        try:
            deadline = time.monotonic() + 30
            while (engine.sequences_active, engine.requests_waiting) != (2, 1):
                assert time.monotonic() < deadline, "the batch never filled with one waiting"
                await asyncio.sleep(0.005)
            return gauges()
        finally:
            for first in firsts:
                first.cancel()
            await asyncio.gather(*firsts, return_exceptions=True)
            for stream in streams:
                await stream.aclose()

    seen = anyio.run(three_requests_on_a_batch_of_two)
    assert seen == {
        "swarmrl_engine_requests_waiting": 1,
        "swarmrl_engine_sequences_active": 2,
        "swarmrl_engine_max_batch": 2,
        "swarmrl_engine_batch_occupancy": 1.0,
    }


class LoadedEchoEngine(EchoEngine):
    """The fake engine with `trainer.types.EngineLoad` gauges."""

    requests_waiting = 3
    sequences_active = 1
    max_batch = 4


def test_every_series_is_listed_with_its_labels_in_the_gateway_docs(recorder, settings, factory):
    tokenizer = CharTokenizer()
    served = ServedModel(name=MODEL, tokenizer=tokenizer, engine=LoadedEchoEngine(tokenizer))
    app = make_app([served], recorder, settings, policy_factory=factory)
    with TestClient(app) as client:
        create_run(client, group_size=1, batch_groups=1)
        finish(client, chat_as_episode(client), 1.0)
        response = client.get("/metrics")
    families = list(text_string_to_metric_families(response.text))
    load = {
        s.name: s.value for f in families for s in f.samples if f.name.startswith("swarmrl_engine")
    }
    assert load == {
        "swarmrl_engine_requests_waiting": 3,
        "swarmrl_engine_sequences_active": 1,
        "swarmrl_engine_max_batch": 4,
        "swarmrl_engine_batch_occupancy": 0.25,
    }
    docs = (Path(__file__).parents[3] / "docs" / "gateway.md").read_text()
    listed: dict[str, set[str]] = {}  # `name{label,label=value|value}`, first mention
    for name, labels in re.findall(r"`(swarmrl_\w+)(?:\{([^}]*)\})?`", docs):
        listed.setdefault(name, {label.split("=")[0] for label in labels.split(",") if label})
    for family in families:
        if family.name.endswith("_created"):  # prometheus-client's start time of each series
            continue
        name = family.name + ("_total" if family.type == "counter" else "")
        assert name in listed, name
        if family.samples:  # (a family with nothing counted yet shows no labels)
            labels = {label for sample in family.samples for label in sample.labels} - {"le"}
            assert listed[name] == labels, (name, labels)


def chat_as_episode(client) -> dict:
    episode = open_episode(client)
    chat_as(client, episode)
    return episode
