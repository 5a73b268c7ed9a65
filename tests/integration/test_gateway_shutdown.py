"""SIGTERM is bounded: a real `gateway serve --model tiny` with a long non-streamed request
in flight (minutes of generation) exits within a bounded time instead of waiting for it
(issue 14, F1). Streams end on SIGTERM by themselves (sse-starlette); whole answers did not.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_gateway_shutdown.py
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from urllib.parse import urlparse

import pytest

from tests.integration.conftest import start_gateway, stop_gateway

pytestmark = pytest.mark.slow

EXIT_BOUND_S = 30  # generous: the grace is 5 s, then the engine stops between two steps


def long_request(url: str) -> socket.socket:
    """Send a non-streamed chat that generates for minutes; read nothing."""
    body = json.dumps(
        {
            "model": "tiny",
            "messages": [{"role": "user", "content": "talk for a long time"}],
            "n": 64,
            "max_tokens": 2000,
            "ignore_eos": True,
        }
    ).encode()
    address = urlparse(url)
    sock = socket.create_connection((address.hostname, address.port), timeout=60)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {address.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def test_sigterm_exits_in_bounded_time_while_a_long_request_runs(tmp_path):
    gw = start_gateway(tmp_path, "--dtype", "float32", "--max-batch", "8", model="tiny")
    sock = long_request(gw.url)
    try:
        time.sleep(3)  # the request is generating
        started = time.monotonic()
        gw.process.terminate()
        try:
            gw.process.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the gateway still ran {EXIT_BOUND_S} s after SIGTERM:\n{gw.log()}")
        assert time.monotonic() - started < EXIT_BOUND_S
    finally:
        sock.close()
        stop_gateway(gw)
