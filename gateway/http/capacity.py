"""How many runs to train at once on this gateway for the most steps/min: `GET /capacity`.

Owns: `Capacity` (the wire record) and `suggest_concurrent_runs`, the gateway's own rule for
how many runs a caller (a researcher) should train at once here — the operator's
`gateway serve --concurrent-runs N` when given, else the rule below, from
`bench/concurrent_runs.py` (docs/scaling.md, "Concurrent runs"). Must not import torch:
the device and engine thread count come in `GatewaySettings`, filled by the composition
root, which knows them.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from gateway.settings import GatewaySettings

GPU_SUGGESTED_RUNS = 2  # not measured: no GPU in this project's CI (docs/scaling.md)


class Capacity(BaseModel):
    device: str  # "cpu", or the torch device of the models ("cuda", "cuda:1")
    hosting: str  # "in-process" or "ray": where the policies' engines run
    cpus: int  # this process's usable CPU cores
    engine_threads: int | None  # torch threads of each engine; None: not known here
    active_runs: int  # runs not yet finished, failed or stopped
    max_live_runs: int  # beyond this, POST /runs is a 429
    suggested_concurrent_runs: int  # how many runs to train at once here (whole-machine)
    basis: str  # why that number, in words


def usable_cpus() -> int:
    """Cores this process may run on (its affinity mask, e.g. a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def suggest_concurrent_runs(settings: GatewaySettings, cpus: int) -> tuple[int, str]:
    """(runs, the reason in words). On CPU: 2 on 2 or more cores — measured on 2 cores, 2
    runs gave 1.18x and 1.42x the steps/min of 1, 3 runs 1.10x and 1.22x (docs/scaling.md) — and 1 on a
    single core. On a GPU: 2, unmeasured. Never more than `max_live_runs`."""
    if settings.concurrent_runs is not None:
        runs, why = settings.concurrent_runs, "set by the operator (--concurrent-runs)"
    elif settings.device.startswith("cuda"):
        runs = GPU_SUGGESTED_RUNS
        why = f"on {settings.device}: one run's update leaves its rollouts' GPU idle (not measured)"
    elif cpus >= 2:
        runs = 2
        why = f"{cpus} CPUs; on 2 cores 2 runs gave the most steps/min (1.2-1.4x one run's)"
    else:
        runs, why = 1, "a single CPU core: concurrent runs only share it"
    runs = max(1, min(runs, settings.max_live_runs))
    return runs, why


def capacity(settings: GatewaySettings, *, active_runs: int) -> Capacity:
    cpus = usable_cpus()
    runs, why = suggest_concurrent_runs(settings, cpus)
    return Capacity(
        device=settings.device,
        hosting="in-process" if settings.ray_address is None else "ray",
        cpus=cpus,
        engine_threads=settings.engine_threads,
        active_runs=active_runs,
        max_live_runs=settings.max_live_runs,
        suggested_concurrent_runs=runs,
        basis=why,
    )
