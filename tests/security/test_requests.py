"""Hostile OpenAI requests (issue 14, F1 F2 F8 F9): each is a 4xx naming the field and the
limit, or a 429 for a key that floods, and nobody else is affected."""

# ruff: noqa: F811 - the gateway unit-test fixtures are imported by name

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest

from gateway.openai.admission import caller_key
from gateway.settings import RequestLimits
from tests.unit.gateway.conftest import (  # noqa: F401 - fixtures
    MODEL,
    assert_openai_error,
    bearer,
    chat_body,
    client,
    engine_of,
    eventually,
    make_client,
    recorder,
    settings,
)

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"


def completion_body(prompt="abc", **fields) -> dict:
    return {"model": MODEL, "prompt": prompt, **fields}


# ---- F1: seeds ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [2**64, 2**63, -(2**63) - 1, 10**30])
@pytest.mark.parametrize(("path", "body"), [(CHAT, chat_body()), (COMPLETIONS, completion_body())])
def test_a_seed_beyond_64_bits_is_a_400_naming_seed_and_its_range(client, path, body, seed):
    error = assert_openai_error(client.post(path, json={**body, "seed": seed}), 400)
    assert error["param"] == "seed"
    assert "9223372036854775807" in error["message"] or "9223372036854775808" in error["message"]
    assert engine_of(client).requests == []


def test_the_largest_seed_with_several_choices_wraps_within_64_bits(client):
    response = client.post(CHAT, json=chat_body(seed=2**63 - 1, n=3))
    assert response.status_code == 200, response.text
    seeds = [p.seed for _, p in engine_of(client).requests]
    assert seeds == [2**63 - 1, -(2**63), -(2**63) + 1]


# ---- F2: how much one request may ask for -----------------------------------------------


def test_thousands_of_prompts_are_a_400_naming_prompt_and_the_limit(client):
    body = completion_body(prompt=["a"] * 2000, n=128, max_tokens=1)
    error = assert_openai_error(client.post(COMPLETIONS, json=body), 400)
    assert error["param"] == "prompt" and "64" in error["message"]
    assert engine_of(client).requests == []


def test_prompts_times_n_beyond_the_limit_is_a_400_naming_n(client):
    body = completion_body(prompt=["a"] * 8, n=9)  # 72 choices
    error = assert_openai_error(client.post(COMPLETIONS, json=body), 400)
    assert error["param"] == "n" and "72" in error["message"] and "64" in error["message"]
    assert client.post(COMPLETIONS, json=completion_body(["a"] * 8, n=8)).status_code == 200


def test_n_beyond_the_limit_is_a_400_naming_n(client):
    error = assert_openai_error(client.post(CHAT, json=chat_body(n=65)), 400)
    assert error["param"] == "n" and "64" in error["message"]


def test_limits_come_from_the_settings(make_client):
    client = make_client(limits=RequestLimits(max_choices_per_request=4))
    error = assert_openai_error(client.post(CHAT, json=chat_body(n=5)), 400)
    assert error["param"] == "n" and "4" in error["message"]


def test_too_many_messages_is_a_400_naming_messages(client):
    messages = [{"role": "user", "content": "x"}] * 1025
    body = {"model": MODEL, "messages": messages}
    error = assert_openai_error(client.post(CHAT, json=body), 400)
    assert error["param"] == "messages" and "1024" in error["message"]


@pytest.mark.parametrize(("path", "body"), [(CHAT, chat_body()), (COMPLETIONS, completion_body())])
def test_a_huge_stop_string_is_a_400_naming_stop(client, path, body):
    error = assert_openai_error(client.post(path, json={**body, "stop": ["x" * 100_000]}), 400)
    assert error["param"] == "stop" and "256" in error["message"]


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [(CHAT, "top_logprobs", 21), (CHAT, "top_logprobs", -1), (COMPLETIONS, "logprobs", 6)],
)
def test_logprob_counts_out_of_range_are_a_400(client, path, field, value):
    body = chat_body(logprobs=True) if path == CHAT else completion_body()
    error = assert_openai_error(client.post(path, json={**body, field: value}), 400)
    assert error["param"] == field


# ---- F8: strings that are not Unicode ----------------------------------------------------

SURROGATE = '"\\ud800"'  # a JSON escape Python decodes to a lone surrogate


@pytest.mark.parametrize(
    ("path", "template", "param"),
    [
        (
            CHAT,
            '{"model": "%s", "messages": [{"role": "user", "content": %s}]}',
            "messages.0.content",
        ),
        (
            CHAT,
            '{"model": "%s", "messages": [{"role": "user", "content": [{"type": "text", "text": %s}]}]}',
            "messages.0.content.0.text",
        ),
        (COMPLETIONS, '{"model": "%s", "prompt": %s}', "prompt"),
        (COMPLETIONS, '{"model": "%s", "prompt": "a", "stop": [%s]}', "stop"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field(client, path, template, param):
    raw = template % (MODEL, SURROGATE)
    response = client.post(path, content=raw, headers={"content-type": "application/json"})
    error = assert_openai_error(response, 400)
    assert error["param"] == param and "Unicode" in error["message"]
    assert client.post(CHAT, json=chat_body("still fine")).status_code == 200


def test_a_lone_surrogate_in_an_unknown_field_is_a_400(client):
    raw = '{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "x": %s}'
    response = client.post(
        CHAT, content=raw % (MODEL, SURROGATE), headers={"content-type": "application/json"}
    )
    assert "Unicode" in assert_openai_error(response, 400)["message"]


# ---- F9: the schema names episode_id -----------------------------------------------------


def test_every_episode_scoped_openai_operation_declares_episode_id(client):
    paths = client.get("/openapi.json").json()["paths"]
    scoped = {p: ops for p, ops in paths.items() if p.startswith("/episodes/{episode_id}/v1/")}
    assert len(scoped) == 6  # chat, completions, models (list, one), responses, messages
    for path, operations in scoped.items():
        for operation in operations.values():
            names = {(p["name"], p["in"]) for p in operation.get("parameters", [])}
            assert ("episode_id", "path") in names, path


# ---- F2: per-key admission ---------------------------------------------------------------


async def _flood_then_others(app, key_a: str, key_b: str):
    transport = httpx.ASGITransport(app=app)
    admission = app.state.gateway.admission
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        body = chat_body("a message long enough to keep the engine busy for a while")
        held = [
            asyncio.create_task(http.post(CHAT, json=body, headers=bearer(key_a))) for _ in range(2)
        ]
        for _ in range(2000):  # both of A's requests are in flight
            if sum(admission._inflight.values()) == 2:
                break
            await asyncio.sleep(0.01)
        refused = await http.post(CHAT, json=chat_body("more"), headers=bearer(key_a))
        other = await http.post(CHAT, json=chat_body("my turn"), headers=bearer(key_b))
        keyless = await http.post(CHAT, json=chat_body("me too"))
        first = await asyncio.gather(*held)
    return refused, other, keyless, first


def test_a_key_past_its_inflight_limit_gets_429_while_other_keys_are_served(make_client):
    client = make_client(limits=RequestLimits(max_inflight_per_key=2), token_delay_s=0.02)
    refused, other, keyless, first = asyncio.run(
        _flood_then_others(client.app, "flooder", "polite")
    )
    error = assert_openai_error_with_retry(refused)
    assert "max_inflight_per_key" in error["message"]
    assert other.status_code == 200 and other.json()["choices"][0]["message"]["content"]
    assert keyless.status_code == 200
    assert [r.status_code for r in first] == [200, 200]
    assert client.app.state.gateway.admission._inflight == {}  # every lease given back


def assert_openai_error_with_retry(response) -> dict:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "rate_limit_exceeded" and error["retry_after"] > 0
    assert int(response.headers["retry-after"]) >= 1
    return error


def test_the_openai_sdk_sees_a_busy_key_as_a_rate_limit_error(make_client):
    client = make_client(limits=RequestLimits(max_inflight_per_key=1))
    admission = client.app.state.gateway.admission
    lease = admission.admit(caller_key("k", None), 1)  # a request of this key in flight
    sdk = openai.OpenAI(
        base_url="http://testserver/v1", api_key="k", http_client=client, max_retries=0
    )
    with pytest.raises(openai.RateLimitError) as raised:
        sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.code == "rate_limit_exceeded"
    lease.release()
    reply = sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "echo: hi"


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("status", [200, 400])
def test_every_call_gives_its_admission_lease_back(client, stream, status):
    body = chat_body(stream=stream, n=3, **({} if status == 200 else {"logit_bias": {"1": 1}}))
    response = client.post(CHAT, json=body, headers=bearer("k"))
    assert response.status_code == status
    admission = client.app.state.gateway.admission
    eventually(lambda: admission._inflight == {})
