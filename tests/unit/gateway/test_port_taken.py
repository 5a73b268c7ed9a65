"""A gateway's port taken by another server (seen in CI: a Ray process's Prometheus
server on the port picked for a `gateway serve --ray`, whose health probe it answered with
200, so every POST of the suite got 405) — on a real `gateway serve --model tiny`:

- `gateway serve` on a port in use exits 2 in one line, before any model loads;
- `start_local_gateway` never takes another server's 200 for the gateway's health;
- on a port it picked itself and found taken, it picks another and starts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, start_http_server

import researcher.local_gateway as local_gateway
from researcher.local_gateway import PortTaken, free_port, start_local_gateway

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def foreign_server():
    """A Prometheus exposition server on a loopback port: 200 on any GET path, 405 on POST."""
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=CollectorRegistry())
    assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
    yield port
    server.shutdown()
    thread.join(timeout=5)


@pytest.mark.slow
def test_serve_on_a_port_in_use_exits_2_in_one_line_before_loading_a_model(
    tmp_path, foreign_server
):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SWARMRL_API_KEY", None)
    env.pop("SWARMRL_GATEWAY_DB_URL", None)
    command = [sys.executable, "-m", "gateway", "serve", "--model", "tiny", "--port",
               str(foreign_server), "--state-dir", str(tmp_path / "state")]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith(
        f"error: cannot bind 127.0.0.1:{foreign_server}: "
    ), result.stderr[-3000:]
    assert "pick another --port" in lines[0]
    assert not (tmp_path / "state" / "serve-config.json").exists()  # nothing loaded


@pytest.mark.slow
def test_another_servers_200_is_not_taken_for_the_gateways_health(tmp_path, foreign_server):
    started = time.monotonic()
    with pytest.raises(PortTaken, match=f"cannot bind 127.0.0.1:{foreign_server}"):
        start_local_gateway(
            model="tiny",
            state_dir=tmp_path / "state",
            log_path=tmp_path / "gateway.log",
            port=foreign_server,  # named by the caller: not picked again
            timeout=300,
        )
    assert time.monotonic() - started < 290  # refused, not timed out


@pytest.mark.slow  # starts a whole gateway (a minute on a loaded box)
def test_a_picked_port_found_taken_is_picked_again(tmp_path, monkeypatch):
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    picks = iter([taken])
    real_free_port = local_gateway.free_port
    # the first pick is a port another process took after it was seen free
    monkeypatch.setattr(local_gateway, "free_port", lambda: next(picks, None) or real_free_port())
    gateway = start_local_gateway(
        model="tiny", state_dir=tmp_path / "state", log_path=tmp_path / "gateway.log"
    )
    try:
        assert not gateway.url.endswith(f":{taken}")
        health = httpx.get(gateway.url + "/healthz").json()
        assert health["status"] == "ok" and health["models"] == ["tiny"]
    finally:
        gateway.stop()
        held.close()
