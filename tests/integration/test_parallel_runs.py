"""`parallel_runs` "auto" against real gateways over HTTP: a `gateway serve` of the tiny
model (its `GET /capacity` decides, and the study's start records the number in an event),
and the gateway app without that route, as a gateway older than it answers (1 run)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from rich.console import Console

from experiments_db import crud
from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from researcher import study as study_module
from researcher.concurrency import resolve_parallel_runs
from researcher.gateway_api import GatewayAPI
from researcher.settings import StudySettings
from tests.fakes import fake_served_model
from tests.integration.conftest import shared_tiny

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_gateway(shared_tiny_gateway) -> str:
    return shared_tiny(shared_tiny_gateway).url  # no run: its capacity, and a study's start


def without_capacity(app):
    """`app` as a gateway older than `GET /capacity` answers it: its own 404 for a path it
    does not know (the request reaches the app under a name no version serves)."""

    async def older(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/capacity":
            scope = {**scope, "path": "/not-in-this-version", "raw_path": b"/not-in-this-version"}
        await app(scope, receive, send)

    return older


@pytest.fixture
def older_gateway(tmp_path) -> Iterator[str]:
    settings = GatewaySettings(state_dir=tmp_path / "older", api_key=None)
    recorder = EpisodeRecorder.from_settings(settings)
    app = without_capacity(make_app([fake_served_model("fake-model")], recorder, settings))
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
    thread.join(timeout=30)


def test_a_tiny_gateway_reports_its_capacity_and_auto_takes_its_suggestion(tiny_gateway):
    api = GatewayAPI(tiny_gateway)
    try:
        capacity = api.capacity()
        resolved = resolve_parallel_runs("auto", api)
    finally:
        api.close()
    assert capacity is not None
    assert capacity["device"] == "cpu" and capacity["engine_threads"] >= 1
    assert capacity["suggested_concurrent_runs"] == (2 if capacity["cpus"] >= 2 else 1)
    assert resolved.runs == capacity["suggested_concurrent_runs"]
    assert f"on {capacity['cpus']} CPUs" in resolved.reason


def test_a_study_on_a_gateway_resolves_auto_to_a_number_and_records_it(
    tiny_gateway, tmp_path, monkeypatch
):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    engine = study_module.open_db()
    row = study_module.create_study(
        engine, StudySettings(question="does it learn?", budget_s=60, gateway=tiny_gateway)
    )
    ctx = study_module.build_context(engine, row, Console(file=None, quiet=True))
    try:
        expected = ctx.gateway.capacity()["suggested_concurrent_runs"]
        assert ctx.settings.parallel_runs == expected  # a number: launch and monitor use it
        with ctx.session() as session:
            messages = [e.message for e in crud.events(session, study_id=row.id)]
        assert f"parallel runs: {expected} (the gateway suggests {expected}" in "\n".join(messages)
        # settings.json keeps what was asked: a resume asks the gateway again
        assert study_module.load_settings(row).parallel_runs == "auto"
    finally:
        ctx.gateway.close()


def test_auto_on_a_gateway_without_capacity_trains_one_run_at_a_time(older_gateway):
    api = GatewayAPI(older_gateway)
    try:
        assert api.capacity() is None  # its 404, not an error
        resolved = resolve_parallel_runs("auto", api)
    finally:
        api.close()
    assert resolved.runs == 1
    assert "no /capacity" in resolved.reason
