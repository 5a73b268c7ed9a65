"""Agent frameworks, unchanged, against a real `gateway serve` (the tiny random model; what
is checked is the wire and the recording, not what it says): each is pointed at an
episode's key, runs its own code (structured outputs, tool loops, the Responses API), and
the episode's trace must hold every call it made, one for one, on one timeline per policy.

Covered here: the openai SDK's streamed tool calls in a 3-call loop, LangChain
`with_structured_output` (default method) and `bind_tools`, LangGraph's ReAct agent,
LangChain 1.x's `create_agent` with a middleware,
openai-agents (its default Responses model, a function tool, `output_type`), pydantic-ai
`NativeOutput` and litellm. The SDK's `.parse` is in test_openai_sdk.py; Responses with
tools and the anthropic SDK's `messages.create` with a tool are in test_agent_api_sdks.py.

A random model writes strings until `max_tokens`, so the schemas the tests declare hold
only enums and booleans: constrained decoding then ends every structured answer and tool
call by itself. Tool loops are driven with `tool_choice="required"` and stopped by the
framework's own means (a model that stops requiring tools, a tool-use behaviour)."""

from __future__ import annotations

from typing import Any, Literal

import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.integration.conftest import start_gateway, stop_gateway

pytestmark = pytest.mark.slow

CITY = {"type": "string", "enum": ["Paris", "Rome"]}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        # closed: a random model may otherwise add properties until max_tokens cuts the call,
        # which is then text (finish_reason "length"), not a call
        "parameters": {
            "type": "object",
            "properties": {"city": CITY},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


class Capital(BaseModel):
    city: Literal["Paris", "Rome"]
    is_capital: bool


def get_weather(city: Literal["Paris", "Rome"]) -> str:
    """Current weather in a city."""
    return f"sunny in {city}"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    gw = start_gateway(tmp_path_factory.mktemp("frameworks"), model="tiny")
    yield gw
    stop_gateway(gw)


def new_episode(gw) -> dict:
    response = httpx.post(gw.url + "/swarm/episodes", json={"task_id": "frameworks"})
    assert response.status_code == 200, response.text
    return response.json()


def assert_recorded(gw, episode: dict, output_tokens: list[int], request_ids=None) -> None:
    """The episode holds exactly the calls the framework made (as many, in order, each with
    the completion length the framework was told in `usage`, and the ids it got back when
    given), with token ids and logprobs, all on one timeline of the one policy."""
    trace = httpx.get(f"{gw.url}/swarm/episodes/{episode['episode_id']}").json()
    calls = trace["calls"]
    assert [len(call["completion_token_ids"]) for call in calls] == output_tokens
    if request_ids is not None:
        assert [call["request_id"] for call in calls] == request_ids
    for call in calls:
        assert len(call["logprobs"]) == len(call["completion_token_ids"]) > 0
    assert list(trace["timelines"]) == [gw.model]
    (timelines,) = trace["timelines"].values()
    assert len(timelines) == 1, [call["drift"] for call in calls]
    last = calls[-1]
    assert timelines[0]["token_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]


def chat_model(gw, episode: dict, **settings: Any):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=episode["base_url"],
        api_key=episode["api_key"],
        model=gw.model,
        max_retries=0,
        **settings,
    )


def test_the_openai_sdk_streams_a_three_call_tool_loop_onto_one_timeline(gateway):
    episode = new_episode(gateway)
    llm = openai.OpenAI(base_url=episode["base_url"], api_key=episode["api_key"], max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris and Rome?"}]
    replies = []
    for turn in range(3):
        with llm.chat.completions.stream(
            model=gateway.model,
            messages=messages,
            tools=[WEATHER],
            tool_choice="required",
            max_tokens=48,
            seed=turn,
            stream_options={"include_usage": True},
        ) as stream:
            deltas = [
                call
                for event in stream
                if event.type == "chunk" and event.chunk.choices
                for call in event.chunk.choices[0].delta.tool_calls or []
            ]
            reply = stream.get_final_completion()
        assert deltas[0].type == "function" and deltas[0].id  # the opening delta names its kind
        (call,) = reply.choices[0].message.tool_calls
        assert call.function.name == "get_weather" and call.function.parsed_arguments is None
        messages += [
            reply.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"}),
            {"role": "tool", "tool_call_id": call.id, "content": get_weather("Paris")},
        ]
        replies.append(reply)
    replies.append(
        llm.chat.completions.create(
            model=gateway.model, messages=messages, tools=[WEATHER], max_tokens=8, seed=3
        )
    )

    assert [r.choices[0].finish_reason for r in replies[:3]] == ["tool_calls"] * 3
    assert_recorded(
        gateway,
        episode,
        [r.usage.completion_tokens for r in replies],
        [r.id for r in replies],
    )


def test_langchain_structured_output_by_its_default_method(gateway):
    episode = new_episode(gateway)
    llm = chat_model(gateway, episode, max_tokens=48)
    raw = llm.with_structured_output(Capital, include_raw=True).invoke("Capital of France?")

    assert isinstance(raw["parsed"], Capital) and raw["parsing_error"] is None
    message = raw["raw"]
    assert_recorded(
        gateway,
        episode,
        [message.usage_metadata["output_tokens"]],
        [message.response_metadata["id"]],
    )


def test_langchain_bind_tools_parses_the_call_into_tool_calls(gateway):
    from langchain_core.tools import tool

    episode = new_episode(gateway)
    # seeded: LangChain's schema for the function is open (no additionalProperties: false),
    # so an unlucky random draw adds properties until max_tokens cuts the call into text
    llm = chat_model(gateway, episode, max_tokens=48, seed=0)
    message = llm.bind_tools([tool(get_weather)], tool_choice="required").invoke(
        "Weather in Paris?"
    )

    assert message.invalid_tool_calls == []
    (call,) = message.tool_calls
    assert call["name"] == "get_weather" and call["args"]["city"] in ("Paris", "Rome")
    assert_recorded(
        gateway,
        episode,
        [message.usage_metadata["output_tokens"]],
        [message.response_metadata["id"]],
    )


def test_langgraph_react_agent_runs_a_three_call_tool_loop_on_one_timeline(gateway):
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    episode = new_episode(gateway)
    llm = chat_model(gateway, episode, max_tokens=24, seed=0)
    weather = tool(get_weather)
    calling = llm.bind_tools([weather], tool_choice="required")
    answering = llm.bind_tools([weather], tool_choice="auto")  # same tools: same prompt

    def model(state, runtime):
        """A dynamic model: tools are required until 3 have run, then it may answer."""
        runs = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return calling if runs < 3 else answering

    agent = create_react_agent(model, [weather])
    result = agent.invoke({"messages": [("user", "Weather in Paris?")]})

    replies = [m for m in result["messages"] if isinstance(m, AIMessage)]
    tool_runs = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 4 and len(tool_runs) == 3
    assert all(m.tool_calls and not m.invalid_tool_calls for m in replies[:3])
    assert_recorded(
        gateway,
        episode,
        [m.usage_metadata["output_tokens"] for m in replies],
        [m.response_metadata["id"] for m in replies],
    )


def test_langchain_create_agent_runs_a_tool_loop_with_middleware_on_one_timeline(gateway):
    """LangChain 1.x's `create_agent` (the successor of `create_react_agent`): a
    `wrap_model_call` middleware requires a tool call until 2 have run, then lets it answer."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_model_call
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    episode = new_episode(gateway)

    @wrap_model_call
    def tools_first(request, handler):
        runs = sum(isinstance(m, ToolMessage) for m in request.messages)
        return handler(request.override(tool_choice="required" if runs < 2 else "auto"))

    agent = create_agent(
        chat_model(gateway, episode, max_tokens=24, seed=0),
        tools=[tool(get_weather)],
        system_prompt="Answer weather questions with the tool.",
        middleware=[tools_first],
    )
    result = agent.invoke({"messages": [("user", "Weather in Rome?")]})

    replies = [m for m in result["messages"] if isinstance(m, AIMessage)]
    tool_runs = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 3 and len(tool_runs) == 2
    assert all(m.tool_calls and not m.invalid_tool_calls for m in replies[:2])
    assert all(run.content.startswith("sunny in ") for run in tool_runs)
    assert_recorded(
        gateway,
        episode,
        [m.usage_metadata["output_tokens"] for m in replies],
        [m.response_metadata["id"] for m in replies],
    )


def openai_agents_model(gw, episode: dict):
    """openai-agents' default model kind, the Responses API, on the episode's key."""
    import agents

    agents.set_tracing_disabled(True)  # else it sends traces to OpenAI
    client = openai.AsyncOpenAI(
        base_url=episode["base_url"], api_key=episode["api_key"], max_retries=0
    )
    return agents.OpenAIResponsesModel(gw.model, client)


def test_openai_agents_runs_a_function_tool_loop_through_the_responses_api(gateway):
    from agents import Agent, ModelSettings, Runner, ToolsToFinalOutputResult, function_tool

    tool_runs: list[str] = []

    def after_three_tool_runs(context, results) -> ToolsToFinalOutputResult:
        tool_runs.extend(result.output for result in results)
        done = len(tool_runs) >= 3
        return ToolsToFinalOutputResult(is_final_output=done, final_output=tool_runs[-1])

    episode = new_episode(gateway)
    agent = Agent(
        name="forecaster",
        instructions="Answer with the weather.",
        model=openai_agents_model(gateway, episode),
        tools=[function_tool(get_weather)],
        model_settings=ModelSettings(tool_choice="required", max_tokens=48),
        reset_tool_choice=False,
        tool_use_behavior=after_three_tool_runs,
    )
    result = Runner.run_sync(agent, "Weather in Paris?", max_turns=5)

    assert result.final_output.startswith("sunny in ") and len(tool_runs) == 3
    assert len(result.raw_responses) == 3
    assert_recorded(
        gateway,
        episode,
        [r.usage.output_tokens for r in result.raw_responses],
        [r.response_id for r in result.raw_responses],
    )


def test_openai_agents_output_type_is_a_pydantic_model(gateway):
    from agents import Agent, ModelSettings, Runner

    episode = new_episode(gateway)
    agent = Agent(
        name="geographer",
        instructions="Answer.",
        model=openai_agents_model(gateway, episode),
        output_type=Capital,
        model_settings=ModelSettings(max_tokens=48),
    )
    result = Runner.run_sync(agent, "Capital of France?")

    assert isinstance(result.final_output, Capital)
    assert_recorded(
        gateway,
        episode,
        [r.usage.output_tokens for r in result.raw_responses],
        [r.response_id for r in result.raw_responses],
    )


def test_pydantic_ai_native_output_through_its_openai_provider(gateway):
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    episode = new_episode(gateway)
    provider = OpenAIProvider(base_url=episode["base_url"], api_key=episode["api_key"])
    agent = Agent(
        OpenAIChatModel(gateway.model, provider=provider),
        output_type=NativeOutput(Capital),
        model_settings={"max_tokens": 48},
    )
    result = agent.run_sync("Capital of France?")

    assert isinstance(result.output, Capital)
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert_recorded(
        gateway,
        episode,
        [m.usage.output_tokens for m in responses],
        [m.provider_response_id for m in responses],
    )


def test_litellm_completion_with_a_tool_round_trip(gateway, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it fetches one at import
    import litellm

    episode = new_episode(gateway)
    route = dict(
        model=f"openai/{gateway.model}", api_base=episode["base_url"], api_key=episode["api_key"]
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = litellm.completion(
        **route, messages=messages, tools=[WEATHER], tool_choice="required", max_tokens=48
    )
    (call,) = first.choices[0].message.tool_calls
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": get_weather("Paris")},
    ]
    second = litellm.completion(**route, messages=messages, tools=[WEATHER], max_tokens=8)

    assert call.function.name == "get_weather" and '"city"' in call.function.arguments
    assert isinstance(second.choices[0].message.content, str)
    assert_recorded(
        gateway,
        episode,
        [first.usage.completion_tokens, second.usage.completion_tokens],
        [first.id, second.id],
    )
