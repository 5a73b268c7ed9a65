"""F7 and F9 (issue 14) on a real `gateway serve --model tiny`: a lost or damaged
database is refused in one line (exit 2) instead of starting empty over the old state or
printing a traceback; a clean shutdown leaves the database checkpointed and 0600; the admin
key can come from a file instead of the command line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from experiments_db.db import dispose, make_engine, sqlite_url
from researcher.local_gateway import free_port, start_local_gateway

REPO = Path(__file__).resolve().parents[2]


def serve(state_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SWARMRL_API_KEY", None)
    env.pop("SWARMRL_GATEWAY_DB_URL", None)
    command = [sys.executable, "-m", "gateway", "serve", "--model", "tiny"]
    command += ["--port", str(free_port()), "--state-dir", str(state_dir), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


def one_line_refusal(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
    return lines[0]


def a_database_with_a_log(state_dir: Path) -> Path:
    """gateway.sqlite with rows in its write-ahead log, as a killed gateway leaves it."""
    state_dir.mkdir(parents=True)
    path = state_dir / "gateway.sqlite"
    engine = make_engine(sqlite_url(path))
    with engine.begin() as connection:
        connection.exec_driver_sql("PRAGMA wal_autocheckpoint=0")
        connection.exec_driver_sql("CREATE TABLE t (x TEXT)")
        connection.exec_driver_sql("INSERT INTO t VALUES ('" + "y" * 5000 + "')")
    wal = path.with_name("gateway.sqlite-wal")
    saved = wal.read_bytes()
    engine.dispose()
    wal.write_bytes(saved)
    return path


def test_a_database_truncated_under_its_log_is_refused_and_the_log_kept(tmp_path):
    path = a_database_with_a_log(tmp_path / "gw")
    wal = path.with_name("gateway.sqlite-wal")
    before = wal.read_bytes()
    path.write_bytes(b"")  # truncate -s 0 gateway.sqlite
    line = one_line_refusal(serve(tmp_path / "gw"))
    assert "gateway.sqlite-wal" in line and "backup" in line
    assert wal.read_bytes() == before


def test_a_half_truncated_database_is_one_line_not_a_traceback(tmp_path):
    path = tmp_path / "gw" / "gateway.sqlite"
    path.parent.mkdir()
    engine = make_engine(sqlite_url(path))
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x TEXT)")
        for _ in range(50):
            connection.exec_driver_sql("INSERT INTO t VALUES ('" + "y" * 4000 + "')")
    dispose(engine)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    line = one_line_refusal(serve(tmp_path / "gw"))
    assert str(path) in line and "Traceback" not in line


def test_an_empty_database_beside_run_checkpoints_is_refused(tmp_path):
    state_dir = tmp_path / "gw"
    (state_dir / "runs" / "r" / "checkpoints" / "step-4").mkdir(parents=True)
    (state_dir / "gateway.sqlite").write_bytes(b"")
    line = one_line_refusal(serve(state_dir))
    assert "checkpoints of 1 run(s) (r)" in line and "move" in line
    assert (state_dir / "gateway.sqlite").stat().st_size == 0  # nothing was created


def test_an_unreadable_api_key_file_is_one_line(tmp_path):
    line = one_line_refusal(serve(tmp_path / "gw", "--api-key-file", str(tmp_path / "none")))
    assert "--api-key-file" in line


@pytest.mark.slow
def test_a_clean_shutdown_checkpoints_the_database_and_a_lost_one_is_then_refused(tmp_path):
    state_dir = tmp_path / "gw"
    key_file = tmp_path / "admin.key"
    key_file.write_text("k-from-a-file\n")
    gateway = start_local_gateway(
        model="tiny",
        state_dir=state_dir,
        log_path=tmp_path / "gateway.log",
        extra_args=["--api-key-file", str(key_file)],
    )
    try:
        admin = {"Authorization": "Bearer k-from-a-file"}
        assert httpx.post(f"{gateway.url}/runs", json={"name": "r"}).status_code == 401
        created = httpx.post(f"{gateway.url}/runs", json={"name": "r"}, headers=admin, timeout=300)
        assert created.status_code == 201, created.text
        saved = httpx.post(f"{gateway.url}/runs/r/checkpoints", headers=admin, timeout=300)
        assert saved.status_code in (200, 201), saved.text
    finally:
        gateway.stop(timeout=120)
    assert gateway.process.returncode in (0, -15), gateway.log_tail()  # uvicorn re-raises
    path = state_dir / "gateway.sqlite"
    wal = path.with_name("gateway.sqlite-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "the log was left un-checkpointed"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(b"")  # truncate -s 0 gateway.sqlite
    line = one_line_refusal(serve(state_dir))
    assert "checkpoints of 1 run(s) (r)" in line


def test_the_researchers_database_is_created_readable_by_its_owner_only(tmp_path, monkeypatch):
    from researcher.study import open_db

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    engine = open_db()
    try:
        [path] = [Path(p) for p in tmp_path.rglob("researcher.db")]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        dispose(engine)
