"""Token-drift repair of assistant turns with tool calls, with the real tiny tokenizer and
its ChatML template: a turn the agent sends back equal to what was generated (content and
calls, whatever order the template renders them in, arguments re-serialised) splices to
the ids the model sampled; a turn the agent changed does not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from trainer.context.drift import PriorCall
from trainer.tokenizer import HFChatTokenizer

MODEL = "m"
QUESTION = [{"role": "user", "content": "Weather in Paris and Rome?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        },
    },
}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def call_text(city: str) -> str:
    arguments = {"city": city, "unit": "C"}
    return f'<tool_call>\n{{"name": "get_weather", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


def generated_turn(
    tok: HFChatTokenizer, generated: str, tool_choice: Any = None
) -> tuple[PriorCall, dict]:
    """The earlier call whose model wrote `generated` (after any forced opening), and the
    assistant message the OpenAI SDK sends back for it."""
    rendered = tok.render_chat(QUESTION, [WEATHER], tool_choice)
    (eos,) = tok.eos_token_ids
    completion = tok.encode(generated) + [eos]
    reply = tok.parse_assistant(rendered.completion_prefix + generated, tools_offered=True)
    prior = PriorCall(
        index=0,
        model=MODEL,
        messages=list(QUESTION),
        prompt_text=rendered.text,
        prompt_token_ids=rendered.token_ids,
        completion_token_ids=completion,
        reply=reply,
    )
    message = {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ],
    }
    return prior, message


def next_prompt(tok: HFChatTokenizer, prior: PriorCall, message: dict, tool_choice: Any = None):
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}
        for call in message["tool_calls"]
    ]
    messages = [*QUESTION, message, *results]
    return tok.render_chat(messages, [WEATHER], tool_choice, history=[prior], model=MODEL)


def redumped(message: dict, **dumps: Any) -> dict:
    """The message as LangChain / openai-agents send it: arguments parsed and dumped again."""
    calls = [
        {
            **call,
            "function": {
                **call["function"],
                "arguments": json.dumps(json.loads(call["function"]["arguments"]), **dumps),
            },
        }
        for call in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


def as_sent(message: dict) -> dict:
    return message


def without_content(message: dict) -> dict:
    return {**message, "content": None}


def compact_and_sorted(message: dict) -> dict:
    return redumped(message, separators=(",", ":"), sort_keys=True)


def reordered_keys(message: dict) -> dict:
    calls = []
    for call in message["tool_calls"]:
        arguments = json.loads(call["function"]["arguments"])
        backwards = dict(reversed(list(arguments.items())))
        calls.append(
            {**call, "function": {**call["function"], "arguments": json.dumps(backwards, indent=2)}}
        )
    return {**message, "tool_calls": calls}


AFTER = call_text("Paris") + "\nI will wait for the result."
SHAPES: dict[str, tuple[str, Any, Callable[[dict], dict]]] = {
    "text after the call": (AFTER, None, as_sent),
    "text before and after": ("Let me look.\n" + AFTER, None, as_sent),
    "two calls with text between and after": (
        call_text("Paris") + "\nand\n" + call_text("Rome") + " Done.",
        None,
        as_sent,
    ),
    "content null (a client that kept only the calls)": (AFTER, None, without_content),
    "arguments re-dumped compact with sorted keys": (AFTER, None, compact_and_sorted),
    "arguments re-dumped with keys reordered and indented": (AFTER, None, reordered_keys),
    "named tool_choice, text after the call": (
        '{"city": "Paris", "unit": "C"}}\n</tool_call>\nI will wait.',
        NAMED,
        as_sent,
    ),
    "required tool_choice, text after the call": (
        'get_weather", "arguments": {"city": "Paris", "unit": "C"}}\n</tool_call> ok',
        "required",
        compact_and_sorted,
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_tool_turn_sent_back_as_generated_splices_to_the_generated_ids(tiny_tokenizer, shape):
    tok = tiny_tokenizer
    generated, tool_choice, client = SHAPES[shape]
    prior, message = generated_turn(tok, generated, tool_choice)
    assert prior.reply.tool_calls, "the generated text holds calls"

    rendered = next_prompt(tok, prior, client(message))

    head = prior.prompt_token_ids + prior.completion_token_ids
    assert rendered.token_ids[: len(head)] == head
    assert rendered.drift in ("exact", "repaired") and rendered.continues == 0
    (eos,) = tok.eos_token_ids
    # after the generated end of turn: the template's newline, then the tool results
    assert tok.decode(rendered.token_ids[len(head) :]).startswith("\n")
    assert tok.hf.decode(rendered.token_ids[len(head) :]).rstrip().endswith("assistant")


def test_text_after_a_call_is_rendered_before_it_yet_spliced_in_the_order_generated(
    tiny_tokenizer,
):
    tok = tiny_tokenizer
    generated, tool_choice, _ = SHAPES["named tool_choice, text after the call"]
    prior, message = generated_turn(tok, generated, tool_choice)
    naive = tok.render_text([*QUESTION, message], [WEATHER], add_generation_prompt=False)
    turn = naive.rindex("<|im_start|>assistant")  # the system prompt shows a call too
    assert naive.index("I will wait") < naive.index("<tool_call>", turn)

    rendered = next_prompt(tok, prior, message, tool_choice)

    assert rendered.drift == "repaired"
    spliced = tok.hf.decode(rendered.token_ids)
    assert spliced.rindex("</tool_call>") < spliced.index("I will wait")  # the model's order


def changed_city(message: dict) -> dict:
    call = message["tool_calls"][0]
    arguments = {**json.loads(call["function"]["arguments"]), "city": "Lyon"}
    edited = {**call, "function": {**call["function"], "arguments": json.dumps(arguments)}}
    return {**message, "tool_calls": [edited, *message["tool_calls"][1:]]}


def changed_content(message: dict) -> dict:
    return {**message, "content": "Something I never wrote."}


def dropped_call(message: dict) -> dict:
    return {**message, "tool_calls": message["tool_calls"][:1]}


@pytest.mark.parametrize("edit", [changed_city, changed_content, dropped_call])
def test_a_tool_turn_the_agent_changed_is_unrepaired(tiny_tokenizer, edit):
    tok = tiny_tokenizer
    prior, message = generated_turn(tok, call_text("Paris") + "\n" + call_text("Rome") + " ok")

    rendered = next_prompt(tok, prior, edit(message))

    assert (rendered.drift, rendered.continues) == ("unrepaired", 0)
    assert rendered.token_ids == tok.encode(rendered.text)
