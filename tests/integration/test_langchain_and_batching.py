"""LangChain's ChatOpenAI against the real gateway, and proof that the engine batches."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest

pytestmark = pytest.mark.slow


def test_langchain_chat_openai_invokes_streams_and_binds_tools(smollm2_gateway):
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        base_url=smollm2_gateway.v1,
        api_key="sk-none",
        model="smollm2-135m",
        max_tokens=16,
        temperature=0,
        max_retries=0,
    )
    reply = llm.invoke([HumanMessage("What is the capital of France?")])
    assert isinstance(reply.content, str) and reply.content
    assert reply.usage_metadata["output_tokens"] > 0
    assert "".join(chunk.content for chunk in llm.stream("Say hello.")) != ""

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "sunny"

    forced = llm.bind_tools([get_weather], tool_choice="get_weather").bind(max_tokens=40)
    msg = forced.invoke("What's the weather in Paris?")
    # a 135M model may write arguments that are not valid JSON: LangChain files those
    # under invalid_tool_calls, with the name intact
    calls = msg.tool_calls + msg.invalid_tool_calls
    assert calls and calls[0]["name"] == "get_weather"
    assert msg.response_metadata["finish_reason"] == "tool_calls"


def test_concurrent_requests_share_decode_steps(smollm2_gateway):
    """N concurrent requests take much less than N times one request (loose ratio)."""
    n, tokens = 8, 48
    body = dict(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_tokens=tokens,
        extra_body={"ignore_eos": True},
    )

    async def go():
        llm = openai.AsyncOpenAI(
            base_url=smollm2_gateway.v1, api_key="sk-none", max_retries=0, timeout=300
        )
        await llm.chat.completions.create(**{**body, "max_tokens": 4})  # warm-up
        t0 = time.perf_counter()
        one = await llm.chat.completions.create(**body)
        single = time.perf_counter() - t0
        t0 = time.perf_counter()
        many = await asyncio.gather(*(llm.chat.completions.create(**body) for _ in range(n)))
        together = time.perf_counter() - t0
        return one, single, many, together

    one, single, many, together = asyncio.run(go())
    assert one.usage.completion_tokens == tokens
    assert all(r.usage.completion_tokens == tokens for r in many)
    assert together < 0.6 * n * single, (
        f"{n} concurrent took {together:.2f}s, one took {single:.2f}s"
    )
