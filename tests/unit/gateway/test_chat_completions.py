"""Happy paths of `/v1/chat/completions` and `/v1/models` against the fake engine."""

from __future__ import annotations

import json
import sys

from openai import OpenAI

from tests.unit.gateway.conftest import (
    MODEL,
    assert_openai_error,
    chat_body,
    engine_of,
    sse_data,
)


def test_models_lists_the_served_model(client):
    body = client.get("/v1/models").json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [MODEL]
    assert client.get(f"/v1/models/{MODEL}").json()["id"] == MODEL


def test_chat_completion_has_the_openai_shape(client):
    body = client.post("/v1/chat/completions", json=chat_body("hi there")).json()
    assert body["object"] == "chat.completion" and body["model"] == MODEL
    assert body["id"].startswith("chatcmpl-")
    (choice,) = body["choices"]
    assert choice["message"] == {
        "role": "assistant",
        "content": "echo: hi there",
        "tool_calls": None,
    }
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["completion_tokens"] == len("echo: hi there") + 1  # + EOS
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_max_tokens_cuts_with_finish_reason_length(client):
    body = client.post("/v1/chat/completions", json=chat_body(max_tokens=3)).json()
    assert body["choices"][0]["message"]["content"] == "ech"
    assert body["choices"][0]["finish_reason"] == "length"


def test_max_tokens_is_clipped_to_the_context_left(make_client):
    client = make_client(max_context=40)
    client.post("/v1/chat/completions", json=chat_body(max_tokens=1000))
    prompt, params = engine_of(client).requests[-1]
    assert params.max_tokens == 40 - len(prompt)


def test_sampling_fields_reach_the_engine(client):
    body = chat_body(temperature=0.5, top_p=0.9, top_k=20, seed=7, n=2, stop="xyz")
    client.post("/v1/chat/completions", json=body)
    params = [p for _, p in engine_of(client).requests]
    assert [p.seed for p in params] == [7, 8]
    assert {(p.temperature, p.top_p, p.top_k, p.stop) for p in params} == {(0.5, 0.9, 20, ("xyz",))}


def test_stop_string_cuts_the_text(client):
    body = client.post("/v1/chat/completions", json=chat_body("hello world", stop=["wor"])).json()
    assert body["choices"][0]["message"]["content"] == "echo: hello "


def test_n_gives_n_choices(client):
    body = client.post("/v1/chat/completions", json=chat_body(n=2)).json()
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert body["usage"]["completion_tokens"] == 2 * (len("echo: hello") + 1)


def test_logprobs_and_top_logprobs(client):
    body = client.post(
        "/v1/chat/completions", json=chat_body(logprobs=True, top_logprobs=2, max_tokens=4)
    ).json()
    content = body["choices"][0]["logprobs"]["content"]
    assert [entry["token"] for entry in content] == list("echo")
    assert content[0]["logprob"] < 0 and content[0]["bytes"] == list(b"e")
    assert [alt["token"] for alt in content[0]["top_logprobs"]] == ["e", "f"]


def test_no_logprobs_unless_asked(client):
    body = client.post("/v1/chat/completions", json=chat_body()).json()
    assert body["choices"][0]["logprobs"] is None


def test_content_parts_are_joined(client):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    body = client.post("/v1/chat/completions", json={"model": MODEL, "messages": messages}).json()
    assert body["choices"][0]["message"]["content"] == "echo: a"  # the fake echoes up to "\n"


def test_stream_sends_role_then_content_then_finish_then_done(client):
    response = client.post("/v1/chat/completions", json=chat_body("yo", stream=True))
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_data(response.text)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "echo: yo"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_stream_with_usage_and_n_2(client):
    body = chat_body(stream=True, n=2, stream_options={"include_usage": True}, max_tokens=3)
    events = sse_data(client.post("/v1/chat/completions", json=body).text)
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 6
    finishes = {c["choices"][0]["index"]: c["choices"][0]["finish_reason"] for c in chunks[:-1]}
    assert finishes == {0: "length", 1: "length"}


def test_stream_with_logprobs_carries_one_entry_per_token(client):
    body = chat_body(stream=True, logprobs=True, top_logprobs=1, max_tokens=3)
    chunks = [
        json.loads(e) for e in sse_data(client.post("/v1/chat/completions", json=body).text)[:-1]
    ]
    entries = [
        c["choices"][0]["logprobs"]["content"][0] for c in chunks if c["choices"][0].get("logprobs")
    ]
    assert [e["token"] for e in entries] == list("ech")


TOOLS = [
    {
        "type": "function",
        "function": {"name": "add", "parameters": {"type": "object", "properties": {}}},
    }
]
TOOL_REPLY = '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'


def test_tool_calls_are_parsed_with_finish_reason_tool_calls(make_client):
    client = make_client(reply=lambda _prompt: TOOL_REPLY)
    body = client.post("/v1/chat/completions", json=chat_body(tools=TOOLS)).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}
    assert choice["message"]["content"] is None


def test_named_tool_choice_prefix_is_part_of_the_parsed_text(make_client):
    client = make_client(reply=lambda _prompt: '{"x": 1}}</tool_call>')
    body = chat_body(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "add"}})
    choice = client.post("/v1/chat/completions", json=body).json()["choices"][0]
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "add"


def test_streamed_tool_calls_arrive_as_one_delta_at_the_end(make_client):
    client = make_client(reply=lambda _prompt: TOOL_REPLY)
    response = client.post("/v1/chat/completions", json=chat_body(tools=TOOLS, stream=True))
    chunks = [json.loads(e) for e in sse_data(response.text)[:-1]]
    tool_deltas = [c for c in chunks if c["choices"][0]["delta"].get("tool_calls")]
    assert len(tool_deltas) == 1
    (call,) = tool_deltas[0]["choices"][0]["delta"]["tool_calls"]
    assert call["function"]["name"] == "add" and call["type"] == "function"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_tools_offered_but_plain_text_reply_is_content(client):
    body = client.post("/v1/chat/completions", json=chat_body(tools=TOOLS)).json()
    assert body["choices"][0]["message"]["content"] == "echo: hello"
    assert body["choices"][0]["finish_reason"] == "stop"


def test_the_openai_sdk_works_against_the_app(client):
    sdk = OpenAI(base_url="http://testserver/v1", api_key="sk-none", http_client=client)
    reply = sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "sdk"}])
    assert reply.choices[0].message.content == "echo: sdk"
    stream = sdk.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "sdk"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "echo: sdk"


def test_openapi_schema_is_served(client):
    schema = client.get("/openapi.json").json()
    assert "/v1/chat/completions" in schema["paths"]
    assert "/episodes/{episode_id}/v1/chat/completions" in schema["paths"]


def test_healthz_reports_models_and_versions(client):
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["models"] == [MODEL]
    assert body["policy_versions"] == {MODEL: 0}


def test_without_the_grammar_library_json_formats_are_a_400_and_tools_work_as_before(
    make_client, monkeypatch
):
    monkeypatch.setitem(sys.modules, "llguidance", None)  # `import llguidance` fails
    client = make_client(reply=lambda _prompt: TOOL_REPLY)
    response = client.post(
        "/v1/chat/completions", json=chat_body(response_format={"type": "json_object"})
    )
    error = assert_openai_error(response, 400)
    assert error["param"] == "response_format" and "llguidance" in error["message"]
    body = client.post("/v1/chat/completions", json=chat_body(tools=TOOLS)).json()
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    named = {"type": "function", "function": {"name": "add"}}
    client = make_client(reply=lambda _prompt: '{"x": 1}}</tool_call>')
    body = client.post("/v1/chat/completions", json=chat_body(tools=TOOLS, tool_choice=named))
    assert body.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"
