"""Alembic environment for the experiments database, driven by `experiments_db.migrate`.

`migrate` opens the connection (SQLite or PostgreSQL, from a URL) and hands it over in
`config.attributes["connection"]`; there is no alembic.ini and no offline (SQL script) mode.
Autogenerate compares only the tables the migrations own (`migrate.owned`).
"""

from alembic import context
from sqlmodel import SQLModel

from experiments_db import migrate

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through experiments_db.migrate (upgrade/current)")

context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    include_name=migrate.owned,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters by table copy
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
