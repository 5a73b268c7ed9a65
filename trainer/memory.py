"""Giving a finished policy's memory back to the operating system.

Dropping the last reference to a model frees its tensors inside the process, but glibc
keeps the freed pages in its arenas, so the RSS stays where it was: `release_memory` runs
the garbage collector (reference cycles: modules, closures, autograd graphs) and then asks
glibc to return what it holds (`malloc_trim(0)`; a no-op on other C libraries).
Knows nothing of models or engines.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys


def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None


_TRIM = _malloc_trim()


def release_memory() -> None:
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
