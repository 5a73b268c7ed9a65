"""Start, follow and stop client processes (`swarm run …`) as Ray jobs.

Owns: `RayJobLauncher` — the `Launcher` protocol over Ray's job API
(`ray.job_submission.JobSubmissionClient`, the dashboard's HTTP job server), `resolve_address`
and the errors that name the fix when Ray is missing or no job server answers. Each client
is one job whose submission id is derived from the launch's stable name (`swarmrl-<experiment>
-a<attempt>`), so a resumed researcher that starts the same launch again adopts the job
instead of submitting a second one. A thread per job mirrors its logs (the job server's
log tail, then the complete log once it ended) into the same log file a local client writes,
so the monitor and the web UI read Ray clients like local ones; the exit status lands in the
same `.exit` file beside it.

What travels: the command line (the absolute interpreter and workflow path when the cluster
is this machine; `swarm` on the cluster's PATH and the workflow folder as the job's
`runtime_env.working_dir` otherwise), and `runtime_env.env_vars` with only what the caller
passes for the client (its gateway key) plus the allow-listed part of this environment
(`local.is_scrubbed`). The job inherits the Ray node's environment, so the entrypoint unsets
there every name that is neither allow-listed nor passed on purpose.
Knows nothing of studies, the graph or the gateway; imports Ray only when one is made.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import shlex
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from researcher.errors import ResearcherError
from researcher.launcher.base import (
    STOPPED_STATUS,
    VANISHED_STATUS,
    ClientRecord,
    ProcessInfo,
    exit_path_of,
)
from researcher.launcher.local import ALLOWED_ENV_NAMES, ALLOWED_ENV_PREFIXES, never_passed

log = logging.getLogger(__name__)

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
ADDRESS_ENV = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")  # Ray's own order
REQUEST_TIMEOUT_S = 30.0  # Ray's SDK sends without one: a dead network would hang the monitor
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
RECONNECT_S = 2.0
INSTALL_HINT = "pip install 'swarmrl[cluster]'"
START_HINT = "start one with `ray start --head` or give --ray-address http://HEAD:8265"


# Inside the job, unset every name neither allow-listed nor passed on purpose (`keep`).
def scrub_sh(keep: list[str]) -> str:
    keep = [name for name in keep if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
    names = "|".join(sorted({*ALLOWED_ENV_NAMES, *keep, "PYTHONUNBUFFERED"}))
    prefixes = "|".join(f"{prefix}*" for prefix in ALLOWED_ENV_PREFIXES)
    return (  # the names are shell-safe: environment variable names, checked by the grep
        'for v in $(env | cut -d= -f1 | grep -E "^[A-Za-z_][A-Za-z0-9_]*$"); do '
        f'case "$v" in {names}|{prefixes}) ;; *) unset "$v" ;; esac; done'
    )


SCRUB_SH = scrub_sh([])


class RayUnavailable(ResearcherError):
    """Ray (with its job SDK) is not installed here."""


class RayClusterUnreachable(ResearcherError):
    """No Ray job server answers at the address."""


def resolve_address(explicit: str | None = None) -> str:
    """`--ray-address`, else $RAY_API_SERVER_ADDRESS, else $RAY_ADDRESS (as Ray's CLI reads
    them), else the dashboard on this machine. A dashboard URL or a GCS `host:port`."""
    for value in (explicit, *(os.environ.get(name) for name in ADDRESS_ENV)):
        if value:
            return value
    return DEFAULT_ADDRESS


def is_this_machine(host: str) -> bool:
    """Whether `host` (from the job server's address) names this machine."""
    if not host or host in ("localhost", socket.gethostname(), socket.getfqdn()):
        return True
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    try:
        theirs = {info[4][0] for info in socket.getaddrinfo(host, None)}
        ours = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return False
    return bool(theirs & ours) or all(ipaddress.ip_address(a).is_loopback for a in theirs)


def entrypoint(command: list[str], *, cwd: Path | None = None, keep: list[str] = ()) -> str:
    """The job's shell command: scrub the environment (but `keep`: the names passed on
    purpose), enter `cwd` (made on the node if missing), exec the client."""
    run = f"exec {shlex.join(command)}"
    if cwd is not None:
        folder = shlex.quote(str(cwd))
        run = f"mkdir -p {folder} && cd {folder} && {run}"
    return f"{scrub_sh(list(keep))}; {run}"


def _job_client_class():
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as error:
        raise RayUnavailable(
            f"--launcher ray needs Ray's job SDK, which is not installed here ({error}); "
            f"install it: {INSTALL_HINT}"
        ) from None

    class TimedJobSubmissionClient(JobSubmissionClient):
        """Every request under `REQUEST_TIMEOUT_S` (`requests` waits forever otherwise)."""

        def _do_request(self, method, endpoint, **kwargs):
            kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
            return super()._do_request(method, endpoint, **kwargs)

    return TimedJobSubmissionClient


@contextmanager
def _address_env_cleared() -> Iterator[None]:
    """Ray lets $RAY_API_SERVER_ADDRESS / $RAY_ADDRESS override the address it is given;
    ours is already resolved (the flag first), so they step aside while the client is made."""
    saved = {name: os.environ.pop(name) for name in ADDRESS_ENV if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def connect(address: str):
    """A job client for `address`, or an error naming the fix — in seconds where nothing
    listens (Ray's own checks have no timeout, or wait 40 s for a GCS)."""
    client_class = _job_client_class()
    try:
        _probe(address)
        with _address_env_cleared():
            return client_class(address)
    except Exception as error:  # refused, timed out, not a job server: all one fix
        cause = " ".join(str(error).split())[:300] or type(error).__name__
        raise RayClusterUnreachable(
            f"no Ray job server answers at {address} ({cause}); {START_HINT}"
        ) from None


def _probe(address: str) -> None:
    """Something listens at the dashboard URL, or at the GCS `host:port`."""
    if "://" in address:
        import requests

        requests.get(f"{address.rstrip('/')}/api/version", timeout=5)
        return
    host, _, port = address.rpartition(":")
    if host and port.isdigit():
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()


class RayJobLauncher:
    """Clients as Ray jobs on the cluster whose job server answers at `address`.

    `ship_files`: None decides by the address (a cluster on another machine gets the
    workflow folder as the job's working_dir); True/False force it (tests, a cluster whose
    head is here but whose workers are not)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, ship_files: bool | None = None):
        self.requested_address = resolve_address(address)
        self.client = connect(self.requested_address)
        self.address = self.client.get_address()  # the job server's http URL
        host = urlsplit(self.address).hostname or ""
        self.ships_files = (not is_this_machine(host)) if ship_files is None else ship_files
        self._mirrors: dict[str, _LogMirror] = {}
        self._lock = threading.Lock()

    @staticmethod
    def submission_id(name: str) -> str:
        return f"swarmrl-{name}"

    def start(
        self,
        command: list[str],
        *,
        log_path: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        name: str | None = None,
        files: Path | None = None,
    ) -> ProcessInfo:
        """Submit `command` as a job — or adopt the job a previous start of `name` submitted."""
        submission_id = self.submission_id(name) if name else None
        existing = self._info(submission_id) if submission_id else None
        if existing is None:
            runtime_env: dict[str, Any] = {
                "env_vars": {
                    **{k: v for k, v in (env or {}).items() if not never_passed(k)},
                    "PYTHONUNBUFFERED": "1",  # the log mirror sees lines as they are printed
                }
            }
            if self.ships_files and files is not None:
                runtime_env["working_dir"] = str(files)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            if not self.ships_files:
                cwd.mkdir(parents=True, exist_ok=True)  # this machine's folder: the job enters it
            exit_path_of(log_path).unlink(missing_ok=True)
            try:
                submission_id = self.client.submit_job(
                    entrypoint=entrypoint(
                        command,
                        cwd=None if self.ships_files else cwd,
                        keep=[k for k in env or {} if not never_passed(k)],
                    ),
                    submission_id=submission_id,
                    runtime_env=runtime_env,
                    metadata={"swarmrl": name or "client", "log": str(log_path)},
                )
            except RuntimeError as error:
                if not (submission_id and "already exists" in str(error)):
                    raise
                existing = self._info(submission_id)  # submitted meanwhile: adopt it
                log.info("Ray job %s already exists: adopted", submission_id)
        assert submission_id is not None
        started_at = time.time()
        if existing is not None and existing.start_time:
            started_at = existing.start_time / 1000
        self._mirror(submission_id, log_path)
        exit_path = exit_path_of(log_path)
        return ProcessInfo(None, self.address, log_path, exit_path, started_at, submission_id)

    def client_alive(self, client: ClientRecord) -> bool:
        return self.client_exit_status(client) is None

    def client_exit_status(self, client: ClientRecord) -> int | None:
        """SUCCEEDED → 0; FAILED → the entrypoint's exit code (1 when Ray has none: the
        runtime env or the job's supervisor failed); STOPPED → `STOPPED_STATUS`; a job the
        cluster does not know → `VANISHED_STATUS`. None while it is pending or running, and
        while the job server does not answer (a cluster that stays away stalls the run,
        which the monitor's stall rule ends)."""
        assert client.job_id, client
        try:
            info = self.client.get_job_info(client.job_id)
        except (RuntimeError, OSError) as error:  # OSError: requests' connection errors
            if not (isinstance(error, RuntimeError) and _not_found(error)):
                log.warning("Ray job server %s did not answer: %s", self.address, error)
                return None
            status = VANISHED_STATUS
        else:
            status = _exit_status(info)
            if status is None:
                self._mirror(client.job_id, Path(client.log_path))
                return None
        self._finish(client.job_id, Path(client.log_path), status)
        return status

    def stop_client(self, client: ClientRecord, *, timeout_s: float = 15.0) -> None:
        """`stop_job` (SIGTERM, then SIGKILL after Ray's `RAY_JOB_STOP_WAIT_TIME_S`), and
        wait up to `timeout_s` for the job to end."""
        assert client.job_id, client
        try:
            self.client.stop_job(client.job_id)
        except RuntimeError as error:
            if _not_found(error):
                return
            raise
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.client_exit_status(client) is not None:
                return
            time.sleep(0.2)

    # -- internals --------------------------------------------------------------------------

    def _info(self, submission_id: str):
        try:
            return self.client.get_job_info(submission_id)
        except RuntimeError as error:
            if _not_found(error):
                return None
            raise

    def _mirror(self, submission_id: str, log_path: Path) -> None:
        with self._lock:
            if submission_id not in self._mirrors:
                mirror = _LogMirror(self.client, submission_id, log_path)
                self._mirrors[submission_id] = mirror
                mirror.start()

    def _finish(self, submission_id: str, log_path: Path, status: int) -> None:
        """The job ended: its complete log in place (the mirror's last act), then the
        status beside it."""
        self._mirror(submission_id, log_path)  # an ended job adopted by a fresh researcher
        self._mirrors[submission_id].complete()
        exit_path = exit_path_of(log_path)
        if not exit_path.exists():
            exit_path.write_text(f"{status}\n")


def _not_found(error: RuntimeError) -> bool:
    """Ray's SDK answers an unknown job id with a RuntimeError carrying the 404."""
    return "status code 404" in str(error) or "does not exist" in str(error)


def _exit_status(info) -> int | None:
    status = str(getattr(info.status, "value", info.status))
    if status not in TERMINAL:
        return None
    if status == "SUCCEEDED":
        return 0
    if status == "STOPPED":
        return STOPPED_STATUS
    code = getattr(info, "driver_exit_code", None)
    return int(code) if code is not None else 1


class _LogMirror(threading.Thread):
    """Copies one job's log into `log_path`: the job server's live tail while the job runs
    (each (re)connection starts from the log's beginning, so the file is rewritten), then
    the complete log once it ended — written by `complete()`, which the exit status calls
    at once (the tail's socket closes seconds after the job ends) and nothing writes after."""

    def __init__(self, client, submission_id: str, log_path: Path):
        super().__init__(name=f"ray-log-{submission_id}", daemon=True)
        self.client, self.submission_id, self.log_path = client, submission_id, log_path
        self._lock = threading.Lock()
        self._complete = False

    def run(self) -> None:
        while not self._complete:
            try:
                asyncio.run(self._tail())
            except Exception as error:  # a broken stream: reconnect while the job runs
                log.debug("log tail of %s broke: %s", self.submission_id, error)
            if self._ended():
                break
            time.sleep(RECONNECT_S)
        self.complete()

    def complete(self) -> None:
        """Write the job's whole log (it ended); later tail chunks are dropped."""
        with self._lock:
            if self._complete:
                return
            try:
                text = self.client.get_job_logs(self.submission_id)
            except (RuntimeError, OSError) as error:
                log.warning("could not read the log of Ray job %s: %s", self.submission_id, error)
                return  # what the tail wrote stays; the thread tries again when it ends
            self._write(text, "w")
            self._complete = True

    async def _tail(self) -> None:
        with self._lock:
            if self._complete:
                return
            self._write("", "w")
        async for chunk in self.client.tail_job_logs(self.submission_id):
            with self._lock:
                if self._complete:
                    return
                self._write(chunk, "a")

    def _write(self, text: str, mode: str) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open(mode) as out:
            out.write(text)

    def _ended(self) -> bool:
        try:
            status = self.client.get_job_status(self.submission_id)
        except RuntimeError as error:  # unknown to the cluster: nothing more will come
            return _not_found(error)
        except OSError:
            return False
        return str(getattr(status, "value", status)) in TERMINAL
