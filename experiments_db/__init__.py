"""Persistence for swarmrl: SQLModel tables, engine/session helpers, and CRUD functions.

SQLite by default, PostgreSQL by URL. Imports nothing else of ours.
"""
