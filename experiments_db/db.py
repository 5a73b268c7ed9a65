"""Engine and session helpers for everything swarmrl persists.

Owns: turning a database URL (``sqlite:///path`` or a PostgreSQL URL) into a SQLAlchemy
engine tuned for its backend, handing out sessions, and closing an engine cleanly; the
tables are made and upgraded by Alembic (`experiments_db.migrate`). A SQLite file is
created readable by its owner only (0600; SQLite gives its -wal and -shm files the same
mode), opened only after `PRAGMA quick_check` passes, and never silently re-created over a
write-ahead log it lost (`UnusableDatabase`); `dispose` checkpoints the log into the file.
Knows nothing about HTTP, the gateway, or the trainer.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, create_engine

from experiments_db.errors import UnusableDatabase

FILE_MODE = 0o600  # a database holds episode keys' hashes, prompts, settings


def sqlite_url(path: Path | str) -> str:
    """The URL of a SQLite database file."""
    return f"sqlite:///{Path(path).expanduser()}"


# Seconds a PostgreSQL connection attempt may take before it fails (a host that drops
# packets would otherwise hang a start for minutes); a URL's own connect_timeout wins.
PG_CONNECT_TIMEOUT_S = 5


def normalize_url(url: str) -> str:
    """`url` with the PostgreSQL driver made explicit: `postgresql://` and `postgres://`
    (SQLAlchemy would pick psycopg2, which is not installed) become `postgresql+psycopg://`
    (psycopg 3, a dependency). Any other URL, or one naming its driver, is left alone."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite files get their folder created, mode 0600, an integrity
    check and WAL journaling (`UnusableDatabase` when the file must not be used),
    PostgreSQL URLs use psycopg 3 and give up connecting after `PG_CONNECT_TIMEOUT_S`."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        connect_args = {}
        if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
            connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
        return create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    path = Path(parsed.database) if parsed.database and parsed.database != ":memory:" else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _prepare_sqlite_file(path)
    engine = create_engine(url, connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _tune_sqlite_connection)
    if path is not None:
        _check_sqlite(engine, path)
    return engine


def _prepare_sqlite_file(path: Path) -> None:
    """Refuse a database emptied under its write-ahead log; create a missing one 0600
    (an existing one is narrowed to 0600 where we may)."""
    wal = path.with_name(path.name + "-wal")
    size = path.stat().st_size if path.exists() else None
    if not size and wal.exists() and wal.stat().st_size > 0:
        found = "is missing" if size is None else "is empty (0 bytes)"
        raise UnusableDatabase(
            f"{path} {found} but its write-ahead log {wal.name} holds "
            f"{wal.stat().st_size} bytes: opening it would start an empty database and "
            "overwrite that log; restore the database file from a backup, or move both "
            "aside to start fresh"
        )
    if size is None:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    for name in (path, wal, path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):  # not ours to change: leave it
            if name.exists() and name.stat().st_mode & 0o077:
                name.chmod(FILE_MODE)


def _check_sqlite(engine: Engine, path: Path) -> None:
    """`PRAGMA quick_check` on the file (and its log): anything but "ok" is refused."""
    try:
        with engine.connect() as connection:
            problems = [row[0] for row in connection.exec_driver_sql("PRAGMA quick_check")]
    except (DBAPIError, sqlite3.DatabaseError) as error:
        engine.dispose()
        reason = getattr(error, "orig", None) or error
        raise UnusableDatabase(
            f"{path} is not a usable SQLite database ({reason}); restore it from a "
            "backup, or move it (and its -wal/-shm files) aside to start fresh"
        ) from None
    if problems != ["ok"]:
        engine.dispose()
        raise UnusableDatabase(
            f"{path} failed its integrity check ({'; '.join(problems[:3])}); restore it "
            "from a backup, or move it (and its -wal/-shm files) aside to start fresh"
        )


def dispose(engine: Engine) -> None:
    """Close `engine`'s connections; a SQLite file gets its write-ahead log checkpointed
    into it and truncated first, so a clean shutdown leaves one self-contained file."""
    if engine.dialect.name == "sqlite":
        with contextlib.suppress(DBAPIError), engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()


def _tune_sqlite_connection(dbapi_connection, _connection_record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits when the block succeeds and rolls back when it raises."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
