"""Every bad input gets the right status and an OpenAI-shaped error naming the problem."""

from __future__ import annotations

import pytest

from tests.unit.gateway.conftest import MODEL, assert_openai_error, chat_body
from trainer.errors import EngineFailure, EngineStopped, PromptTooLong


def test_malformed_json_is_a_400(client):
    response = client.post(
        "/v1/chat/completions", content=b'{"model": ', headers={"content-type": "application/json"}
    )
    error = assert_openai_error(response, 400)
    assert "Malformed JSON" in error["message"]


def test_missing_messages_is_a_400_naming_the_field(client):
    response = client.post("/v1/chat/completions", json={"model": MODEL})
    error = assert_openai_error(response, 400)
    assert error["param"] == "messages"
    assert error["message"].startswith("messages:")


def test_wrong_type_is_a_400_naming_the_field(client):
    response = client.post("/v1/chat/completions", json=chat_body(n="many"))
    error = assert_openai_error(response, 400)
    assert error["param"] == "n"


def test_bad_role_is_a_400_naming_the_nested_field(client):
    body = {"model": MODEL, "messages": [{"role": "robot", "content": "hi"}]}
    error = assert_openai_error(client.post("/v1/chat/completions", json=body), 400)
    assert error["param"] == "messages.0.role"


def test_unknown_model_is_a_404_model_not_found(client):
    response = client.post("/v1/chat/completions", json={**chat_body(), "model": "nope"})
    error = assert_openai_error(response, 404, "model_not_found")
    assert error["param"] == "model"


def test_prompt_too_long_is_a_400_context_length_exceeded(make_client):
    client = make_client(max_context=32)
    response = client.post("/v1/chat/completions", json=chat_body("x" * 100))
    error = assert_openai_error(response, 400, "context_length_exceeded")
    assert error["param"] == "messages"


def test_completion_prompt_too_long_names_the_prompt(make_client):
    client = make_client(max_context=8)
    body = {"model": MODEL, "prompt": "x" * 8}
    error = assert_openai_error(client.post("/v1/completions", json=body), 400)
    assert error["code"] == "context_length_exceeded" and error["param"] == "prompt"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 5),
        ("top_p", 0),
        ("n", 0),
        ("max_tokens", 0),
        ("max_completion_tokens", 0),
        ("top_logprobs", 50),
        ("stop", ["a", "b", "c", "d", "e"]),
    ],
)
def test_out_of_range_value_is_a_400_naming_the_field(client, field, value):
    body = chat_body(logprobs=True, **{field: value})
    error = assert_openai_error(client.post("/v1/chat/completions", json=body), 400)
    assert error["param"] is not None and error["param"].startswith(field)


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/completions"])
def test_five_stop_strings_are_a_400_that_says_at_most_four(client, route):
    body = chat_body() if route.endswith("chat/completions") else {"model": MODEL, "prompt": "hi"}
    response = client.post(route, json=body | {"stop": ["a", "b", "c", "d", "e"]})
    error = assert_openai_error(response, 400)
    assert error["param"] == "stop"
    assert error["message"] == "stop: at most 4 stop sequences, got 5"


def test_four_stop_strings_are_accepted(client):
    body = chat_body(stop=["a", "b", "c", "d"])
    assert client.post("/v1/chat/completions", json=body).status_code == 200


@pytest.mark.parametrize(
    ("field", "value"),
    [("presence_penalty", 0.5), ("frequency_penalty", -1), ("logit_bias", {"5": 1.0})],
)
def test_unsupported_semantics_are_a_400(client, field, value):
    response = client.post("/v1/chat/completions", json=chat_body(**{field: value}))
    assert assert_openai_error(response, 400)["param"] == field


def test_zero_penalties_are_accepted(client):
    body = chat_body(presence_penalty=0, frequency_penalty=0.0)
    assert client.post("/v1/chat/completions", json=body).status_code == 200


def test_top_logprobs_without_logprobs_is_a_400(client):
    response = client.post("/v1/chat/completions", json=chat_body(top_logprobs=2))
    assert assert_openai_error(response, 400)["param"] == "top_logprobs"


def test_tool_choice_naming_an_unknown_tool_is_a_400(client):
    body = chat_body(
        tools=[{"type": "function", "function": {"name": "add"}}],
        tool_choice={"type": "function", "function": {"name": "subtract"}},
    )
    response = client.post("/v1/chat/completions", json=body)
    assert assert_openai_error(response, 400)["param"] == "tool_choice"


def test_unknown_harmless_field_is_accepted(client):
    body = chat_body(some_future_field={"x": 1}, user="alice", metadata={"k": "v"})
    assert client.post("/v1/chat/completions", json=body).status_code == 200


def test_body_over_the_limit_is_a_413(make_client):
    client = make_client(max_body_bytes=1000)
    response = client.post("/v1/chat/completions", json=chat_body("x" * 2000))
    assert_openai_error(response, 413, "payload_too_large")


def test_chunked_body_over_the_limit_is_a_413(make_client):
    client = make_client(max_body_bytes=1000)

    def chunks():
        yield b'{"model": "fake-model", "messages": [{"role": "user", "content": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}]}'

    response = client.post(
        "/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_openai_error(response, 413, "payload_too_large")


def test_body_under_the_limit_is_served(make_client):
    client = make_client(max_body_bytes=1000)
    assert client.post("/v1/chat/completions", json=chat_body("x" * 100)).status_code == 200


def test_unknown_route_is_an_openai_shaped_404(client):
    error = assert_openai_error(client.get("/v1/nothing-here"), 404)
    assert "/v1/nothing-here" in error["message"]


def test_wrong_method_is_an_openai_shaped_405(client):
    assert_openai_error(client.get("/v1/chat/completions"), 405)


def test_a_raising_engine_is_a_500_without_internals_and_the_server_keeps_serving(make_client):
    client = make_client(explode=True)
    response = client.post("/v1/chat/completions", json=chat_body())
    error = assert_openai_error(response, 500)
    assert error["type"] == "server_error"
    assert "SECRET" not in response.text and "Traceback" not in response.text
    assert client.get("/healthz").status_code == 200
    assert client.post("/v1/chat/completions", json=chat_body()).status_code == 500


def test_a_raising_engine_mid_stream_sends_an_error_event(make_client):
    client = make_client(explode=True)
    response = client.post("/v1/chat/completions", json=chat_body(stream=True))
    assert response.status_code == 200
    assert '"server_error"' in response.text and "SECRET" not in response.text


def test_an_engine_prompt_too_long_is_a_400_context_length_exceeded(make_client):
    client = make_client(explode=PromptTooLong("prompt has 900 tokens"))
    response = client.post("/v1/chat/completions", json=chat_body())
    assert_openai_error(response, 400, "context_length_exceeded")


def test_a_stopped_engine_is_a_503(make_client):
    client = make_client(explode=EngineStopped("the engine has been shut down"))
    assert_openai_error(client.post("/v1/completions", json={"model": MODEL, "prompt": "a"}), 503)


def test_an_engine_failure_is_a_generic_500(make_client):
    client = make_client(explode=EngineFailure("CUDA error: SECRET"))
    response = client.post("/v1/chat/completions", json=chat_body())
    assert_openai_error(response, 500)
    assert "SECRET" not in response.text
