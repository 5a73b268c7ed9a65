"""A real `gateway serve` process on a free loopback port, serving the bundled SmolLM2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest


@dataclass
class RunningGateway:
    url: str
    process: subprocess.Popen
    state_dir: Path
    log_path: Path
    model: str

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(
    tmp: Path, *args: str, model: str = "smollm2-135m", timeout: float = 240.0
) -> RunningGateway:
    port = free_port()
    state_dir = tmp / "state"
    log_path = tmp / "gateway.log"
    cmd = [
        sys.executable,
        "-m",
        "gateway",
        "serve",
        "--model",
        model,
        "--port",
        str(port),
        "--state-dir",
        str(state_dir),
        "--log-level",
        "warning",
        *args,
    ]
    process = subprocess.Popen(
        cmd, stdout=log_path.open("w"), stderr=subprocess.STDOUT, env=dict(os.environ)
    )
    gw = RunningGateway(f"http://127.0.0.1:{port}", process, state_dir, log_path, model)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gateway exited with {process.returncode}:\n{gw.log()}")
        try:
            if httpx.get(gw.url + "/healthz", timeout=1).status_code == 200:
                return gw
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"gateway did not become healthy in {timeout}s:\n{gw.log()}")


def stop_gateway(gw: RunningGateway) -> None:
    gw.process.terminate()
    try:
        gw.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        gw.process.kill()


@pytest.fixture(scope="session")
def smollm2_gateway(tmp_path_factory) -> Iterator[RunningGateway]:
    gw = start_gateway(tmp_path_factory.mktemp("smollm2-gateway"), "--dtype", "float32")
    yield gw
    stop_gateway(gw)
