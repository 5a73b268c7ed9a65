"""Client launchers: how the researcher starts `swarm run` processes and follows them.

`local.LocalLauncher` starts them as processes on this machine (today's only backend; a Ray
job backend lands with issue 8). A launcher hands back `ProcessInfo`s that survive the
researcher itself — pid, log file, exit-status file — so `researcher resume` can adopt the
clients a killed researcher left running instead of launching them twice.
"""

from researcher.launcher.local import LocalLauncher, ProcessInfo

__all__ = ["LocalLauncher", "ProcessInfo"]
