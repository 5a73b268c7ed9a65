"""Start, follow and stop client processes (`swarm run …`) on this machine.

Owns: `LocalLauncher` (the `Launcher` protocol of `base.py`, plus pid-level `alive` / `stop`
that the researcher also uses for its own processes) and the environment scrubbing rules
every launcher applies (`is_scrubbed`, `client_env`). Each process runs in its own session
(so it outlives a killed researcher and can be stopped as a group) under a small `sh`
wrapper that writes the exit status to a file beside the log — so whoever looks later (the
same researcher, or one that resumed after kill -9 and never was the parent) learns how it
ended. The environment is scrubbed of the researcher's database settings: generated code
never sees them.
Knows nothing of studies, the graph or the gateway.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from researcher.launcher.base import ClientRecord, ProcessInfo, exit_path_of

# Environment a client must not inherit: the researcher's database and planner credentials.
SCRUBBED_ENV_PREFIXES = (
    "SWARMRL_DB",
    "SWARMRL_GATEWAY_DB",  # a standalone gateway's database URL, if the user has one set
    "SWARMRL_PLANNER",
    "DATABASE_URL",
    "PG",
)
SCRUBBED_ENV_NAMES = ("OPENAI_API_KEY",)
WRAPPER = '"$@"; echo $? > "$SWARMRL_EXIT_FILE"'

__all__ = ["LocalLauncher", "ProcessInfo", "client_env", "exit_path_of", "is_scrubbed"]


def is_scrubbed(key: str) -> bool:
    """Whether a client must not see the environment variable `key`."""
    return key.startswith(SCRUBBED_ENV_PREFIXES) or key in SCRUBBED_ENV_NAMES


def client_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not is_scrubbed(key)}
    env.update(extra or {})
    return env


class LocalLauncher:
    name = "local"
    ships_files = False  # the client runs here: the workflow is read where it lies

    def start(
        self,
        command: list[str],
        *,
        log_path: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        name: str | None = None,  # a local process cannot be found by name: adoption is by pid
        files: Path | None = None,  # nothing travels: `cwd` and the paths in `command` are here
    ) -> ProcessInfo:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        exit_path = exit_path_of(log_path)
        exit_path.unlink(missing_ok=True)
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                ["sh", "-c", WRAPPER, "sh", *command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=client_env({**(env or {}), "SWARMRL_EXIT_FILE": str(exit_path)}),
                start_new_session=True,
            )
        _children.append(process)  # reaped by `alive`, so no zombie outlives its exit
        return ProcessInfo(process.pid, socket.gethostname(), log_path, exit_path, time.time())

    # the `Launcher` protocol: a client by its record

    def client_alive(self, client: ClientRecord) -> bool:
        return client.pid is not None and self.alive(client.pid)

    def client_exit_status(self, client: ClientRecord) -> int | None:
        assert client.pid is not None, client
        return self.exit_status(client.pid, exit_path_of(client.log_path))

    def stop_client(self, client: ClientRecord, *, timeout_s: float = 15.0) -> None:
        if client.pid is not None:
            self.stop(client.pid, timeout_s=timeout_s, exit_path=exit_path_of(client.log_path))

    # by pid (also the researcher's own processes: the embedded gateway, a researcher)

    def exit_status(self, pid: int, exit_path: Path) -> int | None:
        """The exit status once the process ended; None while it runs. A process that
        vanished without writing one (killed with its wrapper) reads as -9."""
        if exit_path.exists():
            text = exit_path.read_text().strip()
            if text:
                return int(text)
        if self.alive(pid):
            return None
        time.sleep(0.05)  # the wrapper may be writing it right now
        if exit_path.exists() and exit_path.read_text().strip():
            return int(exit_path.read_text().strip())
        return -9

    def alive(self, pid: int) -> bool:
        for process in list(_children):
            if process.pid == pid and process.poll() is not None:
                _children.remove(process)
                return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _is_zombie(pid)

    def stop(self, pid: int, *, timeout_s: float = 15.0, exit_path: Path | None = None) -> None:
        """SIGTERM the process group (swarm run aborts its open episodes), then SIGKILL.
        The wrapper dies with the group before it can write the status, so `exit_path`
        (when given) gets `-<signal>` written here: a stopped client reads as -15, not -9."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if not self.alive(pid):
                    if exit_path is not None and not exit_path.exists():
                        exit_path.write_text(f"{-int(sig)}\n")
                    return
                time.sleep(0.1)


_children: list[subprocess.Popen] = []


def _is_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] == "Z"
