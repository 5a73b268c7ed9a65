"""Fixtures for gateway tests: an app on fakes, a SQLite recorder in a temp dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import make_app
from gateway.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.fakes import EchoEngine, fake_served_model

MODEL = "fake-model"


@pytest.fixture
def settings(tmp_path: Path) -> GatewaySettings:
    return GatewaySettings(state_dir=tmp_path / "gateway", api_key=None)


@pytest.fixture
def recorder(settings: GatewaySettings) -> EpisodeRecorder:
    return EpisodeRecorder.from_settings(settings)


ClientFactory = Callable[..., TestClient]


@pytest.fixture
def make_client(settings: GatewaySettings, recorder: EpisodeRecorder) -> Iterator[ClientFactory]:
    """`make_client(api_key=..., max_body_bytes=..., **engine_options)` → a TestClient."""
    clients: list[TestClient] = []

    def build(**options) -> TestClient:
        overrides = {k: options.pop(k) for k in ("api_key", "max_body_bytes") if k in options}
        app = make_app(
            [fake_served_model(MODEL, **options)],
            recorder,
            settings.model_copy(update=overrides),
        )
        client = TestClient(app)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client: ClientFactory) -> TestClient:
    return make_client()


def engine_of(client: TestClient) -> EchoEngine:
    engine = client.app.state.gateway.models.get(MODEL).engine
    assert isinstance(engine, EchoEngine)
    return engine


def chat_body(content: str = "hello", **fields) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **fields}


def sse_data(text: str) -> list[str]:
    """The `data:` payloads of an SSE body, in order."""
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


def assert_openai_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    return body["error"]
