"""Engine and session helpers for everything swarmrl persists.

Owns: turning a database URL (``sqlite:///path`` or a PostgreSQL URL) into a SQLAlchemy
engine tuned for its backend, creating the tables, and handing out sessions. Knows nothing
about HTTP, the gateway, or the trainer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine

from experiments_db import models as _models  # noqa: F401  (registers the tables)


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
    """An engine for `url`; SQLite files get their folder created and WAL journaling,
    PostgreSQL URLs use psycopg 3 and give up connecting after `PG_CONNECT_TIMEOUT_S`."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        connect_args = {}
        if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
            connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
        return create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _tune_sqlite_connection)
    return engine


def _tune_sqlite_connection(dbapi_connection, _connection_record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def create_all(engine: Engine) -> None:
    """Create every swarmrl table that does not exist yet, and add the nullable columns a
    database written by an older swarmrl lacks (so a state dir survives an upgrade)."""
    SQLModel.metadata.create_all(engine)
    add_missing_columns(engine)


def add_missing_columns(engine: Engine) -> list[str]:
    """`ALTER TABLE ... ADD COLUMN` for each nullable or defaulted column a table lacks.

    Returns the `table.column` names added. Columns that are NOT NULL without a default
    cannot be added to a table with rows; they are left for a real migration.
    """
    inspector = inspect(engine)
    added = []
    with engine.begin() as connection:
        for table in SQLModel.metadata.sorted_tables:
            if not inspector.has_table(table.name):
                continue
            present = {column["name"] for column in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name in present or not column.nullable:
                    continue
                kind = column.type.compile(dialect=engine.dialect)
                connection.execute(
                    text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}')
                )
                added.append(f"{table.name}.{column.name}")
    return added


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
