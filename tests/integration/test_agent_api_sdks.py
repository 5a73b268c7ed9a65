"""The Responses and Messages APIs from the official SDKs against a real `gateway serve`
(the tiny random model: what is checked is the wire and the recording, not what it says):
`openai`'s `client.responses.create` (whole and streamed, with a function tool; the
stream helper that rebuilds the response from its events), `previous_response_id`, and —
when the `anthropic` SDK is installed — `messages.create` with a tool; each exchange is
recorded into its episode with token ids and logprobs as one timeline."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.integration.conftest import shared_tiny

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        # a short value and no other keys: a forced call ends within its token budget
        # (a call cut by max_tokens is text, not a call)
        "properties": {"city": {"type": "string", "maxLength": 6}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": False,
}
FORCED = {"type": "function", "name": "get_weather"}


@pytest.fixture(scope="module")
def tiny_gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # episodes of its own; no run


def new_episode(gw) -> dict:
    response = httpx.post(gw.url + "/swarm/episodes", json={"task_id": "weather"})
    assert response.status_code == 200, response.text
    return response.json()


def trace_of(gw, episode: dict) -> dict:
    return httpx.get(f"{gw.url}/swarm/episodes/{episode['episode_id']}").json()


def assert_recorded_as_one_timeline(trace: dict, calls: int) -> None:
    assert len(trace["calls"]) == calls
    for call in trace["calls"]:
        assert len(call["logprobs"]) == len(call["completion_token_ids"]) > 0
        assert call["prompt_token_ids"]
    (timelines,) = trace["timelines"].values()
    assert len(timelines) == 1, [c["drift"] for c in trace["calls"]]
    last = trace["calls"][-1]
    assert timelines[0]["token_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]


def test_responses_with_a_tool_and_its_output_are_one_recorded_timeline(tiny_gateway):
    episode = new_episode(tiny_gateway)
    llm = openai.OpenAI(base_url=tiny_gateway.v1, api_key=episode["api_key"], max_retries=0)
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = llm.responses.create(
        model="tiny", input=question, tools=[WEATHER], tool_choice=FORCED, max_output_tokens=32
    )
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and call.call_id
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = llm.responses.create(
        model="tiny",
        input=[*question, *(item.model_dump() for item in first.output), output],
        tools=[WEATHER],
        max_output_tokens=8,
    )
    third = llm.responses.create(
        model="tiny",
        input="Thanks.",
        previous_response_id=second.id,
        tools=[WEATHER],
        max_output_tokens=8,
    )

    assert first.status in ("completed", "incomplete") and first.usage.output_tokens > 0
    assert third.previous_response_id == second.id
    assert_recorded_as_one_timeline(trace_of(tiny_gateway, episode), calls=3)


def test_a_streamed_response_rebuilds_through_the_sdks_stream_helper(tiny_gateway):
    episode = new_episode(tiny_gateway)
    llm = openai.OpenAI(base_url=tiny_gateway.v1, api_key=episode["api_key"], max_retries=0)
    with llm.responses.stream(
        model="tiny",
        input="Weather in Paris?",
        tools=[WEATHER],
        tool_choice=FORCED,
        max_output_tokens=32,
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    raw = llm.responses.create(model="tiny", input="Hi", max_output_tokens=4, stream=True)
    texts = [event.delta for event in raw if event.type == "response.output_text.delta"]

    assert kinds[0] == "response.created" and kinds[-1] in (
        "response.completed",
        "response.incomplete",
    )
    assert "response.function_call_arguments.delta" in kinds
    (call,) = final.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert texts  # the text came as deltas
    trace = trace_of(tiny_gateway, episode)
    assert len(trace["calls"]) == 2
    assert trace["calls"][1]["completion_text"] == "".join(texts)


def test_an_unknown_previous_response_id_is_the_sdks_not_found_error(tiny_gateway):
    llm = openai.OpenAI(base_url=tiny_gateway.v1, api_key="sk-none", max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        llm.responses.create(model="tiny", input="Hi", previous_response_id="resp-nope")
    assert raised.value.body["code"] == "previous_response_not_found"


def test_messages_over_http_with_a_tool_are_one_recorded_timeline(tiny_gateway):
    episode = new_episode(tiny_gateway)
    headers = {"x-api-key": episode["api_key"], "anthropic-version": "2023-06-01"}
    tool = {"name": "get_weather", "input_schema": WEATHER["parameters"]}
    turns = [{"role": "user", "content": "Weather in Paris?"}]
    body = {"model": "tiny", "max_tokens": 32, "tools": [tool], "messages": turns}
    forced = body | {"tool_choice": {"type": "tool", "name": "get_weather"}}
    first = httpx.post(tiny_gateway.v1 + "/messages", json=forced, headers=headers).json()
    (use,) = [block for block in first["content"] if block["type"] == "tool_use"]
    result = {"type": "tool_result", "tool_use_id": use["id"], "content": "sunny"}
    turns += [
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [result]},
    ]
    second = httpx.post(
        tiny_gateway.v1 + "/messages", json=body | {"messages": turns}, headers=headers
    )

    assert first["stop_reason"] == "tool_use" and isinstance(use["input"], dict)
    assert second.status_code == 200, second.text
    assert_recorded_as_one_timeline(trace_of(tiny_gateway, episode), calls=2)


def test_the_anthropic_sdk_messages_create_with_a_tool_is_recorded(tiny_gateway):
    anthropic = pytest.importorskip("anthropic")
    episode = new_episode(tiny_gateway)
    llm = anthropic.Anthropic(base_url=tiny_gateway.url, api_key=episode["api_key"], max_retries=0)
    tool = {"name": "get_weather", "input_schema": WEATHER["parameters"]}
    turns = [{"role": "user", "content": "Weather in Paris?"}]
    first = llm.messages.create(
        model="tiny",
        max_tokens=32,
        tools=[tool],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=turns,
    )
    (use,) = [block for block in first.content if block.type == "tool_use"]
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}
    turns += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [result]},
    ]
    with llm.messages.stream(model="tiny", max_tokens=8, tools=[tool], messages=turns) as stream:
        final = stream.get_final_message()

    assert first.stop_reason == "tool_use" and final.usage.output_tokens > 0
    assert_recorded_as_one_timeline(trace_of(tiny_gateway, episode), calls=2)
