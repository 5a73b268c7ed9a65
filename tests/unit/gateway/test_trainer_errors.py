"""Errors raised on the trainer side reach clients as precise 4xx answers."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.http.app import make_app
from tests.fakes import fake_served_model
from tests.unit.gateway.conftest import MODEL, assert_openai_error, chat_body
from trainer.errors import ChatFormatError


def test_prompt_token_ids_outside_the_vocabulary_are_a_400(client):
    r = client.post("/v1/completions", json={"model": MODEL, "prompt": [5, -1, 7], "max_tokens": 2})
    body = assert_openai_error(r, 400)
    assert body["param"] == "prompt" and "token ids" in body["message"]
    assert (
        client.post(
            "/v1/completions", json={"model": MODEL, "prompt": [70, 71], "max_tokens": 2}
        ).status_code
        == 200
    )


def test_a_chat_template_that_rejects_the_messages_is_a_400(settings, recorder):
    served = fake_served_model(MODEL)

    def reject(*args, **kwargs):
        raise ChatFormatError(
            "the model's chat template rejected the messages: roles must alternate"
        )

    served.tokenizer.render_chat = reject  # type: ignore[method-assign]
    with TestClient(make_app([served], recorder, settings)) as client:
        body = assert_openai_error(client.post("/v1/chat/completions", json=chat_body()), 400)
        assert "roles must alternate" in body["message"]
        assert body["param"] == "messages"
