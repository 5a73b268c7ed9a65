"""F5 (issue 14): cross-site requests and DNS rebinding against the gateway and the UI.

The reported requests are refused — a cross-site `POST /runs/X/pause` with
`Content-Type: text/plain`, a request naming `Host: evil.example:P` with a matching Origin —
while our own clients (the swarm client, the researcher's GatewayAPI, the OpenAI SDK, the
UI's forms) go on working. The gateway runs under uvicorn on loopback, so every request
carries the Host header a real client sends.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest
import uvicorn
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.studies import StudyRow
from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from researcher.cli import app as researcher_cli
from researcher.gateway_api import GatewayAPI
from researcher.study import open_db
from researcher.web.app import make_app as make_ui
from swarm.client import SwarmClient
from swarm.protocol import EpisodeFinish
from tests.fakes import FakePolicyFactory, fake_served_model

MODEL = "fake-model"
EVIL = "http://evil.example"


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """`serve(**settings)` → the URL of a gateway on fakes under uvicorn on 127.0.0.1."""
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(tmp: object, **fields) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        settings = GatewaySettings(state_dir=tmp, api_key=None, port=port, **fields)
        app = make_app(
            [fake_served_model(MODEL)],
            EpisodeRecorder.from_settings(settings),
            settings,
            policy_factory=FakePolicyFactory(),
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture
def gateway(serve, tmp_path) -> str:
    url = serve(tmp_path / "gateway")
    assert httpx.post(f"{url}/runs", json={"name": "r"}).status_code == 201
    return url


def status_of(url: str, run: str = "r") -> str:
    return httpx.get(f"{url}/runs/{run}").json()["status"]


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


# -- the gateway: the reported requests --------------------------------------------------------


@pytest.mark.parametrize("verb", ["pause", "stop"])
def test_a_cross_site_text_plain_post_cannot_pause_or_stop_a_run(gateway, verb):
    """What `fetch(url, {method: "POST", mode: "no-cors", body: "x"})` on any page sends."""
    headers = {"Content-Type": "text/plain;charset=UTF-8", "Origin": EVIL}
    response = httpx.post(f"{gateway}/runs/r/{verb}", content=b"x", headers=headers)
    error = error_of(response, 403)
    assert error["code"] == "cross_site_request" and "evil.example" in error["message"]
    assert status_of(gateway) == "running"


@pytest.mark.parametrize("body", [b"", b"x"])
def test_a_text_plain_post_without_origin_is_a_415(gateway, body):
    """A browser that omits Origin still sends its simple request's content type."""
    headers = {"Content-Type": "text/plain"}
    response = httpx.post(f"{gateway}/runs/r/pause", content=body, headers=headers)
    assert error_of(response, 415)["code"] == "unsupported_media_type"
    assert status_of(gateway) == "running"


def test_a_form_encoded_post_is_a_415(gateway):
    response = httpx.post(f"{gateway}/runs", data={"name": "x"})
    assert "application/json" in error_of(response, 415)["message"]
    assert httpx.get(f"{gateway}/runs/x").status_code == 404


def test_a_cross_site_post_named_only_by_its_referer_is_refused(gateway):
    headers = {"Referer": f"{EVIL}/page.html"}
    assert httpx.post(f"{gateway}/runs/r/pause", headers=headers).status_code == 403
    assert status_of(gateway) == "running"


def test_a_rebound_host_with_a_matching_origin_is_a_421(gateway):
    """DNS rebinding: evil.example now resolves to 127.0.0.1; the page is same-origin to
    itself, so only the Host tells the gateway it was not meant."""
    port = gateway.rsplit(":", 1)[1]
    headers = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    response = httpx.post(f"{gateway}/runs/r/pause", json={}, headers=headers)
    error = error_of(response, 421)
    assert error["code"] == "host_not_allowed" and "--allowed-host" in error["message"]
    assert httpx.get(f"{gateway}/runs", headers={"Host": "evil.example"}).status_code == 421
    assert status_of(gateway) == "running"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_loopback_names_on_any_port_are_accepted(gateway, host):
    response = httpx.get(f"{gateway}/runs/r", headers={"Host": f"{host}:1234"})
    assert response.status_code == 200, response.text


def test_a_same_origin_post_and_an_allowed_proxy_name_are_accepted(serve, tmp_path):
    url = serve(tmp_path / "g", allowed_hosts=["swarm.example.com"])
    assert httpx.post(f"{url}/runs", json={"name": "r"}, headers={"Origin": url}).is_success
    proxied = {"Host": "swarm.example.com", "Origin": "https://swarm.example.com"}
    assert httpx.post(f"{url}/runs/r/pause", headers=proxied).json()["status"] == "paused"
    assert httpx.get(f"{url}/healthz", headers={"Host": "other.example.com"}).status_code == 421


def test_public_base_url_names_a_host_the_gateway_answers_to(serve, tmp_path):
    url = serve(tmp_path / "g", public_base_url="https://gw.example.org/")
    assert httpx.get(f"{url}/runs", headers={"Host": "gw.example.org"}).status_code == 200


# -- the gateway: our own clients --------------------------------------------------------------


def test_the_researchers_gateway_api_controls_runs(gateway):
    api = GatewayAPI(gateway)
    try:
        assert api.pause_run("r")["status"] == "paused"
        assert api.resume_run("r")["status"] == "running"
        assert api.patch_run("r", {"lr": 1e-5})["settings"]["lr"] == 1e-5
        assert api.stop_run("r")["status"] == "stopped"
    finally:
        api.close()


def test_the_swarm_client_and_the_openai_sdk_run_an_episode(gateway):
    async def episode() -> float:
        client = SwarmClient(gateway, retry_for_s=5)
        try:
            await client.register()
            await client.heartbeat()
            created = await client.create_episode("r", "t-1")
            sdk = openai.AsyncOpenAI(base_url=created.base_url, api_key=created.api_key)
            answer = await sdk.chat.completions.create(
                model=created.model, messages=[{"role": "user", "content": "hi"}], max_tokens=4
            )
            assert answer.choices[0].message.content is not None
            await sdk.close()
            result = await client.finish_episode(created.episode_id, EpisodeFinish(reward=1.0))
            await client.deregister()
            return result.rewards["policy"]
        finally:
            await client.close()

    assert asyncio.run(episode()) == 1.0
    assert httpx.get(f"{gateway}/runs/r").json()["episodes_finished"] == 1


# -- the UI -----------------------------------------------------------------------------------

STUDY = "st-0000feed"
UI = "http://127.0.0.1:8500"


@pytest.fixture
def ui_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    engine = open_db()
    now = time.time()
    with session_scope(engine) as session:
        crud.create_study(session, study=StudyRow(
            id=STUDY, question="q?", status="running", phase="monitor", planner="template",
            budget_s=60, seeds=1, directory=str(tmp_path / STUDY), created_at=now,
            updated_at=now))  # fmt: skip
    return engine


def notes(engine) -> list:
    with session_scope(engine) as session:
        return crud.interventions(session, study_id=STUDY)


def test_the_ui_refuses_a_rebound_host_note_post(ui_engine):
    ui = TestClient(make_ui(ui_engine), base_url="http://evil.example:8500")
    response = ui.post(
        f"/studies/{STUDY}/note",
        data={"text": "planted"},
        headers={"Origin": "http://evil.example:8500"},
    )
    assert response.status_code == 421 and "evil.example" in response.text
    assert notes(ui_engine) == []


def test_the_ui_refuses_a_cross_site_form_post_and_takes_its_own(ui_engine):
    ui = TestClient(make_ui(ui_engine), base_url=UI)
    foreign = ui.post(f"/studies/{STUDY}/note", data={"text": "x"}, headers={"Origin": EVIL})
    assert foreign.status_code == 403 and notes(ui_engine) == []
    referred = ui.post(
        f"/studies/{STUDY}/note", data={"text": "x"}, headers={"Referer": f"{EVIL}/a"}
    )
    assert referred.status_code == 403 and notes(ui_engine) == []
    own = ui.post(f"/studies/{STUDY}/note", data={"text": "mine"}, headers={"Origin": UI})
    assert own.status_code in (200, 303), own.text
    assert [item.payload for item in notes(ui_engine)] == [{"text": "mine"}]


# -- F8: a non-ASCII UI token --------------------------------------------------------------------


def test_a_non_ascii_token_in_a_request_is_a_401_not_a_500(ui_engine):
    ui = TestClient(make_ui(ui_engine, token="s3cret"), base_url=UI)
    assert ui.get("/", params={"token": "ü"}).status_code == 401
    assert ui.get("/", headers={"Authorization": "Bearer ü".encode()}).status_code == 401
    assert ui.get("/", headers={"Cookie": "swarmrl_ui_token=ü".encode()}).status_code == 401
    assert ui.get("/", params={"token": "s3cret"}).status_code == 200


def test_researcher_ui_with_a_non_ascii_token_exits_2_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    result = CliRunner().invoke(researcher_cli, ["ui", "--token", "ü"])
    assert result.exit_code == 2
    assert "printable ASCII" in " ".join(result.output.split())
