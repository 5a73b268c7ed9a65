"""Happy paths of `/v1/completions`."""

from __future__ import annotations

import json

from tests.unit.gateway.conftest import MODEL, assert_openai_error, engine_of, sse_data


def test_text_prompt_is_completed(client):
    body = client.post(
        "/v1/completions", json={"model": MODEL, "prompt": "abc", "max_tokens": 100}
    ).json()
    assert body["object"] == "text_completion"
    assert body["choices"][0]["text"] == "echo: abc"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 3


def test_default_max_tokens_is_16_like_openai(client):
    client.post("/v1/completions", json={"model": MODEL, "prompt": "abc"})
    assert engine_of(client).requests[-1][1].max_tokens == 16


def test_token_id_prompts_and_batches(client):
    ids = [ord(c) + 16 for c in "xy"]
    body = client.post(
        "/v1/completions", json={"model": MODEL, "prompt": [ids, ids], "n": 2}
    ).json()
    assert [c["index"] for c in body["choices"]] == [0, 1, 2, 3]
    assert body["choices"][3]["text"] == "echo: xy"


def test_legacy_logprobs(client):
    body = client.post(
        "/v1/completions", json={"model": MODEL, "prompt": "a", "logprobs": 2, "max_tokens": 3}
    ).json()
    logprobs = body["choices"][0]["logprobs"]
    assert logprobs["tokens"] == list("ech") and logprobs["text_offset"] == [0, 1, 2]
    assert list(logprobs["top_logprobs"][0]) == ["e", "f"]


def test_echo_is_an_unsupported_400(client):
    response = client.post("/v1/completions", json={"model": MODEL, "prompt": "a", "echo": True})
    assert assert_openai_error(response, 400)["param"] == "echo"


def test_streamed_completion(client):
    response = client.post(
        "/v1/completions",
        json={
            "model": MODEL,
            "prompt": "ab",
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    events = sse_data(response.text)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks if c["choices"]) == "echo: ab"
    assert chunks[-1]["usage"]["prompt_tokens"] == 2
