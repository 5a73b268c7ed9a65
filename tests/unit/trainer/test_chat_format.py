"""Rendering OpenAI messages for a template without tool support, and parsing tool calls."""

from __future__ import annotations

import json

from trainer.chat_format import forced_prefix, normalize_messages, parse_tool_calls

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_a_well_formed_tool_call_becomes_an_openai_tool_call_and_content_is_what_remains():
    text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    parsed = parse_tool_calls(text)
    assert parsed.content == "Let me check."
    assert [c.name for c in parsed.tool_calls] == ["get_weather"]
    assert json.loads(parsed.tool_calls[0].arguments) == {"city": "Paris"}
    assert parsed.tool_calls[0].id.startswith("call_")


def test_two_calls_and_an_unterminated_last_call_are_all_parsed():
    text = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": {"x": 1}}'
    )
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]
    assert parsed.content is None


def test_broken_json_after_a_name_still_yields_the_call_with_raw_arguments():
    parsed = parse_tool_calls('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par')
    assert parsed.tool_calls[0].name == "get_weather"
    assert parsed.tool_calls[0].arguments.startswith('{"city"')


def test_text_without_a_parseable_call_stays_content():
    assert parse_tool_calls("just words").content == "just words"
    assert parse_tool_calls("<tool_call> nonsense").tool_calls == []


def test_tools_go_into_the_system_message_and_assistant_calls_are_rendered_as_text():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    flat = normalize_messages(messages, [WEATHER], native_tools=False)
    assert flat[0]["role"] == "system" and flat[0]["content"].startswith("Be brief.")
    assert '"name": "get_weather"' in flat[0]["content"] and "<tools>" in flat[0]["content"]
    assert flat[1] == {"role": "user", "content": "Weather in Paris?"}
    assert parse_tool_calls(flat[2]["content"]).tool_calls[0].name == "get_weather"
    assert flat[3] == {"role": "tool", "content": "sunny"}


def test_a_named_tool_choice_forces_the_call_opening():
    prefix = forced_prefix({"type": "function", "function": {"name": "get_weather"}})
    parsed = parse_tool_calls(prefix + '{"city": "Rome"}}\n</tool_call>')
    assert parsed.tool_calls[0].name == "get_weather"
    assert json.loads(parsed.tool_calls[0].arguments) == {"city": "Rome"}
    assert forced_prefix("auto") == "" and forced_prefix(None) == ""


def test_the_hf_tokenizer_renders_tools_and_the_forced_prefix_into_the_prompt(tiny_tokenizer):
    rendered = tiny_tokenizer.render_chat(
        [{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    text = tiny_tokenizer.hf.decode(rendered.token_ids)
    assert "<tools>" in text and text.endswith(rendered.completion_prefix)
    assert text.rstrip().endswith('"arguments":')
    none = tiny_tokenizer.render_chat(
        [{"role": "user", "content": "hi"}], tools=[WEATHER], tool_choice="none"
    )
    assert (
        "<tools>" not in tiny_tokenizer.hf.decode(none.token_ids) and none.completion_prefix == ""
    )
