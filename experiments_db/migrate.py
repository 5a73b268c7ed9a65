"""Alembic migrations of everything swarmrl persists, run from code.

Owns: bringing a database (a SQLite file or a PostgreSQL URL) to the newest schema of one of
the two histories in `experiments_db/migrations`, and saying which revision it is at:

- `STUDY`: the researcher's tables (`STUDY_TABLES`), branch `study`, version table
  `alembic_version`;
- `GATEWAY`: the gateway's tables (`GATEWAY_TABLES`), branch `gateway`, version table
  `alembic_version_gateway`.

Each process migrates only the tables it owns (the researcher `STUDY` at every start, the
gateway `GATEWAY` when its recorder opens the database), so a database that holds both — a
study and the gateway it embeds sharing one SQLite file or PostgreSQL schema — upgrades each
on its own, in any order. There is no alembic.ini. Upgrading an up-to-date database is a
no-op.

Databases from before a history existed: study tables made by the old `db.create_all` (no
revision) that match the models are stamped at head instead of failing on "table exists";
gateway tables made by it are taken over by the gateway history's first revisions, which
create only the tables missing and add the columns an older database lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from experiments_db.db import make_engine
from experiments_db.models import GATEWAY_TABLES
from experiments_db.studies import STUDY_TABLES

MIGRATIONS = Path(__file__).parent / "migrations"


@dataclass(frozen=True)
class History:
    """One line of migrations: its branch label, version table and the tables it owns."""

    label: str
    version_table: str
    tables: tuple[str, ...]

    def owns_name(self, name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
        """Alembic's `include_name`: reflected tables other than these are not compared."""
        return type_ != "table" or name in self.tables

    def owns_object(
        self, obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
    ) -> bool:
        """Alembic's `include_object`: model tables other than these are not compared."""
        return type_ != "table" or name in self.tables


STUDY = History(label="study", version_table="alembic_version", tables=STUDY_TABLES)
GATEWAY = History(label="gateway", version_table="alembic_version_gateway", tables=GATEWAY_TABLES)


def alembic_config(connection: Connection | None = None, history: History = STUDY) -> Config:
    """An Alembic config for the package's migrations, bound to `connection` and `history`
    (`migrations/env.py` reads both)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    config.attributes["history"] = history
    return config


def head(history: History = STUDY) -> str:
    """The newest revision of `history`'s migration scripts."""
    script = ScriptDirectory.from_config(alembic_config(history=history))
    revision = script.get_revision(f"{history.label}@head")
    assert revision is not None, f"no {history.label} migration scripts in {MIGRATIONS}"
    return revision.revision


def schema_differences(connection: Connection, history: History = STUDY) -> list[Any]:
    """What differs between the database's tables of `history` and the SQLModel tables
    (Alembic's autogenerate diff; empty when they agree)."""
    context = MigrationContext.configure(
        connection,
        opts={
            "include_name": history.owns_name,
            "include_object": history.owns_object,
            "compare_type": True,
        },
    )
    return compare_metadata(context, SQLModel.metadata)


def upgrade(url: str, history: History = STUDY) -> None:
    """Bring `history`'s tables in the database at `url` to its newest revision (creating
    a SQLite file)."""
    engine = make_engine(url)
    try:
        upgrade_engine(engine, history)
    finally:
        engine.dispose()


def upgrade_engine(engine: Engine, history: History) -> None:
    """`upgrade` on an engine the caller keeps (the gateway's recorder opens it once)."""
    with engine.begin() as connection:
        config = alembic_config(connection, history)
        if history is STUDY and _study_tables_made_by_create_all(connection):
            command.stamp(config, f"{history.label}@head")
        else:
            command.upgrade(config, f"{history.label}@head")


def current(url: str, history: History = STUDY) -> str | None:
    """The revision of `history` the database at `url` is at (None: never migrated)."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return _current(connection, history)
    finally:
        engine.dispose()


def _current(connection: Connection, history: History) -> str | None:
    opts = {"version_table": history.version_table}
    return MigrationContext.configure(connection, opts=opts).get_current_revision()


def _study_tables_made_by_create_all(connection: Connection) -> bool:
    if _current(connection, STUDY) is not None:
        return False
    present = set(inspect(connection).get_table_names()) & set(STUDY_TABLES)
    if not present:
        return False
    if present != set(STUDY_TABLES) or schema_differences(connection, STUDY):
        raise RuntimeError(
            f"the database has some study tables ({', '.join(sorted(present))}) but no "
            "migration revision, and they do not match the models; use a fresh database"
        )
    return True
