"""Alembic environment for swarmrl's databases, driven by `experiments_db.migrate`.

`migrate` opens the connection (SQLite or PostgreSQL, from a URL) and hands it over in
`config.attributes["connection"]`, with the history to run (`migrate.STUDY` or
`migrate.GATEWAY`: its version table, and the tables autogenerate compares) in
`config.attributes["history"]`; there is no alembic.ini and no offline (SQL script) mode.
"""

from alembic import context
from sqlmodel import SQLModel

from experiments_db import migrate

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through experiments_db.migrate (upgrade/current)")
history: migrate.History = context.config.attributes.get("history", migrate.STUDY)

context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    version_table=history.version_table,
    include_name=history.owns_name,
    include_object=history.owns_object,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters by table copy
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
