"""The researcher's `--db URL`: a PostgreSQL database is migrated and used (tests/postgres.py
starts the server); a PostgreSQL URL that refuses is one line naming the fix, in seconds,
before any study exists."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from experiments_db import migrate
from researcher.cli import app
from tests.postgres import _free_port


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    return tmp_path


def test_list_on_a_postgresql_url_migrates_it_and_exits_0(home, pg_database):
    url = pg_database.replace("postgresql+psycopg://", "postgresql://")  # as a user writes it
    result = CliRunner().invoke(app, ["list", "--db", url])
    assert result.exit_code == 0, result.output
    assert "no studies yet" in result.output
    assert migrate.current(url) == migrate.head()
    assert not (home / "researcher.db").exists()  # the SQLite default was not touched


@pytest.mark.slow
@pytest.mark.parametrize("command", [["list"], ["start", "does multi-task mixing help?"]])
def test_a_postgresql_url_that_refuses_is_one_line_naming_the_fix(tmp_path, command):
    url = f"postgresql://swarm:secret@127.0.0.1:{_free_port()}/swarmrl"  # nothing listens
    env = os.environ | {"SWARMRL_HOME": str(tmp_path), "COLUMNS": "80"}
    env.pop("SWARMRL_DB_URL", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "researcher.cli", *command, "--db", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert time.monotonic() - started < 45  # no connection retries (process start: ~5 s)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("researcher: cannot open the study database")
    assert "Connection refused" in lines[0] and "check --db / $SWARMRL_DB_URL" in lines[0]
    assert "secret" not in lines[0]
    assert not (tmp_path / "studies").exists() and not (tmp_path / "researcher.db").exists()
