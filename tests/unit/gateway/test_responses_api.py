"""`POST /v1/responses` (the OpenAI Responses API) through the chat core: answers and
streaming events in the Responses shape, calls recorded into the episode like chat calls
(token ids, logprobs, drift repair, one timeline for a multi-turn exchange), function
tools, `previous_response_id` within an episode, and OpenAI-shaped errors. Real tiny-model
tokenizer with a scripted engine; the real tiny model at the end."""

from __future__ import annotations

import pytest

from gateway.openai.responses import ConversationStore
from gateway.openai.wire import ChatMessage
from tests.unit.gateway.conftest import (
    assert_openai_error,
    bearer,
    create_run,
    finish,
    open_episode,
)
from tests.unit.gateway.translated_apis import (
    BASE,
    PARIS,
    WEATHER_CALL,
    assert_one_timeline,
    new_episode,
    recorded_messages,
    reply_ids,
    scripted_gateway,
    sse_events,
    trace_of,
)

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def respond(client, episode: dict | None, status: int = 200, **body) -> dict:
    headers = bearer(episode["api_key"]) if episode else None
    response = client.post("/v1/responses", json={"model": BASE, **body}, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


def test_a_string_input_is_answered_as_a_response_and_recorded_with_its_token_ids(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, PARIS)]) as (client, engine):
        episode = new_episode(client)
        answer = respond(
            client, episode, input="Capital of France?", instructions="Be brief.", store=False
        )
        trace = trace_of(client, episode)

    assert answer["object"] == "response" and answer["status"] == "completed"
    assert answer["id"].startswith("resp") and answer["instructions"] == "Be brief."
    (message,) = answer["output"]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0] == {
        "type": "output_text",
        "text": PARIS,
        "annotations": [],
        "logprobs": [],
    }
    (call,) = trace["calls"]
    assert call["request_id"] == answer["id"]  # the trace names the response its client got
    assert call["completion_token_ids"] == reply_ids(tok, PARIS)
    assert call["prompt_token_ids"] == engine.requests[0][0]
    assert len(call["logprobs"]) == len(call["completion_token_ids"])
    assert recorded_messages(recorder, episode)[0] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    usage = answer["usage"]
    assert usage["input_tokens"] == len(call["prompt_token_ids"])
    assert usage["output_tokens"] == len(call["completion_token_ids"])
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_a_function_call_sent_back_with_its_output_continues_one_timeline(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    replies = [reply_ids(tok, WEATHER_CALL), reply_ids(tok, "It is sunny in Paris.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, _engine):
        episode = new_episode(client)
        question = {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}
        first = respond(client, episode, input=[question], tools=[WEATHER_TOOL])
        (call,) = first["output"]
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
        second = respond(client, episode, input=[question, call, output], tools=[WEATHER_TOOL])
        trace = trace_of(client, episode)

    assert call["type"] == "function_call" and call["name"] == "get_weather"
    assert call["arguments"] == '{"city": "Paris"}' and call["status"] == "completed"
    assert second["output"][0]["content"][0]["text"] == "It is sunny in Paris."
    assert_one_timeline(trace, calls=2)
    assert recorded_messages(recorder, episode)[1][-1] == {
        "role": "tool",
        "content": "sunny",
        "tool_call_id": call["call_id"],
    }


def test_previous_response_id_continues_the_conversation_in_one_timeline(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    replies = [reply_ids(tok, WEATHER_CALL), reply_ids(tok, "Sunny."), reply_ids(tok, "Madrid.")]
    with scripted_gateway(recorder, settings, tok, replies) as (client, engine):
        episode = new_episode(client)
        first = respond(client, episode, input="Weather?", tools=[WEATHER_TOOL], instructions="I")
        (call,) = first["output"]
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
        second = respond(  # like OpenAI's, tools and instructions are not carried over
            client,
            episode,
            input=[output],
            previous_response_id=first["id"],
            instructions="I",
            tools=[WEATHER_TOOL],
        )
        third = respond(client, episode, input="And Spain?", previous_response_id=second["id"])
        trace = trace_of(client, episode)

    assert second["previous_response_id"] == first["id"]
    assert third["output"][0]["content"][0]["text"] == "Madrid."
    # the third call had no instructions: its chat starts without the system message
    assert [m["role"] for m in recorded_messages(recorder, episode)[2]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    calls = trace["calls"]
    head = calls[0]["prompt_token_ids"] + calls[0]["completion_token_ids"]
    assert engine.requests[1][0][: len(head)] == head
    assert calls[1]["drift"] in ("exact", "repaired")
    assert len(trace["timelines"][BASE]) == 2  # the third call has no instructions, no tools


def test_an_unknown_previous_response_id_is_an_openai_shaped_404(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, PARIS)] * 2) as (client, _):
        one, other = new_episode(client), new_episode(client)
        kept = respond(client, one, input="Hi")
        unkept = respond(client, one, input="Hi", store=False)
        for episode, previous in [(one, "resp-nope"), (other, kept["id"]), (one, unkept["id"])]:
            response = client.post(
                "/v1/responses",
                json={"model": BASE, "input": "again", "previous_response_id": previous},
                headers=bearer(episode["api_key"]),
            )
            error = assert_openai_error(response, 404, "previous_response_not_found")
            assert error["param"] == "previous_response_id"


def test_streamed_text_arrives_as_response_events_in_order_and_is_recorded(
    recorder, settings, tiny_tokenizer
):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, PARIS)]) as (client, _):
        episode = new_episode(client)
        response = client.post(
            "/v1/responses",
            json={"model": BASE, "input": "Capital of France?", "stream": True},
            headers=bearer(episode["api_key"]),
        )
        trace = trace_of(client, episode)

    assert response.status_code == 200, response.text
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert "".join(deltas) == PARIS and len(deltas) > 1
    assert [n for n in names if n != "response.output_text.delta"] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"][0]["content"][0]["text"] == PARIS
    assert completed["usage"]["output_tokens"] == len(reply_ids(tok, PARIS))
    assert trace["calls"][0]["completion_token_ids"] == reply_ids(tok, PARIS)
    assert trace["calls"][0]["request_id"] == completed["id"] == events[0][1]["response"]["id"]


def test_a_streamed_function_call_has_its_argument_events(recorder, settings, tiny_tokenizer):
    tok = tiny_tokenizer
    with scripted_gateway(recorder, settings, tok, [reply_ids(tok, WEATHER_CALL)]) as (client, _):
        body = {"model": BASE, "input": "Weather?", "tools": [WEATHER_TOOL], "stream": True}
        events = sse_events(client.post("/v1/responses", json=body).text)

    names = [name for name, _ in events]
    assert names[2:] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added, delta, done, item_done = (data for _, data in events[2:6])
    assert added["item"]["type"] == "function_call" and added["item"]["arguments"] == ""
    assert delta["delta"] == done["arguments"] == '{"city": "Paris"}'
    assert done["name"] == "get_weather" and item_done["item"]["status"] == "completed"
    assert events[-1][1]["response"]["output"] == [item_done["item"]]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input.0.type"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input.0.content.0.type",
        ),
        ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools.0.type"),
        ({"input": "hi", "tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"input": "hi", "temperature": 3}, "temperature"),
        ({"input": []}, "input"),
        ({}, "input"),
    ],
)
def test_bad_input_is_an_openai_shaped_400_naming_the_field(client, body, param):
    response = client.post("/v1/responses", json={"model": "fake-model", **body})
    error = assert_openai_error(response, 400)
    assert error["param"] == param, error


def test_an_unknown_model_and_a_foreign_key_are_openai_shaped_errors(client):
    response = client.post("/v1/responses", json={"model": "nope", "input": "hi"})
    assert_openai_error(response, 404, "model_not_found")
    response = client.post(
        "/v1/responses", json={"model": "fake-model", "input": "hi"}, headers=bearer("sk-ep-nope")
    )
    assert_openai_error(response, 401)


def test_the_kept_conversations_go_when_the_episode_finishes(client):
    episode = new_episode(client)
    answer = respond(client, episode, input="hi", model="fake-model")
    store = client.app.state.gateway.responses.store
    assert store.get(episode["episode_id"], answer["id"]) is not None
    assert finish(client, episode).status_code == 200
    assert store.get(episode["episode_id"], answer["id"]) is None


def test_the_conversation_store_is_bounded_per_episode_and_in_episodes():
    store = ConversationStore(per_key=2, keys=2)
    hello = [ChatMessage(role="user", content="hi")]
    for response_id in ("a", "b", "c"):
        store.put("e1", response_id, hello)
    assert store.get("e1", "a") is None and store.get("e1", "c") == hello
    store.put("e2", "x", hello)
    store.put(None, "y", hello)  # plain inference has its own key
    assert store.get("e1", "c") is None  # the least recently used episode went
    assert store.get("e2", "x") == hello and store.get(None, "y") == hello


# -- the real tiny model -------------------------------------------------------------------


@pytest.mark.slow
def test_a_tiny_model_exchange_is_recorded_with_logprobs_as_one_timeline(make_client, tiny_factory):
    client = make_client(policy_factory=tiny_factory)
    create_run(client, policies={"policy": {"base_model": "tiny"}}, group_size=1, max_steps=1)
    episode = open_episode(client)
    settings = {"model": episode["model"], "max_output_tokens": 6, "temperature": 0}
    first = respond(client, episode, input="Say hi.", **settings)
    second = respond(client, episode, input="Again.", previous_response_id=first["id"], **settings)
    trace = trace_of(client, episode)

    assert second["previous_response_id"] == first["id"]
    assert len(trace["calls"]) == 2
    for call, answer in zip(trace["calls"], (first, second), strict=True):
        assert len(call["logprobs"]) == len(call["completion_token_ids"]) > 0
        assert answer["usage"]["output_tokens"] == len(call["completion_token_ids"])
    assert trace["calls"][1]["drift"] in ("exact", "repaired")
    assert len(trace["timelines"]["policy"]) == 1
