"""LangChain's ChatOpenAI against the real gateway, and proof that the engine batches."""

from __future__ import annotations

import asyncio
import itertools

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
    """N concurrent streamed requests are decoded together: at some point most of them are
    mid-stream at once. Told by the order of the streams' events, not by wall-clock time (a
    serial engine would finish one stream before the next one's first token)."""
    n, tokens = 8, 48
    body = dict(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_tokens=tokens,
        extra_body={"ignore_eos": True},
        stream=True,
        stream_options={"include_usage": True},
    )
    events = itertools.count()  # one clock for every stream: the order events arrive in

    async def go():
        llm = openai.AsyncOpenAI(
            base_url=smollm2_gateway.v1, api_key="sk-none", max_retries=0, timeout=300
        )

        async def one() -> tuple[int, int, int]:
            """(first token's event, last token's event, completion tokens)"""
            first = last = completion_tokens = None
            async for chunk in await llm.chat.completions.create(**body):
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta and delta.content and delta.role is None:  # a token, not the opening
                    last = next(events)
                    first = last if first is None else first
                if chunk.usage:
                    completion_tokens = chunk.usage.completion_tokens
            return first, last, completion_tokens

        return await asyncio.gather(*(one() for _ in range(n)))

    streams = asyncio.run(go())
    assert all(tokens_made == tokens for _, _, tokens_made in streams), streams
    # the most streams mid-flight at once (the maximum is reached at some stream's start)
    most_live = max(
        sum(first <= start <= last for first, last, _ in streams) for start, _, _ in streams
    )
    assert most_live >= n // 2, streams
