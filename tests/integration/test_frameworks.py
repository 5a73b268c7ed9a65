"""Agent frameworks, unchanged, against a real `gateway serve` (the tiny random model; what
is checked is the wire and the recording, not what it says): each is pointed at an
episode's key, runs its own code (structured outputs, tool loops, the Responses API), and
the episode's trace must hold every call it made, one for one, on one timeline per policy.

Covered here: the openai SDK's streamed tool calls in a 3-call loop, LangChain
`with_structured_output` (default method) and `bind_tools`, LangGraph's ReAct agent,
LangChain 1.x's `create_agent` with a middleware,
openai-agents (its default Responses model, a function tool, `output_type`), pydantic-ai
`NativeOutput`, litellm, dspy (`Predict` with its JSON adapter, and what its default
`openai/` route sends), smolagents' `ToolCallingAgent` and autogen-agentchat's
`AssistantAgent` (`output_content_type`, a tool loop it reflects on). The SDK's `.parse` is
in test_openai_sdk.py; Responses with tools and the anthropic SDK's `messages.create` with
a tool are in test_agent_api_sdks.py.

A random model writes strings until `max_tokens`, so the schemas the tests declare hold
only enums and booleans: constrained decoding then ends every structured answer and tool
call by itself. Tool loops are driven with `tool_choice="required"` and stopped by the
framework's own means (a model that stops requiring tools, a tool-use behaviour). Where a
framework sends a turn back rewritten (smolagents' tool calls as text, autogen's reflection
without the tools), the test says so and counts the timelines that opens."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.integration.conftest import shared_tiny

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
def gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # episodes of its own; no run


def new_episode(gw) -> dict:
    response = httpx.post(gw.url + "/swarm/episodes", json={"task_id": "frameworks"})
    assert response.status_code == 200, response.text
    return response.json()


def assert_recorded(
    gw, episode: dict, output_tokens: list[int], request_ids=None, timelines: int = 1
) -> None:
    """The episode holds exactly the calls the framework made (as many, in order, each with
    the completion length the framework was told in `usage`, and the ids it got back when
    given), with token ids and logprobs, all on one timeline of the one policy (or on
    `timelines`, where a framework rewrites a turn it sends back), the last ending with the
    last call."""
    trace = httpx.get(f"{gw.url}/swarm/episodes/{episode['episode_id']}").json()
    calls = trace["calls"]
    assert [len(call["completion_token_ids"]) for call in calls] == output_tokens
    if request_ids is not None:
        assert [call["request_id"] for call in calls] == request_ids
    for call in calls:
        assert len(call["logprobs"]) == len(call["completion_token_ids"]) > 0
    assert list(trace["timelines"]) == [gw.model]
    (merged,) = trace["timelines"].values()
    assert len(merged) == timelines, [call["drift"] for call in calls]
    last = calls[-1]
    assert merged[-1]["token_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]


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


# dspy.ReAct is not here: its steps answer a free-text `next_thought` and an open
# `next_tool_args: dict` (JSON mode at best, no schema), which a random model writes until
# max_tokens, so no step of it parses.
def capital_of_signature():
    """A dspy signature with only an enum and a boolean to answer."""
    import dspy

    class CapitalOf(dspy.Signature):
        """The capital city of a country."""

        country: str = dspy.InputField()
        city: Literal["Paris", "Rome"] = dspy.OutputField()
        is_capital: bool = dspy.OutputField()

    return CapitalOf


def test_dspy_with_the_openai_prefix_sends_no_schema_and_every_try_is_recorded(
    gateway, monkeypatch
):
    """What `dspy.LM("openai/<model>", api_base=...)` sends: its ChatAdapter's
    `[[ ## field ## ]]` text prompt with no `response_format`, then (that text not parsing)
    its JSONAdapter's own prompt, again with no `response_format`: dspy 3.4's native engine
    knows nothing of the model, so it assumes neither JSON mode nor a schema. A random model
    fails both; both calls are recorded, each on its own timeline (the second prompt is a
    new one, not a turn)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # in case dspy loads litellm
    import dspy
    from dspy.utils.exceptions import AdapterParseError

    episode = new_episode(gateway)
    lm = dspy.LM(
        f"openai/{gateway.model}",
        api_base=episode["base_url"],
        api_key=episode["api_key"],
        cache=False,  # else a repeated prompt is answered from dspy's cache, unrecorded
        num_retries=0,
        max_tokens=16,
    )
    with dspy.context(lm=lm), pytest.raises(AdapterParseError):
        dspy.Predict(capital_of_signature())(country="France")

    assert [call["kwargs"] for call in lm.history] == [{}, {}]  # no response_format, no tools
    assert "[[ ## city ## ]]" in lm.history[0]["messages"][0]["content"]
    assert_recorded(
        gateway,
        episode,
        [call["usage"]["completion_tokens"] for call in lm.history],
        [call["response"].id for call in lm.history],
        timelines=2,
    )


def test_dspy_predict_gets_a_constrained_answer_through_its_json_adapter(gateway, monkeypatch):
    """dspy 3.4 sends `response_format` only for a model it knows honours one, and it knows
    no gateway model (the test above). dspy's own way to say what a server's model supports
    is a declared provider (`dspy.lm15.register_provider`); the LM's `api_base` and
    `api_key` are still the episode's. Its JSONAdapter then sends the signature's schema."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # in case dspy loads litellm
    import dspy
    from dspy.lm15 import (
        AccessPolicy,
        ModelSupport,
        OpenAIChatCompat,
        ProviderDefinition,
        register_provider,
        unregister_provider,
    )

    episode = new_episode(gateway)
    register_provider(
        ProviderDefinition.chat(
            AccessPolicy(provider="swarmrl", base_url=gateway.url + "/v1"),
            compat=OpenAIChatCompat.preset("vllm"),
        ),
        supports=ModelSupport(response_schema=True),
        replace=True,  # a later module's gateway has another port
    )
    try:
        # cache=False: dspy answers a prompt it has seen from its cache (memory and disk),
        # without calling the gateway, so nothing would be recorded
        lm = dspy.LM(
            f"swarmrl/{gateway.model}",
            api_base=episode["base_url"],
            api_key=episode["api_key"],
            cache=False,
            num_retries=0,
            max_tokens=48,
        )
    finally:
        unregister_provider("swarmrl")  # the LM keeps what it bound
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        answer = dspy.Predict(capital_of_signature())(country="France")

    assert answer.city in ("Paris", "Rome") and isinstance(answer.is_capital, bool)
    (call,) = lm.history
    # the JSONAdapter's structured-output schema (a model class, sent as `json_schema`), not
    # its plain JSON mode: the gateway constrains the answer to it
    response_format = call["kwargs"]["response_format"]
    assert isinstance(response_format, type) and issubclass(response_format, BaseModel)
    assert_recorded(gateway, episode, [call["usage"]["completion_tokens"]], [call["response"].id])


def test_smolagents_tool_calling_agent_runs_a_tool_loop_call_for_call(gateway):
    """A `ToolCallingAgent` on `OpenAIServerModel`: a step callback names the tool to call
    (smolagents' model kwargs override its own `tool_choice="required"`), `get_weather`
    twice, then `final_answer` (ours, with an enum answer, replaces its free-text one).

    smolagents sends each earlier tool call back as assistant text ("Calling tools:\\n[{...}]")
    and each result as a user "Observation:", not as the tool calls the model wrote: no
    step's prompt continues the previous call's tokens, so each step opens its own
    timeline (drift `unrepaired`). Every call is still recorded, one for one."""
    from smolagents import ActionStep, OpenAIServerModel, ToolCallingAgent, tool

    @tool
    def get_weather(city: Literal["Paris", "Rome"]) -> str:
        """Current weather in a city.

        Args:
            city: The city.
        """
        return f"sunny in {city}"

    @tool
    def final_answer(answer: Literal["sunny", "rainy"]) -> str:
        """The final answer: the weather.

        Args:
            answer: The weather.
        """
        return answer

    def named(name: str) -> dict:
        return {"type": "function", "function": {"name": name}}

    episode = new_episode(gateway)
    # seeded: smolagents' tool schemas are open (no additionalProperties: false), so an
    # unlucky random draw adds properties until max_tokens cuts the call into text (seed 5
    # draws closed calls, whatever call ids the earlier steps' text holds)
    model = OpenAIServerModel(
        model_id=gateway.model,
        api_base=episode["base_url"],
        api_key=episode["api_key"],
        max_tokens=48,
        seed=5,
        tool_choice=named("get_weather"),
    )

    tool_runs = []

    def answer_after_two_tool_runs(step: ActionStep) -> None:
        tool_runs.extend(step.tool_calls or [])
        if len(tool_runs) >= 2:
            model.kwargs["tool_choice"] = named("final_answer")

    agent = ToolCallingAgent(
        tools=[get_weather, final_answer],
        model=model,
        max_steps=4,
        step_callbacks=[answer_after_two_tool_runs],
        verbosity_level=-1,
    )
    result = agent.run("Weather in Paris?")

    steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
    assert result in ("sunny", "rainy") and len(steps) == 3
    assert all(s.error is None and len(s.tool_calls) == 1 for s in steps)
    assert [s.tool_calls[0].name for s in steps] == ["get_weather", "get_weather", "final_answer"]
    assert all(s.observations.startswith("sunny in ") for s in steps[:2])
    assert_recorded(
        gateway,
        episode,
        [s.token_usage.output_tokens for s in steps],
        [s.model_output_message.raw.id for s in steps],
        timelines=3,
    )


def autogen_client(gw, episode: dict, **create_args: Any):
    """autogen-ext's OpenAI client on the episode's key. `model_info` is required for a
    model name it does not know; its telemetry is OpenTelemetry, a no-op with no exporter
    configured, and it counts tokens (tiktoken, which downloads encodings) only for a
    token-limited model context, which AssistantAgent's default is not."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return OpenAIChatCompletionClient(
        model=gw.model,
        base_url=episode["base_url"],
        api_key=episode["api_key"],
        max_retries=0,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": True,
            "structured_output": True,
            "family": "unknown",
        },
        **create_args,
    )


def run_autogen(agent, client, task: str):
    """`agent.run` and the client's close on one event loop (its connections belong to it)."""

    async def run():
        try:
            return await agent.run(task=task)
        finally:
            await client.close()

    return asyncio.run(run())


# autogen dumps the SDK's ParsedChatCompletion, whose `parsed` field is typed None
AUTOGEN_DUMP_WARNING = "ignore:Pydantic serializer warnings:UserWarning"


@pytest.mark.filterwarnings(AUTOGEN_DUMP_WARNING)
def test_autogen_assistant_agent_output_content_type_is_a_pydantic_model(gateway):
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import StructuredMessage

    episode = new_episode(gateway)
    client = autogen_client(gateway, episode, max_tokens=48)
    agent = AssistantAgent(
        "geographer", model_client=client, system_message="Answer.", output_content_type=Capital
    )
    result = run_autogen(agent, client, "Capital of France?")

    answer = result.messages[-1]
    assert isinstance(answer, StructuredMessage) and isinstance(answer.content, Capital)
    assert_recorded(gateway, episode, [answer.models_usage.completion_tokens])


@pytest.mark.filterwarnings(AUTOGEN_DUMP_WARNING)
def test_autogen_assistant_agent_reflects_a_tool_loop_into_structured_output(gateway):
    """Two tool iterations on one timeline, then autogen's reflection (`reflect_on_tool_use`,
    its default with `output_content_type`) answers a `Capital`. The reflection is sent
    without the tools (`tool_choice="none"`, no `tools`), so the chat template renders
    another system prompt and it opens a second timeline (drift `unrepaired`)."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import StructuredMessage, ToolCallRequestEvent
    from autogen_core.tools import FunctionTool

    episode = new_episode(gateway)
    # AssistantAgent always asks with tool_choice="auto": seed 1 is a draw that calls the
    # tool rather than answering (both are constrained: the tools and the Capital schema)
    client = autogen_client(gateway, episode, max_tokens=48, seed=1)
    agent = AssistantAgent(
        "forecaster",
        model_client=client,
        # strict: autogen parses structured output with the SDK's `.parse`, which takes
        # only strict function tools
        tools=[FunctionTool(get_weather, description="Current weather in a city", strict=True)],
        system_message="Answer.",
        output_content_type=Capital,
        max_tool_iterations=2,
    )
    result = run_autogen(agent, client, "Weather in the capital of France?")

    requests = [m for m in result.messages if isinstance(m, ToolCallRequestEvent)]
    answer = result.messages[-1]
    assert [call.name for m in requests for call in m.content] == ["get_weather"] * 2
    assert all(
        json.loads(call.arguments)["city"] in ("Paris", "Rome")
        for m in requests
        for call in m.content
    )
    assert isinstance(answer, StructuredMessage) and isinstance(answer.content, Capital)
    assert_recorded(
        gateway,
        episode,
        [m.models_usage.completion_tokens for m in [*requests, answer]],
        timelines=2,
    )
