"""Start and stop a local `gateway serve` process (the embedded gateway of demos and studies).

Speaks to it over HTTP only, like every client; knows nothing of its internals.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


class GatewayStartError(RuntimeError):
    """The gateway process exited or did not become healthy in time."""


@dataclass
class LocalGateway:
    url: str
    process: subprocess.Popen
    log_path: Path

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 30.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_local_gateway(
    *,
    model: str,
    state_dir: Path,
    log_path: Path,
    extra_args: list[str] | None = None,
    timeout: float = 300.0,
    port: int | None = None,
    start_new_session: bool = False,
) -> LocalGateway:
    """Start `gateway serve` on `port` (default: a free loopback port) and wait until
    `/healthz` answers."""
    port = port or free_port()
    state_dir.mkdir(parents=True, exist_ok=True)
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
        *(extra_args or []),
    ]
    process = subprocess.Popen(
        cmd,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
        start_new_session=start_new_session,  # outlives its parent (a study's gateway)
    )
    gateway = LocalGateway(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise GatewayStartError(
                f"gateway exited with code {process.returncode}:\n{gateway.log_tail()}"
            )
        try:
            if httpx.get(gateway.url + "/healthz", timeout=1).status_code == 200:
                return gateway
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    gateway.stop()
    raise GatewayStartError(
        f"gateway did not answer /healthz within {timeout:.0f}s:\n{gateway.log_tail()}"
    )
