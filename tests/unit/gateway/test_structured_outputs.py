"""Structured outputs and well-formed tool calls through `/v1/chat/completions`, on the
tiny random model behind the real torch engine: whatever the model's weights, the answer
parses and validates, and a recorded call keeps what the mask did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from gateway.http.app import make_app
from tests.unit.gateway.conftest import assert_openai_error, sse_data

pytest.importorskip("llguidance", reason="constrained decoding needs llguidance")

MODEL = "tiny"
SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "integer", "minimum": 0, "maximum": 999},
        "sure": {"type": "boolean"},
        "unit": {"enum": ["m", "s", "kg"]},
    },
    "required": ["answer", "sure", "unit"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 10}},
    "required": ["city"],
    "additionalProperties": False,
}
ADD = {
    "type": "object",
    "properties": {
        "a": {"type": "integer", "maximum": 99},
        "b": {"type": "integer", "maximum": 99},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "add", "parameters": ADD}},
]
PARAMETERS = {"get_weather": WEATHER, "add": ADD}
SEEDS = range(4)


@pytest.fixture(scope="module")
def client(tiny_loaded, tiny_tokenizer, tmp_path_factory) -> Iterator[TestClient]:
    from gateway.recording.recorder import EpisodeRecorder
    from gateway.settings import GatewaySettings
    from trainer.config import EngineConfig
    from trainer.engine import TorchEngine
    from trainer.types import ServedModel

    settings = GatewaySettings(
        state_dir=tmp_path_factory.mktemp("gateway"), api_key=None, allowed_hosts=["testserver"]
    )
    engine = TorchEngine(tiny_loaded.model, tiny_tokenizer, EngineConfig(max_batch=8))
    served = ServedModel(name=MODEL, tokenizer=tiny_tokenizer, engine=engine)
    recorder = EpisodeRecorder.from_settings(settings)
    try:
        with TestClient(make_app([served], recorder, settings)) as test_client:
            test_client.recorder = recorder  # type: ignore[attr-defined]
            yield test_client
    finally:
        engine.shutdown()


def chat(client: TestClient, url: str = "/v1/chat/completions", **fields: Any) -> Any:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "What is 12 * 7?"}]}
    body |= {"max_tokens": 120} | fields
    return client.post(url, json=body)


def json_schema_format(schema: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": schema, "strict": strict},
    }


@pytest.mark.parametrize("strict", [True, False])
def test_json_schema_answers_parse_and_validate_for_several_seeds(client, strict):
    for seed in SEEDS:
        response = chat(client, response_format=json_schema_format(SCHEMA, strict), seed=seed)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        assert choice["finish_reason"] == "stop"
        jsonschema.validate(json.loads(choice["message"]["content"]), SCHEMA)


def test_json_object_answers_are_json_objects(client):
    response = chat(client, response_format={"type": "json_object"}, seed=1, max_tokens=200)
    choice = response.json()["choices"][0]
    if choice["finish_reason"] == "stop":  # an open-ended object may run to max_tokens
        assert isinstance(json.loads(choice["message"]["content"]), dict)
    else:
        assert choice["message"]["content"].startswith("{")


def assert_declared_call_with_valid_arguments(choice: dict[str, Any], names: set[str]) -> None:
    assert choice["finish_reason"] == "tool_calls", choice
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] in names
    arguments = json.loads(call["function"]["arguments"])
    jsonschema.validate(arguments, PARAMETERS[call["function"]["name"]])


def test_required_tool_calls_name_a_declared_tool_with_schema_valid_arguments(client):
    for seed in SEEDS:
        response = chat(client, tools=TOOLS, tool_choice="required", seed=seed)
        assert response.status_code == 200, response.text
        assert_declared_call_with_valid_arguments(response.json()["choices"][0], set(PARAMETERS))


def test_a_named_tool_choice_calls_that_tool_with_valid_arguments(client):
    named = {"type": "function", "function": {"name": "add"}}
    for seed in SEEDS:
        response = chat(client, tools=TOOLS, tool_choice=named, seed=seed)
        assert_declared_call_with_valid_arguments(response.json()["choices"][0], {"add"})


def test_streamed_forced_tool_calls_carry_their_type(client):
    response = chat(client, tools=TOOLS, tool_choice="required", seed=2, stream=True)
    chunks = [json.loads(data) for data in sse_data(response.text)[:-1]]
    deltas = [
        c["choices"][0]["delta"]["tool_calls"]
        for c in chunks
        if c["choices"][0]["delta"].get("tool_calls")
    ]
    assert len(deltas) == 1
    assert deltas[0][0]["type"] == "function"
    assert deltas[0][0]["function"]["name"] in PARAMETERS


def test_json_answer_or_tool_call_with_auto_tools_and_a_schema(client):
    for seed in SEEDS:
        response = chat(client, tools=TOOLS, response_format=json_schema_format(SCHEMA), seed=seed)
        choice = response.json()["choices"][0]
        if choice["message"].get("tool_calls"):
            assert_declared_call_with_valid_arguments(choice, set(PARAMETERS))
        else:
            jsonschema.validate(json.loads(choice["message"]["content"]), SCHEMA)


@pytest.mark.parametrize(
    ("response_format", "says"),
    [
        (json_schema_format({"type": "colour"}), "Invalid type"),
        (json_schema_format({"$ref": "#/$defs/nowhere"}), "does not exist"),
        (json_schema_format({"type": "object", "not": {"required": ["a"]}}), "Unimplemented"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
    ],
)
def test_bad_or_unsupported_schemas_are_a_400_naming_response_format(client, response_format, says):
    response = chat(client, response_format=response_format)
    error = assert_openai_error(response, 400)
    assert error["param"] == "response_format"
    assert says in error["message"]


def test_a_tool_whose_parameters_schema_cannot_be_compiled_is_a_400_naming_tools(client):
    bad = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}},
            },
        }
    ]
    error = assert_openai_error(chat(client, tools=bad, tool_choice="required"), 400)
    assert error["param"] == "tools" and "strin" in error["message"]


def test_a_recorded_constrained_call_keeps_masked_logprobs_and_marks_constrained_tokens(client):
    recorder = client.recorder
    episode = recorder.create_episode(run="r", task_id="t")
    url = f"/episodes/{episode.episode_id}/v1/chat/completions"
    response = chat(client, url, response_format=json_schema_format(SCHEMA), seed=7, logprobs=True)
    assert response.status_code == 200, response.text
    (call,) = recorder.get_calls(episode.episode_id)
    wire = [entry["logprob"] for entry in response.json()["choices"][0]["logprobs"]["content"]]
    assert call.logprobs == pytest.approx(wire)  # the distribution sampled from
    assert call.constrained is not None and any(call.constrained)
    assert call.unconstrained_logprobs is not None
    assert call.behaviour_logprobs == call.unconstrained_logprobs
    for masked, free, marked in zip(
        call.logprobs, call.unconstrained_logprobs, call.constrained, strict=True
    ):
        assert masked >= free - 1e-6  # a mask only removes mass
        assert marked == (masked - free > 1e-6)
    trace = call.to_trace()
    assert trace.constrained == call.constrained
    plain = chat(client, url, max_tokens=5, seed=1)
    assert plain.status_code == 200
    second = recorder.get_calls(episode.episode_id)[1]
    assert second.constrained is None and second.behaviour_logprobs == second.logprobs


def test_a_forced_tool_call_wins_over_a_json_response_format(client):
    response = chat(
        client,
        tools=TOOLS,
        tool_choice="required",
        response_format=json_schema_format(SCHEMA),
        seed=3,
    )
    assert_declared_call_with_valid_arguments(response.json()["choices"][0], set(PARAMETERS))


# ---- /v1/completions: the same response_format, the same recording -----------------------


def complete(client: TestClient, url: str = "/v1/completions", **fields: Any) -> Any:
    body = {"model": MODEL, "prompt": "12 * 7 as JSON:", "max_tokens": 120} | fields
    return client.post(url, json=body)


@pytest.mark.parametrize("stream", [False, True])
def test_a_text_completion_honours_a_json_schema_response_format(client, stream):
    for seed in SEEDS:
        response = complete(
            client, response_format=json_schema_format(SCHEMA), seed=seed, stream=stream
        )
        assert response.status_code == 200, response.text
        if stream:
            chunks = [json.loads(data) for data in sse_data(response.text)[:-1]]
            text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        else:
            (choice,) = response.json()["choices"]
            assert choice["finish_reason"] == "stop"
            text = choice["text"]
        jsonschema.validate(json.loads(text), SCHEMA)


def test_a_text_completion_honours_json_object(client):
    response = complete(client, response_format={"type": "json_object"}, seed=2, max_tokens=200)
    choice = response.json()["choices"][0]
    if choice["finish_reason"] == "stop":
        assert isinstance(json.loads(choice["text"]), dict)
    else:  # cut by max_tokens: still the start of an object
        assert choice["text"].startswith("{")


@pytest.mark.parametrize(
    ("response_format", "says"),
    [
        (json_schema_format({"type": "colour"}), "Invalid type"),
        (json_schema_format({"type": "object", "not": {"required": ["a"]}}), "Unimplemented"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
    ],
)
def test_a_bad_schema_for_a_text_completion_is_a_400_naming_response_format(
    client, response_format, says
):
    error = assert_openai_error(complete(client, response_format=response_format), 400)
    assert error["param"] == "response_format"
    assert says in error["message"]


def test_a_recorded_constrained_text_completion_keeps_what_the_mask_did(client):
    recorder = client.recorder
    episode = recorder.create_episode(run="r", task_id="t")
    url = f"/episodes/{episode.episode_id}/v1/completions"
    response = complete(client, url, response_format=json_schema_format(SCHEMA), seed=5, logprobs=0)
    assert response.status_code == 200, response.text
    (call,) = recorder.get_calls(episode.episode_id)
    assert call.kind == "completions"
    assert call.logprobs == pytest.approx(
        response.json()["choices"][0]["logprobs"]["token_logprobs"]
    )
    assert call.constrained is not None and any(call.constrained)
    assert call.unconstrained_logprobs is not None
    for masked, free, marked in zip(
        call.logprobs, call.unconstrained_logprobs, call.constrained, strict=True
    ):
        assert masked >= free - 1e-6
        assert marked == (masked - free > 1e-6)
    plain = complete(client, url, max_tokens=4, seed=1)
    assert plain.status_code == 200
    assert recorder.get_calls(episode.episode_id)[1].constrained is None
