"""Client launchers: how the researcher starts `swarm run` clients and follows them.

`base.Launcher` is the protocol; `local.LocalLauncher` starts clients as processes on this
machine, `ray.RayJobLauncher` as Ray jobs (`researcher start --launcher ray`). A launcher
hands back `ProcessInfo`s that survive the researcher itself — pid or Ray job id, log file,
exit-status file — so `researcher resume` can adopt the clients a killed researcher left
running instead of launching them twice. `make_launcher` builds one by its recorded name;
Ray is imported only for `ray`.
"""

from researcher.launcher.base import ClientRecord, Launcher, ProcessInfo, was_started
from researcher.launcher.local import ClientLimits, LocalLauncher

LAUNCHERS = ("local", "ray")


def make_launcher(
    kind: str,
    *,
    ray_address: str | None = None,
    limits: ClientLimits | None = None,
    allow_env: tuple[str, ...] = (),
) -> Launcher:
    """The launcher named `kind` (as `client_process.launcher` records it). For `ray`, an
    error naming the fix when Ray is missing or no job server answers at the address.
    `limits` and `allow_env` contain local clients (a Ray job runs under the cluster's)."""
    if kind == "local":
        return LocalLauncher(limits=limits, allow_env=allow_env)
    if kind == "ray":
        from researcher.launcher.ray import RayJobLauncher

        return RayJobLauncher(ray_address)
    raise ValueError(f"unknown launcher {kind!r}; one of {', '.join(LAUNCHERS)}")


__all__ = [
    "LAUNCHERS",
    "ClientLimits",
    "ClientRecord",
    "Launcher",
    "LocalLauncher",
    "ProcessInfo",
    "make_launcher",
    "was_started",
]
