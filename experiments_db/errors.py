"""Errors of the persistence layer that callers turn into one line for a user.

Owns: `UnusableDatabase`, raised when a database file must not be opened as it is
(corrupt, or emptied while its write-ahead log still holds data).
"""

from __future__ import annotations


class UnusableDatabase(Exception):
    """The database at a path cannot be used as it is; the message says what was found
    and how to proceed (one line, no traceback needed)."""
