"""A real `gateway serve` process on a free loopback port, serving the bundled SmolLM2."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from researcher.local_gateway import start_local_gateway


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


def start_gateway(
    tmp: Path, *args: str, model: str = "smollm2-135m", timeout: float = 240.0
) -> RunningGateway:
    state_dir = tmp / "state"
    local = start_local_gateway(
        model=model,
        state_dir=state_dir,
        log_path=tmp / "gateway.log",
        extra_args=list(args),
        timeout=timeout,
    )
    return RunningGateway(local.url, local.process, state_dir, local.log_path, model)


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


def wait_for(predicate: Callable[[], object], timeout: float = 120.0, every: float = 0.5):
    """Poll `predicate` until it returns something truthy (returned), or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met in {timeout:.0f} s")
