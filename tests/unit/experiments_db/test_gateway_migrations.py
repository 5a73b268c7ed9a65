"""The gateway's Alembic history: it builds exactly the gateway tables the models describe,
takes over a database written by cf4dd29's code (before Alembic managed these tables; the
fixtures in tests/fixtures/) with its rows, and lives beside the study history in one
database, each with its own version table (on SQLite and on PostgreSQL: `db_url`). The
gateway resuming such a database's run: tests/unit/gateway/test_old_database.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import inspect

from experiments_db import crud, migrate
from experiments_db.db import make_engine, session_scope, sqlite_url
from experiments_db.migrate import GATEWAY, STUDY
from experiments_db.models import GATEWAY_TABLES
from experiments_db.studies import STUDY_TABLES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OLD_SQLITE = FIXTURES / "gateway-cf4dd29.sqlite"
OLD_POSTGRESQL = FIXTURES / "gateway-cf4dd29-postgresql.sql"


def old_database(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a copy of the database cf4dd29's gateway wrote (`kind`: sqlite or
    postgresql), before anything of today's code touched it."""
    if kind == "sqlite":
        path = tmp_path / "gateway.sqlite"
        shutil.copyfile(OLD_SQLITE, path)
        return sqlite_url(path)
    url = request.getfixturevalue("pg_database")
    load_dump(url, OLD_POSTGRESQL)
    return url


def load_dump(url: str, dump: Path) -> None:
    """Run a `pg_dump --inserts` file against the database at `url`."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        connection.execute(dump.read_text())  # no parameters: one multi-statement query


def test_a_fresh_database_gets_the_gateway_tables_at_head_and_no_study_tables(db_url):
    assert migrate.current(db_url, GATEWAY) is None
    migrate.upgrade(db_url, GATEWAY)
    assert migrate.current(db_url, GATEWAY) == migrate.head(GATEWAY) == "gateway_0003"
    assert migrate.current(db_url, STUDY) is None
    engine = make_engine(db_url)
    tables = set(inspect(engine).get_table_names())
    assert tables == {*GATEWAY_TABLES, "alembic_version_gateway"}
    with engine.connect() as connection:
        assert migrate.schema_differences(connection, GATEWAY) == []
    engine.dispose()


def test_a_model_column_no_migration_adds_shows_as_a_difference(db_url):
    # what a new field in experiments_db/models.py without its gateway revision looks like
    migrate.upgrade(db_url, GATEWAY)
    engine = make_engine(db_url)
    with engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE sample DROP COLUMN continues")
    with engine.connect() as connection:
        differences = migrate.schema_differences(connection, GATEWAY)
    engine.dispose()
    assert [(d[0], d[2], d[3].name) for d in differences] == [("add_column", "sample", "continues")]


@pytest.mark.parametrize("first", [STUDY, GATEWAY], ids=lambda h: f"{h.label}-first")
def test_both_histories_share_a_database_each_with_its_own_version_table(db_url, first):
    second = GATEWAY if first is STUDY else STUDY
    migrate.upgrade(db_url, first)
    migrate.upgrade(db_url, second)
    migrate.upgrade(db_url, first)  # again: a no-op
    assert migrate.current(db_url, STUDY) == migrate.head(STUDY) == "0001"
    assert migrate.current(db_url, GATEWAY) == migrate.head(GATEWAY)
    engine = make_engine(db_url)
    tables = set(inspect(engine).get_table_names())
    assert tables == {*STUDY_TABLES, *GATEWAY_TABLES, "alembic_version", "alembic_version_gateway"}
    with engine.connect() as connection:
        assert migrate.schema_differences(connection, STUDY) == []
        assert migrate.schema_differences(connection, GATEWAY) == []
    engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_database_written_by_cf4dd29_is_taken_over_with_its_rows(kind, tmp_path, request):
    url = old_database(kind, tmp_path, request)
    assert migrate.current(url, GATEWAY) is None  # written before the gateway history
    migrate.upgrade(url, GATEWAY)
    assert migrate.current(url, GATEWAY) == migrate.head(GATEWAY)
    engine = make_engine(url)
    with engine.connect() as connection:
        assert migrate.schema_differences(connection, GATEWAY) == []
    with session_scope(engine) as session:
        run = crud.get_run(session, run_id="old")
        samples = crud.list_samples(session, run_id="old")
        episodes = crud.list_episodes(session, run="old")
    assert (run.status, run.step, run.samples_buffered, run.episodes_finished) == (
        "paused",
        0,
        2,
        2,
    )
    assert sorted(s.reward for s in samples) == [0.0, 1.0]
    assert all(s.status == "buffered" and s.temperature is not None for s in samples)
    assert sorted(e.status for e in episodes) == ["finished", "finished", "open"]
    # its unversioned study tables (the old create_all made every table) are the study
    # history's to stamp, untouched by the gateway's
    assert migrate.current(url, STUDY) is None
    migrate.upgrade(url, STUDY)
    assert migrate.current(url, STUDY) == migrate.head(STUDY)
    engine.dispose()
