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


def suggest_concurrent_runs(
    settings: GatewaySettings, cpus: int, served_models: int = 1
) -> tuple[int, str]:
    """(runs, the reason in words). On Ray (CPU): as many runs as the cluster has room for
    one more policy actor each, beside the served models' actors — more would leave a run's
    actor pending, its run stuck in "starting" (not measured for speed). In-process on CPU:
    2 on 2 or more cores — measured on 2 cores, 2 runs gave 1.18x and 1.42x the steps/min of
    1, 3 runs 1.10x and 1.22x (docs/scaling.md) — and 1 on a single core. On a GPU: 2,
    unmeasured. Never more than `max_live_runs`."""
    if settings.concurrent_runs is not None:
        runs, why = settings.concurrent_runs, "set by the operator (--concurrent-runs)"
    elif (
        settings.ray_cluster_cpus is not None
        and settings.ray_actor_cpus
        and not settings.device.startswith("cuda")
    ):
        runs, why = ray_room(
            settings.ray_cluster_cpus, settings.ray_actor_cpus, served=served_models
        )
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


def ray_room(cluster_cpus: float, actor_cpus: float, *, served: int) -> tuple[int, str]:
    """Runs whose policy actor (`actor_cpus` each) fits in the cluster beside the `served`
    models' actors: at least 1 (that one waits for room rather than never starting)."""
    free = cluster_cpus - served * actor_cpus
    runs = max(1, int(free // actor_cpus))
    return runs, (
        f"a Ray cluster of {cluster_cpus:g} CPUs: {runs} more policy actor(s) of "
        f"{actor_cpus:g} CPU fit beside the {served} served model(s)' (not measured for speed)"
    )


def capacity(settings: GatewaySettings, *, active_runs: int, served_models: int = 1) -> Capacity:
    on_ray = settings.ray_cluster_cpus is not None
    # on Ray the runs' actors live on the cluster: its CPUs are the ones that count
    cpus = int(settings.ray_cluster_cpus) if on_ray else usable_cpus()  # type: ignore[arg-type]
    runs, why = suggest_concurrent_runs(settings, cpus, served_models)
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
