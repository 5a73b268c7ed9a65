"""A real `gateway serve` process on a free loopback port, serving the bundled SmolLM2, on
its default SQLite file or (`database_url=`) a PostgreSQL database — one per test or module,
or the session's shared ones (`shared_tiny_gateway`, `shared_tiny_pg_gateway`); and a
finished tiny `researcher start` study that several tests read (`finished_tiny_study`)."""

from __future__ import annotations

import os
import signal
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


@pytest.fixture(scope="session")
def shared_tiny_gateway(tmp_path_factory) -> Iterator[RunningGateway]:
    """One plain `gateway serve --model tiny` (its SQLite file) for the whole session, for the
    modules that need a tiny gateway and nothing special of it (no flags, no restart, no
    kill, no log or memory read): each used to start an identical one of its own (~15 s
    each on a loaded 2-core box). A gateway serves many runs side by side, as in production:
    each module names its runs (its own names: no two modules may create the same run) and
    reads only its own runs, episodes and rows. An idle gateway costs next to no CPU."""
    gw = start_gateway(tmp_path_factory.mktemp("shared-tiny-gateway"), model="tiny")
    yield gw
    stop_gateway(gw)


@pytest.fixture(scope="session")
def shared_tiny_pg_gateway(tmp_path_factory, postgres_server) -> Iterator[RunningGateway]:
    """`shared_tiny_gateway` on PostgreSQL (`--database-url`: a database made for the session
    and dropped after it; skips, saying why, where no PostgreSQL server can be started), for
    the modules that run once on each database."""
    server = postgres_server
    name = f"s_{uuid.uuid4().hex}"
    _admin(server, f'CREATE DATABASE "{name}"')
    try:
        gw = start_gateway(
            tmp_path_factory.mktemp("shared-tiny-pg-gateway"),
            model="tiny",
            database_url=f"{server}/{name}",
        )
        yield gw
        stop_gateway(gw)
    finally:
        _admin(server, f'DROP DATABASE "{name}" WITH (FORCE)')


def shared_tiny(gateway: RunningGateway) -> RunningGateway:
    """`shared_tiny_gateway`, checked alive for the module about to use it (an earlier
    module that brought it down fails here, with its log, not in a connection error)."""
    assert gateway.process.poll() is None, (
        f"the shared tiny gateway exited:\n{gateway.log()[-3000:]}"
    )
    return gateway


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


@dataclass
class FinishedStudy:
    """`researcher start QUESTION *ARGS` run to its end in `home`, as a user types it."""

    question: str
    args: tuple[str, ...]
    home: Path
    code: int  # its exit status
    study_ids: list[str]  # the studies in home/researcher.db the moment it ended


def _kill_processes_under(path: Path) -> None:
    from tests.integration.test_researcher import processes_mentioning

    for pid in processes_mentioning(str(path)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def _finished_tiny_study(tmp_path_factory) -> Iterator[FinishedStudy]:
    # imported here: those modules import this one
    from experiments_db import crud
    from experiments_db.db import session_scope
    from tests.integration.test_researcher import engine_of, finish, start_researcher
    from tests.integration.test_researcher_task_levels import ARGS, QUESTION

    home = tmp_path_factory.mktemp("finished-tiny-study")
    try:
        # own_models: this study's gateway extracts the bundled tokenizer into its fresh home,
        # as a first `researcher start` does; 600 s: a hang bound (a loaded 2-core box
        # evaluates 48 items in ~90 s), the most any of its readers allowed it
        process = start_researcher(home, "start", QUESTION, *ARGS, own_models=True)
        code = finish(process, home, timeout=600)
        study_ids: list[str] = []
        if code == 0:  # else the tests that read it fail on `code`, with its log
            engine = engine_of(home)
            try:
                with session_scope(engine) as session:
                    study_ids = [s.id for s in crud.list_studies(session)]
            finally:
                engine.dispose()
        yield FinishedStudy(QUESTION, ARGS, home, code, study_ids)
    finally:
        _kill_processes_under(home)


@pytest.fixture
def finished_tiny_study(_finished_tiny_study: FinishedStudy) -> Iterator[FinishedStudy]:
    """`researcher start "does keeping zero variance groups help on tiny countdown?" --budget
    2m --model tiny --seeds 1` (test_researcher_task_levels.py's QUESTION and ARGS: 2 arms ×
    1 seed, one of which trains and is judged on held-out tasks beside the untrained
    baseline), its embedded gateway serving `tiny`, run to its end once per session in a
    home of its own and read by every test that asks for it: test_researcher.py's end to end
    test, the task-level test, and `researcher rerun` of it. A test may add to its home (the
    rerun adds a study) but leaves the original study as it found it; afterwards whatever a
    test left running under the home is killed by pid, like `home`'s."""
    yield _finished_tiny_study
    _kill_processes_under(_finished_tiny_study.home)
