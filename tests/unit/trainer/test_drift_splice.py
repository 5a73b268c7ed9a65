"""Token-drift repair through `HFChatTokenizer.render_chat(history=...)`, with the real
SmolLM2 tokenizer and ChatML template: a reply the model generated goes back into the next
prompt as the ids it sampled."""

from __future__ import annotations

import json

from trainer.context.drift import PriorCall
from trainer.tokenizer import HFChatTokenizer

MODEL = "m"
QUESTION = [{"role": "user", "content": "Capital of France?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def earlier_call(
    tok: HFChatTokenizer,
    completion_ids: list[int],
    messages=QUESTION,
    tools=None,
    tool_choice=None,
    index: int = 0,
) -> PriorCall:
    """What the gateway remembers of a call whose model generated `completion_ids`."""
    rendered = tok.render_chat(messages, tools, tool_choice)
    text = rendered.completion_prefix + tok.decode(completion_ids)
    return PriorCall(
        index=index,
        model=MODEL,
        messages=list(messages),
        prompt_text=rendered.text,
        prompt_token_ids=rendered.token_ids,
        completion_token_ids=completion_ids,
        reply=tok.parse_assistant(text, tools_offered=bool(tools)),
    )


def im_end(tok: HFChatTokenizer) -> int:
    (eos,) = tok.eos_token_ids
    assert tok.token_text(eos) == "<|im_end|>"
    return eos


def split_paris(tok: HFChatTokenizer) -> list[int]:
    """'The capital is Paris.' as a model may sample it: ' Paris' in two pieces."""
    (paris,) = tok.encode(" Paris")
    pieces = tok.encode(" Par") + tok.encode("is")
    assert len(pieces) == 2 and paris not in pieces
    return tok.encode("The capital is") + pieces + tok.encode(".") + [im_end(tok)]


def follow_up(reply: str, question: str = "And of Spain?") -> list[dict]:
    return [
        *QUESTION,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": question},
    ]


def test_a_reply_that_retokenizes_differently_is_spliced_in_as_the_sampled_ids(tiny_tokenizer):
    tok = tiny_tokenizer
    prior = earlier_call(tok, split_paris(tok))
    assert prior.reply.content == "The capital is Paris."
    messages = follow_up("The capital is Paris.")

    rendered = tok.render_chat(messages, history=[prior], model=MODEL)

    head = prior.prompt_token_ids + prior.completion_token_ids
    assert rendered.token_ids[: len(head)] == head
    assert rendered.drift == "repaired" and rendered.continues == 0
    naive = tok.render_chat(messages)
    assert naive.token_ids != rendered.token_ids and naive.drift == "fresh"
    assert tok.hf.decode(rendered.token_ids) == tok.hf.decode(naive.token_ids) == rendered.text


def test_a_reply_that_retokenizes_the_same_is_exact(tiny_tokenizer):
    tok = tiny_tokenizer
    prior = earlier_call(tok, tok.encode("The capital is Paris.") + [im_end(tok)])
    messages = follow_up("The capital is Paris.")

    rendered = tok.render_chat(messages, history=[prior], model=MODEL)

    assert rendered.drift == "exact" and rendered.continues == 0
    assert rendered.token_ids == tok.render_chat(messages).token_ids
    head = prior.prompt_token_ids + prior.completion_token_ids
    assert rendered.token_ids[: len(head)] == head


def test_a_reply_the_agent_edited_is_unrepaired_and_names_the_call_it_continues(tiny_tokenizer):
    tok = tiny_tokenizer
    prior = earlier_call(tok, split_paris(tok))
    messages = follow_up("The capital is Paris, of course.")

    rendered = tok.render_chat(messages, history=[prior], model=MODEL)

    assert rendered.drift == "unrepaired" and rendered.continues == 0
    assert rendered.token_ids == tok.render_chat(messages).token_ids


def test_a_chat_that_continues_no_earlier_call_is_fresh(tiny_tokenizer):
    tok = tiny_tokenizer
    prior = earlier_call(tok, split_paris(tok))

    other_question = tok.render_chat(
        [{"role": "user", "content": "hello"}], history=[prior], model=MODEL
    )
    other_model = tok.render_chat(
        follow_up("The capital is Paris."), history=[prior], model="another-model"
    )

    assert (other_question.drift, other_question.continues) == ("fresh", None)
    assert (other_model.drift, other_model.continues) == ("fresh", None)
    assert other_model.token_ids == tok.render_chat(follow_up("The capital is Paris.")).token_ids


def test_the_latest_of_several_earlier_calls_that_match_is_continued(tiny_tokenizer):
    tok = tiny_tokenizer
    first = earlier_call(tok, split_paris(tok), index=0)
    second = earlier_call(tok, split_paris(tok), index=3)
    rendered = tok.render_chat(
        follow_up("The capital is Paris."), history=[first, second], model=MODEL
    )
    assert (rendered.drift, rendered.continues) == ("repaired", 3)


def test_a_completion_cut_by_length_gets_the_templates_end_of_turn_as_context(tiny_tokenizer):
    tok = tiny_tokenizer
    cut = tok.encode("The capital") + tok.encode(" Par")  # no <|im_end|>: max_tokens hit
    prior = earlier_call(tok, cut)
    messages = follow_up("The capital Par", question="Go on.")

    rendered = tok.render_chat(messages, history=[prior], model=MODEL)

    head = prior.prompt_token_ids + cut
    assert rendered.token_ids[: len(head)] == head
    assert rendered.token_ids[len(head)] == im_end(tok)
    assert rendered.drift in ("exact", "repaired") and rendered.continues == 0
    assert tok.hf.decode(rendered.token_ids) == rendered.text


def tool_turn(arguments: str) -> list[dict]:
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


def test_tool_call_arguments_sent_back_reserialised_are_repaired(tiny_tokenizer):
    tok = tiny_tokenizer
    generated = '<tool_call>\n{"name":"get_weather","arguments":{"city":"Paris"}}\n</tool_call>'
    prior = earlier_call(
        tok, tok.encode(generated) + [im_end(tok)], messages=tool_turn("")[:1], tools=[WEATHER]
    )
    (call,) = prior.reply.tool_calls
    assert json.loads(call.arguments) == {"city": "Paris"}
    messages = tool_turn(call.arguments)  # what the OpenAI SDK sends back

    rendered = tok.render_chat(messages, [WEATHER], history=[prior], model=MODEL)

    head = prior.prompt_token_ids + prior.completion_token_ids
    assert rendered.token_ids[: len(head)] == head
    assert (rendered.drift, rendered.continues) == ("repaired", 0)
    assert rendered.token_ids != tok.render_chat(messages, [WEATHER]).token_ids


def test_a_forced_tool_call_prefix_is_part_of_the_spliced_prompt(tiny_tokenizer):
    tok = tiny_tokenizer
    choice = {"type": "function", "function": {"name": "get_weather"}}
    generated = '{"city":"Paris"}}\n</tool_call>'
    prior = earlier_call(
        tok,
        tok.encode(generated) + [im_end(tok)],
        messages=tool_turn("")[:1],
        tools=[WEATHER],
        tool_choice=choice,
    )
    assert prior.prompt_text.endswith('"arguments": ')
    (call,) = prior.reply.tool_calls
    messages = tool_turn(call.arguments)

    rendered = tok.render_chat(messages, [WEATHER], choice, history=[prior], model=MODEL)

    head = prior.prompt_token_ids + prior.completion_token_ids
    assert rendered.token_ids[: len(head)] == head
    assert (rendered.drift, rendered.continues) == ("repaired", 0)
    assert rendered.text.endswith(rendered.completion_prefix)
