"""Alembic migrations of the researcher's experiments database, run from code.

Owns: bringing a database (a SQLite file or a PostgreSQL URL) to the newest schema of the
tables the migrations own (`STUDY_TABLES`), and saying which revision it is at. The
migration scripts live in `experiments_db/migrations`; there is no alembic.ini. Call
`upgrade(url)` at every start: it is a no-op on an up-to-date database.

A database whose study tables were made by `db.create_all` (no Alembic revision yet) and
match the models is stamped at head instead of failing on "table exists".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from experiments_db.db import make_engine
from experiments_db.studies import STUDY_TABLES

MIGRATIONS = Path(__file__).parent / "migrations"


def owned(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """Alembic's `include_name`: only the tables the migrations own are compared."""
    return type_ != "table" or name in STUDY_TABLES


def _owned_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    return type_ != "table" or name in STUDY_TABLES


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for the package's migrations, bound to `connection`."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision of the migration scripts."""
    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision is not None, f"no migration scripts in {MIGRATIONS}"
    return revision


def schema_differences(connection: Connection) -> list[Any]:
    """What differs between the database's owned tables and the SQLModel tables (Alembic's
    autogenerate diff; empty when they agree)."""
    context = MigrationContext.configure(
        connection,
        opts={
            "include_name": owned,
            "include_object": _owned_object,
            "compare_type": True,
        },
    )
    return compare_metadata(context, SQLModel.metadata)


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest revision (creating a SQLite file)."""
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            config = alembic_config(connection)
            if _made_by_create_all(connection):
                command.stamp(config, "head")
            else:
                command.upgrade(config, "head")
    finally:
        engine.dispose()


def current(url: str) -> str | None:
    """The revision the database at `url` is at (None: never migrated)."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def _made_by_create_all(connection: Connection) -> bool:
    if MigrationContext.configure(connection).get_current_revision() is not None:
        return False
    present = set(inspect(connection).get_table_names()) & set(STUDY_TABLES)
    if not present:
        return False
    if present != set(STUDY_TABLES) or schema_differences(connection):
        raise RuntimeError(
            f"the database has some study tables ({', '.join(sorted(present))}) but no "
            "migration revision, and they do not match the models; use a fresh database"
        )
    return True
