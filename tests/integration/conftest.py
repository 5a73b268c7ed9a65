"""A real `gateway serve` process on a free loopback port, serving the bundled SmolLM2, on
its default SQLite file or (`database_url=`) a PostgreSQL database."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from researcher.local_gateway import start_local_gateway
from tests.postgres import _admin


@dataclass
class RunningGateway:
    url: str
    process: subprocess.Popen
    state_dir: Path
    log_path: Path
    model: str
    database_url: str  # where its runs and episodes are: its SQLite file, or --database-url

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_gateway(
    tmp: Path,
    *args: str,
    model: str = "smollm2-135m",
    timeout: float = 600.0,  # a hang guard: a loaded 2-core box can take minutes
    database_url: str | None = None,
) -> RunningGateway:
    """`gateway serve` with its state in `tmp/state`; its database is the SQLite file there,
    or `database_url` (`--database-url`) when given."""
    state_dir = tmp / "state"
    extra = [*args, "--database-url", database_url] if database_url else list(args)
    local = start_local_gateway(
        model=model,
        state_dir=state_dir,
        log_path=tmp / "gateway.log",
        extra_args=extra,
        timeout=timeout,
    )
    url = database_url or f"sqlite:///{state_dir / 'gateway.sqlite'}"
    return RunningGateway(local.url, local.process, state_dir, local.log_path, model, url)


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


@pytest.fixture(params=["sqlite", "postgresql"])
def gateway_database(request: pytest.FixtureRequest) -> str | None:
    """The database for a gateway a test starts: None (its default SQLite file in its state
    dir) or a fresh PostgreSQL database's URL (`pg_database`; skips, saying why, where no
    PostgreSQL server can be started)."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("pg_database")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_gateway_database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """`gateway_database` for a module-scoped gateway (one per module and database): None,
    or a fresh PostgreSQL database made for the module and dropped after it."""
    if request.param == "sqlite":
        yield None
        return
    server = request.getfixturevalue("postgres_server")
    name = f"m_{uuid.uuid4().hex}"
    _admin(server, f'CREATE DATABASE "{name}"')
    yield f"{server}/{name}"
    _admin(server, f'DROP DATABASE "{name}" WITH (FORCE)')


def wait_for(predicate: Callable[[], object], timeout: float = 120.0, every: float = 0.5):
    """Poll `predicate` until it returns something truthy (returned), or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met in {timeout:.0f} s")
