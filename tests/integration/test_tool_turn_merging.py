"""A tool loop whose turns hold text after `</tool_call>` is one timeline, against a real
`gateway serve` and the raw openai SDK (whole and streamed answers).

The model is a tiny Llama built here that writes exactly what the test needs: its layers
add nothing to the residual stream, so its next token depends on the last token only (a
bigram table in its embedding and output matrices), and it opens a call, then, once the
grammar has written the call (`tool_choice: "auto"` makes every call the model opens
well-formed, and the tool's schema allows one argument value), writes " I will check."
and stops. So each answer is a call followed by text, which the chat template renders
before the call when the agent sends the turn back."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from tests.integration.conftest import start_gateway, stop_gateway

pytestmark = pytest.mark.slow
pytest.importorskip("llguidance", reason="the call is written by the tool-call grammar")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
# what the model writes by itself: the opening of a call, then after the call this text
OPENING = ["<", "tool", "_", "call", ">"]
AFTER = [" I", " will", " check", "."]
MARGIN = 80.0  # logit of the chosen next token over every other


def bigram_model(directory: Path) -> Path:
    """A Llama whose next token is a fixed function of its last token (see the module)."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from trainer.model import bundled_tokenizer_dir, tiny_config

    tokenizer = AutoTokenizer.from_pretrained(bundled_tokenizer_dir())

    def token(text: str) -> int:
        (token_id,) = tokenizer.encode(text, add_special_tokens=False)
        return token_id

    generation_header_end = token("\n")  # "<|im_start|>assistant\n" ends every prompt
    chain = [generation_header_end, *map(token, OPENING + AFTER), tokenizer.eos_token_id]
    successor = dict(zip(chain[:-1], chain[1:], strict=True))
    successor[token(">")] = token(" I")  # "<tool_call>"'s ">" is followed by the grammar's "\n"

    config = tiny_config(len(tokenizer), tokenizer.eos_token_id, tokenizer.bos_token_id)
    config.tie_word_embeddings = False
    model = LlamaForCausalLM(config)
    hidden = config.hidden_size
    directions = torch.linalg.qr(
        torch.randn(hidden, hidden, generator=torch.Generator().manual_seed(0))
    )[0]
    with torch.no_grad():
        for layer in model.model.layers:  # nothing added to the residual stream
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.zero_()
        model.lm_head.weight.zero_()
        for k, (previous, following) in enumerate(successor.items()):
            direction = directions[k]
            model.model.embed_tokens.weight[previous] = direction
            # after the final RMSNorm the residual has norm sqrt(hidden)
            model.lm_head.weight[following] += direction * MARGIN / hidden**0.5
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def bigram_gateway(tmp_path_factory):
    model_dir = bigram_model(tmp_path_factory.mktemp("bigram-model"))
    gw = start_gateway(
        tmp_path_factory.mktemp("tool-turns"), "--dtype", "float32", model=str(model_dir)
    )
    yield gw
    stop_gateway(gw)


def assistant_turn(llm: openai.OpenAI, model: str, messages: list, stream: bool):
    """The SDK's assistant message for one chat call (the stream helper rebuilds it)."""
    fields = dict(model=model, messages=messages, tools=[WEATHER], max_tokens=64)
    if not stream:
        choice = llm.chat.completions.create(**fields).choices[0]
        return choice.message, choice.finish_reason
    with llm.chat.completions.stream(**fields) as events:
        for _event in events:
            pass
        choice = events.get_final_completion().choices[0]
    return choice.message, choice.finish_reason


@pytest.mark.parametrize("stream", [False, True])
def test_a_three_call_tool_loop_with_text_after_each_call_is_one_timeline(bigram_gateway, stream):
    gw = bigram_gateway
    episode = httpx.post(gw.url + "/swarm/episodes", json={"task_id": "weather"}).json()
    llm = openai.OpenAI(base_url=gw.v1, api_key=episode["api_key"], max_retries=0)
    messages: list = [{"role": "user", "content": "Weather in Paris, three times?"}]
    for _ in range(3):
        message, finish_reason = assistant_turn(llm, gw.model, messages, stream)
        assert finish_reason == "tool_calls"
        assert message.content == "I will check."  # written after the call
        (call,) = message.tool_calls
        assert call.function.name == "get_weather"
        messages.append(message)  # as SDK users do: the SDK serialises it back
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})

    trace = httpx.get(f"{gw.url}/swarm/episodes/{episode['episode_id']}").json()
    calls = trace["calls"]
    assert len(calls) == 3
    for call in calls:
        assert "</tool_call> I will check." in call["completion_text"]
    assert [call["drift"] for call in calls] == ["fresh", "repaired", "repaired"]
    (timelines,) = trace["timelines"].values()
    assert len(timelines) == 1
    last = calls[-1]
    assert timelines[0]["token_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]
