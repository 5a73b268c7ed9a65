"""A real PostgreSQL server for the tests: a throwaway cluster on loopback, made with the
server's own `initdb` and `pg_ctl` (Debian's `postgresql` package, which `make install`
adds), started once per session and deleted at its end. Tests that need it skip, saying
why, where the binaries (or the `postgres` user, when running as root) are missing.

Fixtures (registered for every test by `tests/conftest.py`):

- `postgres_server`: the server's base URL, `postgresql+psycopg://postgres@127.0.0.1:PORT`.
- `postgres_url`: a session database on it, `.../swarmrl_test`.
- `pg_database`: a fresh, empty database per test (uuid name, dropped after), so tests
  never see each other's rows.
- `db_url`: parametrized over `sqlite` (a file under `tmp_path/sub/`, folder not yet made)
  and `postgresql` (`pg_database`): the persistence and migration tests run on both.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

DATABASE = "swarmrl_test"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    version = Path(path).parts[-3]
    return int(version) if version.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable() -> str | None:
    """Why no test server can be started here (None: it can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "the psycopg driver is not installed (pip install 'psycopg[binary]')"
    if _bin_dir() is None:
        return "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin); `make install` adds them"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run initdb as"
    return None


class _Cluster:
    """One throwaway cluster: its folder, port, and the user its commands run as."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        assert self.bin is not None
        self.root = Path(tempfile.mkdtemp(prefix="swarmrl-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the package's `postgres` user owns it all
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def run(self, *command: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bin / command[0]), *command[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.root,
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}{tail}")

    def start(self) -> None:
        self.run(
            "initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self.run(
            "pg_ctl", "-D", str(self.data), "-o", options,
            "-l", str(self.root / "server.log"), "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}"


def _admin(base_url: str, statement: str) -> None:
    import psycopg

    dsn = base_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(statement)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    reason = unavailable()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    cluster = _Cluster()
    try:
        cluster.start()
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> str:
    _admin(postgres_server, f'CREATE DATABASE "{DATABASE}"')
    return f"{postgres_server}/{DATABASE}"


@pytest.fixture
def pg_database(postgres_server: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex}"
    _admin(postgres_server, f'CREATE DATABASE "{name}"')
    yield f"{postgres_server}/{name}"
    _admin(postgres_server, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sub' / 'swarmrl.sqlite'}"
    return request.getfixturevalue("pg_database")
