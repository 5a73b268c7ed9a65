"""Helper threads that must not start an OpenMP team of their own.

One thread per process does the torch compute (the engine's worker; see
`trainer.engine.torch_engine.reserve_cores_for_engine`). Loading weights or writing a
checkpoint runs in `asyncio.to_thread` helpers, whose torch thread count would otherwise
be torch's default; they get one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def single_threaded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    torch.set_num_threads(1)
    return fn(*args, **kwargs)
