"""SQLite files (issue 14, F7 and F9): created 0600, checked before use, never re-created
empty over a write-ahead log that still holds data, checkpointed on a clean close."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from sqlalchemy import text

from experiments_db.db import dispose, make_engine, sqlite_url
from experiments_db.errors import UnusableDatabase
from experiments_db.migrate import GATEWAY, upgrade_engine


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def fill(path: Path, rows: int = 2000):
    """A database at `path` with `rows` rows in a table, its engine left open (the rows
    are in the write-ahead log, not yet in the file)."""
    engine = make_engine(sqlite_url(path))
    with engine.begin() as connection:
        connection.exec_driver_sql("PRAGMA wal_autocheckpoint=0")
        connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x TEXT)")
        connection.execute(text("INSERT INTO t VALUES (:x)"), [{"x": "y" * 200}] * rows)
    return engine


def count(path: Path) -> int:
    engine = make_engine(sqlite_url(path))
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql("SELECT count(*) FROM t").scalar_one()
    finally:
        engine.dispose()


def test_a_new_database_and_its_wal_and_shm_are_readable_by_their_owner_only(tmp_path):
    path = tmp_path / "state" / "gateway.sqlite"
    engine = fill(path)
    upgrade_engine(engine, GATEWAY)
    try:
        files = [path, path.with_name("gateway.sqlite-wal"), path.with_name("gateway.sqlite-shm")]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        engine.dispose()


def test_an_existing_world_readable_database_is_narrowed_to_0600(tmp_path):
    path = tmp_path / "researcher.db"
    dispose(fill(path))
    path.chmod(0o644)
    make_engine(sqlite_url(path)).dispose()
    assert mode(path) == 0o600


def test_a_clean_dispose_checkpoints_the_log_into_the_file(tmp_path):
    path = tmp_path / "gateway.sqlite"
    dispose(fill(path, rows=500))
    wal = path.with_name("gateway.sqlite-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    alone = tmp_path / "copy" / "gateway.sqlite"
    alone.parent.mkdir()
    shutil.copy(path, alone)  # the file alone, without its log, holds every row
    assert count(alone) == 500


@pytest.mark.parametrize("emptied", ["truncated", "deleted"])
def test_a_database_emptied_under_its_write_ahead_log_is_refused(tmp_path, emptied):
    path = tmp_path / "gateway.sqlite"
    engine = fill(path)
    wal = path.with_name("gateway.sqlite-wal")
    saved = tmp_path / "saved-wal"
    shutil.copy(wal, saved)  # the log as a killed process leaves it
    engine.dispose()
    shutil.copy(saved, wal)
    if emptied == "truncated":
        path.write_bytes(b"")
    else:
        path.unlink()
    with pytest.raises(UnusableDatabase) as refused:
        make_engine(sqlite_url(path))
    message = str(refused.value)
    assert "gateway.sqlite-wal" in message and "backup" in message and "\n" not in message
    assert wal.read_bytes() == saved.read_bytes()  # the log is untouched


def test_an_empty_file_without_a_log_is_a_new_database(tmp_path):
    path = tmp_path / "fresh.db"
    path.write_bytes(b"")
    engine = make_engine(sqlite_url(path))
    upgrade_engine(engine, GATEWAY)
    dispose(engine)


@pytest.mark.parametrize("damage", ["half", "garbage"])
def test_a_damaged_database_is_refused_in_one_line(tmp_path, damage):
    path = tmp_path / "gateway.sqlite"
    dispose(fill(path))
    data = path.read_bytes()
    if damage == "half":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(b"this is not a database" * 200)
    with pytest.raises(UnusableDatabase) as refused:
        make_engine(sqlite_url(path))
    message = str(refused.value)
    assert str(path) in message and "\n" not in message
