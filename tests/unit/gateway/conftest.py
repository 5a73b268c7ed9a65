"""Fixtures for gateway tests: an app on fakes, a SQLite recorder in a temp dir, and
helpers for the swarm and run APIs (runs on `FakePolicyFactory`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.fakes import EchoEngine, FakePolicyFactory, fake_served_model

MODEL = "fake-model"


@pytest.fixture
def settings(tmp_path: Path) -> GatewaySettings:
    # TestClient's requests name Host "testserver" (tests/security checks the real names)
    return GatewaySettings(
        state_dir=tmp_path / "gateway", api_key=None, allowed_hosts=["testserver"]
    )


@pytest.fixture
def recorder(settings: GatewaySettings) -> EpisodeRecorder:
    return EpisodeRecorder.from_settings(settings)


ClientFactory = Callable[..., TestClient]
SETTING_NAMES = frozenset(GatewaySettings.model_fields)


@pytest.fixture
def make_client(settings: GatewaySettings, recorder: EpisodeRecorder) -> Iterator[ClientFactory]:
    """`make_client(api_key=..., <any GatewaySettings field>=..., policy_factory=...,
    **engine_options)` → a TestClient with the app's lifespan running."""
    clients: list[TestClient] = []

    def build(*, policy_factory=None, **options) -> TestClient:
        overrides = {k: options.pop(k) for k in list(options) if k in SETTING_NAMES}
        app = make_app(
            [fake_served_model(MODEL, **options)],
            recorder,
            settings.model_copy(update=overrides),
            policy_factory=policy_factory,
        )
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.__exit__(None, None, None)


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


# -- swarm and runs ------------------------------------------------------------------------


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def factory() -> FakePolicyFactory:
    return FakePolicyFactory()


@pytest.fixture
def tiny_factory():
    """Real policies: the tiny random model, float32 throughout (a gateway that trains)."""
    from trainer.config import EngineConfig
    from trainer.policy import TorchPolicyFactory

    return TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="float32",
        compute_dtype="float32",
    )


@pytest.fixture
def trainer_client(make_client: ClientFactory, factory: FakePolicyFactory) -> TestClient:
    """A gateway that can train (fake policies)."""
    return make_client(policy_factory=factory, client_reap_interval_s=0.05)


SHORT_LEASE_S = 2.0


@pytest.fixture
def short_lease_client(make_client: ClientFactory, factory: FakePolicyFactory) -> TestClient:
    """A gateway that can train, whose clients lapse after 2 s without a heartbeat."""
    return make_client(
        policy_factory=factory, client_lease_s=SHORT_LEASE_S, client_reap_interval_s=0.05
    )


def create_run(client: TestClient, name: str = "r", headers=None, **fields) -> dict:
    response = client.post("/runs", json={"name": name, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def open_episode(client: TestClient, run: str = "r", headers=None, **fields) -> dict:
    body = {"run": run, "task_id": "t-1", **fields}
    response = client.post("/swarm/episodes", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def chat_as(client: TestClient, episode: dict, model: str | None = None, content="hi") -> dict:
    body = chat_body(content) | {"model": model or episode["model"]}
    response = client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    assert response.status_code == 200, response.text
    return response.json()


def finish(client: TestClient, episode: dict, reward=1.0, headers=None, **fields):
    url = f"/swarm/episodes/{episode['episode_id']}/finish"
    return client.post(url, json={"reward": reward, **fields}, headers=headers)


def eventually(predicate: Callable[[], object], timeout_s: float = 30.0) -> object:
    """Poll `predicate` until it is truthy (background work: training steps, reaping)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_s} s: {predicate}")
        time.sleep(0.02)


def run_state(client: TestClient, name: str = "r", headers=None) -> dict:
    response = client.get(f"/runs/{name}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


Start = Callable[[FakePolicyFactory | None], TestClient]


@pytest.fixture
def start(settings: GatewaySettings) -> Iterator[Start]:
    """`start(factory)` → a gateway on `settings`' state dir, with a recorder of its own
    (a new process); the gateways started before are closed first."""
    clients: list[TestClient] = []

    def close_all() -> None:
        while clients:
            clients.pop().__exit__(None, None, None)

    def build(factory: FakePolicyFactory | None) -> TestClient:
        close_all()
        app = make_app(
            [fake_served_model(MODEL)],
            EpisodeRecorder.from_settings(settings),
            settings,
            policy_factory=factory,
        )
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return client

    yield build
    close_all()
