"""Grammars for constrained decoding (`trainer.grammar`), checked and run with llguidance."""

from __future__ import annotations

import json

import pytest

from trainer import chat_format, grammar
from trainer.errors import InvalidGrammar

llguidance = pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")

TOOLS = [
    grammar.ToolSchema(
        "get_weather",
        {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome"]}},
            "required": ["city"],
        },
    ),
    grammar.ToolSchema("add", {"type": "object", "properties": {"a": {"type": "integer"}}}),
]


def matcher(tiny_tokenizer, built):
    import llguidance.hf

    tokenizer = llguidance.hf.from_tokenizer(
        tiny_tokenizer.hf, eos_token=[tiny_tokenizer.hf.eos_token_id]
    )
    return llguidance.LLMatcher(tokenizer, llguidance.LLMatcher.grammar_from_lark(built.lark))


@pytest.mark.parametrize(
    "built",
    [
        grammar.json_value(None),
        grammar.json_value({"type": "object", "properties": {"x": {"type": "boolean"}}}),
        grammar.forced_call(TOOLS, chat_format.forced_prefix("required")),
        grammar.forced_call(TOOLS[1:], chat_format.forced_prefix({"function": {"name": "add"}})),
        grammar.calls_in_text(TOOLS),
        grammar.json_or_call(None, TOOLS),
    ],
    ids=lambda g: g.kind,
)
def test_every_grammar_we_build_compiles(built):
    grammar.check(built)


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "foo"}, "Invalid type: foo"),
        ({"$ref": "#/$defs/missing"}, "does not exist"),
        ({"type": "object", "not": {"type": "null"}}, "Unimplemented keys"),
        ({"type": "string", "format": "no-such-format"}, "Unknown format"),
    ],
)
def test_bad_schemas_and_unsupported_features_are_refused_with_the_librarys_reason(schema, says):
    with pytest.raises(InvalidGrammar, match=says) as refused:
        grammar.check(grammar.json_value(schema))
    assert "\n" not in str(refused.value)  # one line, without the echoed grammar source


@pytest.mark.slow
def test_json_is_laid_out_as_json_dumps_writes_it(tiny_tokenizer):
    m = matcher(
        tiny_tokenizer,
        grammar.json_value(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
                "additionalProperties": False,
            }
        ),
    )
    assert not m.consume_tokens(tiny_tokenizer.encode('{"a":1}'))  # no compact layout
    m = matcher(
        tiny_tokenizer,
        grammar.json_value(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
                "additionalProperties": False,
            }
        ),
    )
    assert m.consume_tokens(tiny_tokenizer.encode('{"a": 1}'))
    assert m.is_accepting()


@pytest.mark.slow
def test_a_forced_call_accepts_only_declared_tools_with_valid_arguments(tiny_tokenizer):
    prefix = chat_format.forced_prefix("required")
    built = grammar.forced_call(TOOLS, prefix)
    good = chat_format.tool_call_text("get_weather", {"city": "Rome"})[len(prefix) :]
    m = matcher(tiny_tokenizer, built)
    assert m.consume_tokens(tiny_tokenizer.encode(good)) and m.is_stopped()
    for bad in (
        '12 * 7", "arguments": {}}',
        'get_weather", "arguments": "12"}',
        'get_weather", "arguments": {"city": "Oslo"}}',
    ):
        m = matcher(tiny_tokenizer, built)
        assert not m.consume_tokens(tiny_tokenizer.encode(bad)), bad


@pytest.mark.slow
def test_with_auto_text_is_free_until_the_model_opens_a_call_which_must_then_be_well_formed(
    tiny_tokenizer,
):
    built = grammar.calls_in_text(TOOLS)
    m = matcher(tiny_tokenizer, built)
    assert m.consume_tokens(tiny_tokenizer.encode("Let me think {not json} <tool_cal"))
    assert m.is_accepting()  # plain text may end here
    call = chat_format.tool_call_text("add", {"a": 3})
    assert m.consume_tokens(tiny_tokenizer.encode("l>" + call[len("<tool_call>") :] + " done"))
    m = matcher(tiny_tokenizer, built)
    assert not m.consume_tokens(tiny_tokenizer.encode('<tool_call>\n{"name": "subtract"'))
    m = matcher(tiny_tokenizer, built)
    assert not m.consume_tokens(
        tiny_tokenizer.encode('<tool_call>\n{"name": "add", "arguments": 12')
    )


@pytest.mark.slow
def test_a_json_answer_or_a_call(tiny_tokenizer):
    built = grammar.json_or_call(
        {"type": "object", "properties": {"n": {"type": "integer"}}}, TOOLS
    )
    assert matcher(tiny_tokenizer, built).consume_tokens(
        tiny_tokenizer.encode(json.dumps({"n": 4}))
    )
    call = chat_format.tool_call_text("add", {"a": 3})
    assert matcher(tiny_tokenizer, built).consume_tokens(tiny_tokenizer.encode(call))
    assert not matcher(tiny_tokenizer, built).consume_tokens(tiny_tokenizer.encode("Sure! {"))


def test_a_schema_with_its_own_llguidance_options_keeps_them():
    built = grammar.json_value({"type": "object", "x-guidance": {"whitespace_flexible": True}})
    assert '"whitespace_flexible": true' in built.lark
    grammar.check(built)
    odd = grammar.json_value({"type": "object", "x-guidance": 5})  # not options: ours apply
    assert '"whitespace_flexible": false' in odd.lark
    grammar.check(odd)
