"""Alembic migrations of the researcher database: they build exactly the study tables the
models describe, are safe to run at every start, and ship with the package (the gateway's
history: test_gateway_migrations.py)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

from experiments_db import crud, migrate
from experiments_db.db import make_engine, session_scope
from experiments_db.studies import STUDY_TABLES
from tests.unit.experiments_db.test_studies import a_study

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def url(db_url):  # a SQLite file in a folder not made yet, and a fresh PostgreSQL database
    return db_url


def test_a_fresh_database_is_migrated_to_head(url):
    assert migrate.current(url) is None
    migrate.upgrade(url)
    assert migrate.current(url) == migrate.head() == "0001"
    engine = make_engine(url)
    assert set(STUDY_TABLES) <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_the_migrated_schema_matches_the_models(url):
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.connect() as connection:
        assert migrate.schema_differences(connection) == []
    engine.dispose()


def test_the_schema_comparison_notices_a_missing_index(url):
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_experiment_status"))
    with engine.connect() as connection:
        differences = migrate.schema_differences(connection)
    engine.dispose()
    assert [(d[0], d[1].name) for d in differences] == [("add_index", "ix_experiment_status")]


def test_upgrading_again_is_a_no_op_that_keeps_the_data(url):
    migrate.upgrade(url)
    engine = make_engine(url)
    with session_scope(engine) as session:
        crud.create_study(session, study=a_study())
        crud.add_event(session, study_id="st-1", phase="frame", kind="start", message="go")
    migrate.upgrade(url)
    assert migrate.current(url) == "0001"
    with session_scope(engine) as session:
        assert crud.get_study(session, study_id="st-1").phase == "frame"
        assert [e.message for e in crud.events(session, study_id="st-1")] == ["go"]
    engine.dispose()


def test_a_database_whose_study_tables_came_from_create_all_is_stamped_not_rebuilt(url):
    engine = make_engine(url)
    SQLModel.metadata.create_all(engine)  # what gateways up to cf4dd29 did to their databases
    with session_scope(engine) as session:
        crud.create_study(session, study=a_study())
    migrate.upgrade(url)
    assert migrate.current(url) == "0001"
    with session_scope(engine) as session:
        assert crud.get_study(session, study_id="st-1") is not None
    engine.dispose()


def test_unversioned_study_tables_that_differ_from_the_models_are_refused(url):
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE study (id VARCHAR PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(RuntimeError, match="do not match the models"):
        migrate.upgrade(url)
    assert migrate.current(url) is None


def test_the_migration_scripts_ship_with_the_package():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = package_data["package-data"]["experiments_db"]
    package = ROOT / "experiments_db"
    scripts = [
        path.relative_to(package).as_posix()
        for path in migrate.MIGRATIONS.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    assert {"migrations/env.py", "migrations/script.py.mako"} <= set(scripts)
    assert any(s.startswith("migrations/versions/0001") for s in scripts)
    assert any(s.startswith("migrations/versions/gateway_0001") for s in scripts)
    unshipped = [s for s in scripts if not any(fnmatch.fnmatch(s, p) for p in patterns)]
    assert unshipped == []
