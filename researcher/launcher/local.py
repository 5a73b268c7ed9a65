"""Start, follow and stop client processes (`swarm run …`) on this machine.

Owns: `LocalLauncher` (the `Launcher` protocol of `base.py`, plus pid-level `alive` / `stop`
that the researcher also uses for its own processes), `run_contained` (one client run to its
end under a time limit, as the validate node's dry runs need), and what contains a client's
process: the environment allow-list (`client_env`, `is_scrubbed`) and the resource limits
(`ClientLimits`). Each process runs in its own session (so it outlives a killed researcher
and is stopped as a whole group: SIGTERM, then SIGKILL after a grace period) under a small
`sh` wrapper that writes the exit status to a file beside the log — so whoever looks later
(the same researcher, or one that resumed after kill -9 and never was the parent) learns
how it ended.

Containment, and its limits: a client sees only the allow-listed environment plus what the
researcher hands it (its gateway URL and its run-scoped client key), runs under RLIMIT_CPU,
RLIMIT_DATA and RLIMIT_NPROC, with its own folder as working directory and HOME (so
libraries that read credentials from ~ find none). It still runs as the researcher's user:
files that user can read by absolute path (the study database, ~/.aws) stay readable to
it. That needs an OS sandbox (a container, another uid), which this module does not provide.
Knows nothing of studies, the graph or the gateway.
"""

from __future__ import annotations

import os
import resource
import signal
import site
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from researcher.launcher.base import ClientRecord, ProcessInfo, exit_path_of

# What a client inherits from the researcher's environment; everything else is dropped
# (API keys, cloud credentials, the admin key, database URLs, tokens). HOME is replaced by
# the client's own folder where the launcher is given one. Proxy and CA settings pass: a
# client behind a proxy cannot reach its gateway without them (a proxy URL with a password
# in it passes too — say so in docs/researcher.md).
ALLOWED_ENV_NAMES = frozenset(
    {
        "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "COLUMNS", "NO_COLOR",
        "FORCE_COLOR", "USER", "LOGNAME",
        "PYTHONPATH", "VIRTUAL_ENV", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING", "PYTHONUTF8",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
        "SWARMRL_GATEWAY",  # the gateway's URL (`swarm run --gateway`'s envvar): no secret
    }
)  # fmt: skip
ALLOWED_ENV_PREFIXES = ("LC_",)
# Never handed to a client, even on purpose (a caller's mistake): the researcher's database
# and planner credentials.
NEVER_PASSED_PREFIXES = (
    "SWARMRL_DB",
    "SWARMRL_GATEWAY_DB",
    "SWARMRL_PLANNER",
    "DATABASE_URL",
    "PG",
)
NEVER_PASSED_NAMES = frozenset({"OPENAI_API_KEY"})
WRAPPER = '"$@"; echo $? > "$SWARMRL_EXIT_FILE"'
STOP_GRACE_S = 15.0

__all__ = [
    "ClientLimits",
    "LocalLauncher",
    "ProcessInfo",
    "client_env",
    "exit_path_of",
    "is_scrubbed",
    "run_contained",
]


def is_scrubbed(key: str, allow: Iterable[str] = ()) -> bool:
    """Whether a client must not inherit the environment variable `key` (everything not on
    the allow-list, nor in `allow`: the names a study adds with `client_env_allow`)."""
    allowed = key in ALLOWED_ENV_NAMES or key.startswith(ALLOWED_ENV_PREFIXES) or key in allow
    return not allowed or never_passed(key)


def never_passed(key: str) -> bool:
    """Whether `key` must not reach a client even when a caller hands it over."""
    return key.startswith(NEVER_PASSED_PREFIXES) or key in NEVER_PASSED_NAMES


def client_env(
    extra: dict[str, str] | None = None,
    *,
    home: Path | None = None,
    allow: Iterable[str] = (),
) -> dict[str, str]:
    """The environment of a client: the allow-listed part of this one, `extra` on top (what
    the researcher hands the client on purpose), and HOME=`home` when given (Python still
    finds a user-site install: PYTHONUSERBASE keeps pointing at the real one)."""
    allow = frozenset(allow)
    env = {key: value for key, value in os.environ.items() if not is_scrubbed(key, allow)}
    if home is not None:
        env["PYTHONUSERBASE"] = os.environ.get("PYTHONUSERBASE") or site.getuserbase()
        env["HOME"] = str(home)
    env.update({key: value for key, value in (extra or {}).items() if not never_passed(key)})
    return env


@dataclass(frozen=True)
class ClientLimits:
    """Resource limits of a client process (None: no limit). `processes` is how many tasks
    (processes and threads) the client's user may have *beyond* those it has at launch:
    RLIMIT_NPROC counts every task of the uid, not only the client's. The kernel does not
    apply RLIMIT_NPROC to root."""

    cpu_s: int | None = 24 * 3600
    memory_bytes: int | None = 4 << 30  # RLIMIT_DATA: heap and private mappings
    processes: int | None = 512

    def preexec(self) -> Callable[[], None]:
        """What the child runs between fork and exec: only setrlimit calls, all computed
        here (the parent may have threads; nothing that takes a lock may run there)."""
        settings: list[tuple[int, tuple[int, int]]] = []
        if self.cpu_s is not None:  # SIGXCPU at the soft limit, SIGKILL a minute later
            settings.append((resource.RLIMIT_CPU, _capped(resource.RLIMIT_CPU, self.cpu_s, 60)))
        if self.memory_bytes is not None:
            settings.append(
                (resource.RLIMIT_DATA, _capped(resource.RLIMIT_DATA, self.memory_bytes))
            )
        if self.processes is not None and Path("/proc").is_dir():  # counted in /proc
            bound = _tasks_of_this_user() + self.processes
            settings.append((resource.RLIMIT_NPROC, _capped(resource.RLIMIT_NPROC, bound)))

        def apply() -> None:
            for which, limits in settings:
                resource.setrlimit(which, limits)

        return apply


def _capped(which: int, soft: int, hard_extra: int = 0) -> tuple[int, int]:
    """(soft, hard) no higher than the current hard limit (raising it needs privilege)."""
    _, hard = resource.getrlimit(which)
    new_hard = soft + hard_extra
    if hard != resource.RLIM_INFINITY:
        new_hard, soft = min(new_hard, hard), min(soft, hard)
    return soft, new_hard


def _tasks_of_this_user() -> int:
    uid, count = os.getuid(), 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def kill_group(pid: int, *, grace_s: float, is_alive: Callable[[], bool]) -> signal.Signals | None:
    """SIGTERM the process group `pid`, SIGKILL it after `grace_s` if its leader still runs;
    the group's stragglers are killed either way. The signal that ended the leader."""
    ended_by = None
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return ended_by
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not is_alive():
                ended_by = sig
                break
            time.sleep(0.1)
        if ended_by is not None:
            break
    try:
        os.killpg(pid, signal.SIGKILL)  # children that ignored SIGTERM, or outlived the leader
    except (ProcessLookupError, PermissionError):
        pass
    return ended_by


def run_contained(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    limits: ClientLimits = ClientLimits(),
    grace_s: float = 5.0,
) -> tuple[int | None, str]:
    """Run `command` (env as given: build it with `client_env`) in its own session under
    `limits` until it ends or `timeout_s` passes; then its whole group is stopped. Returns
    (exit code, or None on timeout; its output, stdout and stderr together). Nothing it
    started outlives it."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True,
        preexec_fn=limits.preexec(),
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=timeout_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        kill_group(process.pid, grace_s=grace_s, is_alive=lambda: process.poll() is None)
        output, _ = process.communicate()
        returncode = None
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever it left behind in its group
    except (ProcessLookupError, PermissionError):
        pass
    return returncode, output or ""


class LocalLauncher:
    name = "local"
    ships_files = False  # the client runs here: the workflow is read where it lies

    def __init__(self, *, limits: ClientLimits | None = None, allow_env: Iterable[str] = ()):
        self.limits = limits or ClientLimits()
        self.allow_env = tuple(allow_env)

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
        """`cwd` is also the client's HOME: give each client a folder of its own."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        cwd.mkdir(parents=True, exist_ok=True)
        exit_path = exit_path_of(log_path)
        exit_path.unlink(missing_ok=True)
        extra = {**(env or {}), "SWARMRL_EXIT_FILE": str(exit_path)}
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                ["sh", "-c", WRAPPER, "sh", *command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=client_env(extra, home=cwd, allow=self.allow_env),
                start_new_session=True,
                preexec_fn=self.limits.preexec(),
            )
        _children.append(process)  # reaped by `alive`, so no zombie outlives its exit
        return ProcessInfo(process.pid, socket.gethostname(), log_path, exit_path, time.time())

    # the `Launcher` protocol: a client by its record

    def client_alive(self, client: ClientRecord) -> bool:
        return client.pid is not None and self.alive(client.pid)

    def client_exit_status(self, client: ClientRecord) -> int | None:
        assert client.pid is not None, client
        return self.exit_status(client.pid, exit_path_of(client.log_path))

    def stop_client(self, client: ClientRecord, *, timeout_s: float = STOP_GRACE_S) -> None:
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

    def stop(
        self, pid: int, *, timeout_s: float = STOP_GRACE_S, exit_path: Path | None = None
    ) -> None:
        """SIGTERM the process group (swarm run aborts its open episodes), then SIGKILL after
        `timeout_s`; what is left of the group is killed too (a workflow's own children).
        The wrapper dies with the group before it can write the status, so `exit_path`
        (when given) gets `-<signal>` written here: a stopped client reads as -15, not -9."""
        ended_by = kill_group(pid, grace_s=timeout_s, is_alive=lambda: self.alive(pid))
        if ended_by is not None and exit_path is not None and not exit_path.exists():
            exit_path.write_text(f"{-int(ended_by)}\n")


_children: list[subprocess.Popen] = []


def _is_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] == "Z"
