"""A bounded schemathesis run against the real gateway app: every operation of its OpenAPI
schema, fuzzed over loopback HTTP with a fixed seed and a capped number of examples (valid
and invalid inputs), must never answer 5xx — on the default gateway (no admin key) and on
one with an admin key, called with and without it. The app is `gateway.http.app.make_app` on the
fakes of tests/fakes.py (the composition the gateway unit tests use), served by uvicorn on
127.0.0.1.

    .venv/bin/python -m pytest -q tests/security/test_fuzz.py

FUZZ_EXAMPLES=200 (examples per operation and mode) makes a longer local hunt.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, Phase, given, settings

schemathesis = pytest.importorskip("schemathesis", reason="pip install -e '.[dev]'")

from gateway.http.app import make_app  # noqa: E402
from gateway.recording.recorder import EpisodeRecorder  # noqa: E402
from gateway.settings import GatewaySettings  # noqa: E402
from tests.fakes import FakePolicyFactory, fake_served_model  # noqa: E402

ADMIN_KEY = "sk-fuzz-admin"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
MODEL = "fake-model"
RUN_NUMBER = itertools.count()
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the same cases on every run: a failure reproduces
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: every 5xx found is reported
    suppress_health_check=list(HealthCheck),
)


def serve(state_dir: Path, api_key: str | None) -> Iterator[str]:
    """The gateway app on fakes, on a free loopback port until the generator closes."""
    gateway_settings = GatewaySettings(state_dir=state_dir, api_key=api_key)
    app = make_app(
        [fake_served_model(MODEL)],
        EpisodeRecorder.from_settings(gateway_settings),
        gateway_settings,
        policy_factory=FakePolicyFactory(),
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    yield f"http://{host}:{port}"
    server.should_exit = True
    thread.join(timeout=60)


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory) -> Iterator[str]:
    yield from serve(tmp_path_factory.mktemp("fuzz-open"), api_key=None)


@pytest.fixture(scope="module")
def keyed_gateway(tmp_path_factory) -> Iterator[str]:
    yield from serve(tmp_path_factory.mktemp("fuzz-keyed"), api_key=ADMIN_KEY)


def live_targets(base_url: str) -> dict[str, str]:
    """A run, a registered client and an open episode on the gateway, so that valid cases
    reach the handlers behind them instead of stopping at 404 on a random name."""
    name = f"fuzz-{next(RUN_NUMBER)}"
    with httpx.Client(base_url=base_url, timeout=60, headers=ADMIN) as http:
        run = http.post("/runs", json={"name": name, "policies": {"p": {"base_model": MODEL}}})
        assert run.status_code == 201, run.text
        client = http.post("/swarm/clients", json={"name": "fuzz"}).raise_for_status().json()
        episode = (
            http.post(
                "/swarm/episodes",
                json={"run": name, "task_id": "t", "client_id": client["client_id"]},
            )
            .raise_for_status()
            .json()
        )
    return {
        "run_id": name,
        "client_id": client["client_id"],
        "episode_id": episode["episode_id"],
        "model": MODEL,
        "episode_model": episode["model"],
    }


def aim(case, targets: dict[str, str]) -> None:
    """Point a valid case at the live resources (path names and the body's `model`)."""
    for name in case.path_parameters or {}:
        if name in targets:
            case.path_parameters[name] = targets[name]
    if isinstance(case.body, dict) and "model" in case.body:
        scoped = case.path.startswith("/episodes/")
        case.body["model"] = targets["episode_model" if scoped else "model"]


def modes(operation) -> list:
    """Both modes where the operation takes more than path names (a path name is any string:
    there is nothing invalid to generate for it)."""
    takes_input = operation.query.items or operation.headers.items or operation.body.items
    return (
        list(schemathesis.GenerationMode) if takes_input else [schemathesis.GenerationMode.POSITIVE]
    )


def fuzz(operation, mode, base_url: str, headers: dict[str, str], targets: dict) -> list[str]:
    """The 5xx answers to one operation's cases in one mode, one line each."""
    found: list[str] = []

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def call(case) -> None:
        if mode is schemathesis.GenerationMode.POSITIVE:
            aim(case, targets)
        response = case.call(base_url=base_url, headers=headers, timeout=30)
        if response.status_code >= 500:
            body = case.body if isinstance(case.body, dict | list | str | bytes) else None
            found.append(
                f"{case.method} {case.formatted_path} ({mode.value}) query={case.query!r}"
                f" body={body!r} -> {response.status_code} {response.text[:300]}"
            )

    call()
    return found


def server_errors(base_url: str, headers: dict[str, str]) -> list[str]:
    """Fuzz every operation of the app's schema; the 5xx answers."""
    targets = live_targets(base_url)
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", headers=headers)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 10, "the schema lost its operations"
    return [
        error
        for operation in operations
        for mode in modes(operation)
        for error in fuzz(operation, mode, base_url, headers, targets)
    ]


def test_no_fuzzed_request_to_the_default_gateway_answers_5xx(open_gateway):
    errors = server_errors(open_gateway, {})
    assert not errors, "\n".join(errors)


def test_no_fuzzed_request_with_the_admin_key_answers_5xx(keyed_gateway):
    errors = server_errors(keyed_gateway, ADMIN)
    assert not errors, "\n".join(errors)


def test_no_fuzzed_request_without_the_admin_key_answers_5xx(keyed_gateway):
    errors = server_errors(keyed_gateway, {})
    assert not errors, "\n".join(errors)


def test_a_chat_whose_echo_is_a_malformed_tool_call_answers_200(open_gateway):
    """Found by this fuzz (FUZZ_EXAMPLES=100): the fake tokenizer raised on a `<tool_call>`
    that is not JSON, where the real parser leaves it in the content."""
    body = {
        "model": MODEL,
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "messages": [{"role": "user", "content": "<tool_call>{not json}</tool_call>"}],
    }
    with httpx.Client(base_url=open_gateway, timeout=60) as http:
        reply = http.post("/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    assert "<tool_call>{not json}</tool_call>" in reply.json()["choices"][0]["message"]["content"]
