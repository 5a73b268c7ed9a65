"""Assistant turns with tool calls through the gateway, with the real tiny tokenizer and a
scripted engine: a tool loop whose turns hold text after `</tool_call>` is one timeline,
whether the answers were whole or streamed and the calls forced or not; a call that
`max_tokens` cut off is text with finish reason `length` (chat), `max_tokens` (Messages)
or `incomplete` (Responses), never a half-parsed call."""

from __future__ import annotations

import json

import pytest

from tests.unit.gateway.conftest import bearer
from tests.unit.gateway.translated_apis import (
    BASE,
    assert_one_timeline,
    new_episode,
    reply_ids,
    scripted_gateway,
    trace_of,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CITIES = ["Paris", "Rome", "Oslo"]


def call_then_text(city: str) -> str:
    return (
        f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{city}"}}}}\n'
        f"</tool_call>\nI will check {city} now."
    )


def chat(client, episode: dict, messages: list[dict], **fields) -> tuple[dict, str]:
    """The assistant message as the OpenAI SDK assembles it, and the finish reason."""
    body = {"model": BASE, "messages": messages, "tools": [WEATHER], "max_tokens": 64, **fields}
    response = client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    assert response.status_code == 200, response.text
    if not fields.get("stream"):
        (choice,) = response.json()["choices"]
        return choice["message"], choice["finish_reason"]
    content, calls, finish = None, [], None
    for line in response.text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        (choice,) = json.loads(line[len("data: ") :])["choices"]
        delta = choice["delta"]
        if delta.get("content"):
            content = (content or "") + delta["content"]
        calls.extend(delta.get("tool_calls") or [])
        finish = choice["finish_reason"] or finish
    message = {"role": "assistant", "content": content, "tool_calls": calls or None}
    return message, finish


def sent_back(message: dict) -> dict:
    """What an agent returns: arguments re-dumped compactly (LangChain, openai-agents)."""
    calls = [
        {
            "id": call["id"],
            "type": "function",
            "function": {
                "name": call["function"]["name"],
                "arguments": json.dumps(
                    json.loads(call["function"]["arguments"]), separators=(",", ":")
                ),
            },
        }
        for call in message["tool_calls"]
    ]
    return {"role": "assistant", "content": message["content"], "tool_calls": calls}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_a_three_call_tool_loop_with_text_after_each_call_is_one_timeline(
    recorder, settings, tiny_tokenizer, stream, tool_choice
):
    tok = tiny_tokenizer
    prefix = '<tool_call>\n{"name": "' if tool_choice == "required" else ""
    replies = [reply_ids(tok, call_then_text(city)[len(prefix) :]) for city in CITIES]
    replies.append(reply_ids(tok, "Sunny everywhere."))
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        messages: list[dict] = [{"role": "user", "content": "Weather in three cities?"}]
        for city in CITIES:
            message, finish = chat(
                client, episode, messages, stream=stream, tool_choice=tool_choice
            )
            assert finish == "tool_calls"
            assert message["content"] == f"I will check {city} now."
            (call,) = message["tool_calls"]
            assert json.loads(call["function"]["arguments"]) == {"city": city}
            messages.append(sent_back(message))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
        answer, finish = chat(client, episode, messages, stream=stream)
        trace = trace_of(client, episode)

    assert (answer["content"], finish) == ("Sunny everywhere.", "stop")
    assert [call["drift"] for call in trace["calls"]][1:] == ["repaired"] * 3
    assert_one_timeline(trace, calls=4)


CUT_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"ci'


def cut(tok, text: str) -> list[int]:
    """`text` as sampled up to `max_tokens`: no EOS, so the engine says "length"."""
    return tok.encode(text)


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_cut_by_max_tokens_is_raw_text_with_finish_reason_length(
    recorder, settings, tiny_tokenizer, stream
):
    tok = tiny_tokenizer
    replies = [cut(tok, CUT_CALL), reply_ids(tok, "Sorry.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        question = {"role": "user", "content": "Weather?"}
        message, finish = chat(client, episode, [question], stream=stream)
        follow_up = [question, message, {"role": "user", "content": "Go on."}]
        chat(client, episode, follow_up)
        trace = trace_of(client, episode)

    assert finish == "length"
    assert not message["tool_calls"]
    assert message["content"] == CUT_CALL
    assert trace["calls"][1]["drift"] in ("exact", "repaired")  # the raw text continues it


def test_whole_calls_before_max_tokens_cut_the_text_after_them_say_length(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [cut(tok, call_then_text("Paris"))]) as (
        client,
        _engine,
    ):
        message, finish = chat(
            client, new_episode(client), [{"role": "user", "content": "Weather?"}]
        )

    assert finish == "length"
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "get_weather"


def test_a_cut_call_is_max_tokens_in_messages_and_incomplete_in_responses(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    tool = {"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}
    function = {"type": "function", "name": "get_weather", **WEATHER["function"]}
    replies = [cut(tok, CUT_CALL), cut(tok, CUT_CALL)]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        headers = {"x-api-key": episode["api_key"], "anthropic-version": "2023-06-01"}
        messages_body = {
            "model": BASE,
            "max_tokens": 64,
            "tools": [tool],
            "messages": [{"role": "user", "content": "Weather?"}],
        }
        anthropic = client.post("/v1/messages", json=messages_body, headers=headers).json()
        responses_body = {"model": BASE, "input": "Weather?", "tools": [function]}
        responses = client.post(
            "/v1/responses", json=responses_body, headers=bearer(episode["api_key"])
        ).json()

    assert anthropic["stop_reason"] == "max_tokens"
    assert anthropic["content"] == [{"type": "text", "text": CUT_CALL}]
    assert responses["status"] == "incomplete"
    assert responses["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["type"] for item in responses["output"]] == ["message"]
    assert responses["output"][0]["content"][0]["text"] == CUT_CALL


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_turn_with_text_after_its_call_sent_back_is_one_timeline(
    recorder, settings, tiny_tokenizer, stream
):
    tok = tiny_tokenizer
    function = {"type": "function", "name": "get_weather", **WEATHER["function"]}
    replies = [reply_ids(tok, call_then_text("Paris")), reply_ids(tok, "Sunny.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        question = {"role": "user", "content": "Weather in Paris?"}
        body = {"model": BASE, "input": [question], "tools": [function], "stream": stream}
        response = client.post("/v1/responses", json=body, headers=bearer(episode["api_key"]))
        assert response.status_code == 200, response.text
        if stream:
            events = [
                json.loads(line[len("data: ") :])
                for line in response.text.splitlines()
                if line.startswith("data: ")
            ]
            first = events[-1]["response"]
        else:
            first = response.json()
        message, call = first["output"]
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
        body = {"model": BASE, "input": [question, message, call, output], "tools": [function]}
        second = client.post("/v1/responses", json=body, headers=bearer(episode["api_key"]))
        assert second.status_code == 200, second.text
        trace = trace_of(client, episode)

    assert message["content"][0]["text"] == "I will check Paris now."
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert trace["calls"][1]["drift"] == "repaired"
    assert_one_timeline(trace, calls=2)
