"""Start and stop a local `gateway serve` process (the embedded gateway of demos and studies),
and say where a study's embedded gateway keeps its runs and episodes.

Speaks to it over HTTP only, like every client; knows nothing of its internals. Its
database is handed over as `$SWARMRL_GATEWAY_DB_URL`, and its admin key (a study's embedded
gateway has one) as `$SWARMRL_API_KEY`, in its own environment only (never on its command
line, which every local user can read, nor in the researcher's environment).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import Engine


class GatewayStartError(RuntimeError):
    """The gateway process exited or did not become healthy in time."""


@dataclass
class LocalGateway:
    url: str
    process: subprocess.Popen
    log_path: Path

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 30.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(GatewayStartError):
    """The gateway could not bind its port: another process has it."""


PORT_TRIES = 3  # a port picked free can be taken before the gateway binds it


def start_local_gateway(
    *,
    model: str,
    state_dir: Path,
    log_path: Path,
    extra_args: list[str] | None = None,
    timeout: float = 300.0,
    port: int | None = None,
    start_new_session: bool = False,
    database_url: str | None = None,
    api_key: str | None = None,
) -> LocalGateway:
    """Start `gateway serve` on `port` (default: a free loopback port) and wait until
    `/healthz` answers as a gateway. Its database is `database_url` when given, else the one
    `gateway serve` picks (its SQLite file in `state_dir`, unless `extra_args` names another).

    A port picked here and taken by another process before the gateway binds it (the
    gateway says so and exits at once) is picked again, up to PORT_TRIES times; a port the
    caller named is not."""
    for attempt in range(1, PORT_TRIES + 1):
        try:
            return _start(
                model=model,
                state_dir=state_dir,
                log_path=log_path,
                extra_args=extra_args,
                timeout=timeout,
                port=port or free_port(),
                start_new_session=start_new_session,
                database_url=database_url,
                api_key=api_key,
            )
        except PortTaken:
            if port is not None or attempt == PORT_TRIES:
                raise
    raise AssertionError("unreachable")


def _start(
    *,
    model: str,
    state_dir: Path,
    log_path: Path,
    extra_args: list[str] | None,
    timeout: float,
    port: int,
    start_new_session: bool,
    database_url: str | None,
    api_key: str | None,
) -> LocalGateway:
    state_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "gateway",
        "serve",
        "--model",
        model,
        "--port",
        str(port),
        "--state-dir",
        str(state_dir),
        "--log-level",
        "warning",
        *(extra_args or []),
    ]
    env = dict(os.environ)
    # the embedded gateway's database is the study's choice, never a standalone gateway's
    # $SWARMRL_GATEWAY_DB_URL that happens to be set in the user's shell
    env.pop("SWARMRL_GATEWAY_DB_URL", None)
    if database_url:
        env["SWARMRL_GATEWAY_DB_URL"] = database_url
    if api_key:
        env["SWARMRL_API_KEY"] = api_key
    process = subprocess.Popen(
        cmd,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=start_new_session,  # outlives its parent (a study's gateway)
    )
    gateway = LocalGateway(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = gateway.log_tail()
            raise (PortTaken if f"cannot bind 127.0.0.1:{port}" in tail else GatewayStartError)(
                f"gateway exited with code {process.returncode}:\n{tail}"
            )
        if _is_gateway_health(gateway.url) and process.poll() is None:
            return gateway
        time.sleep(0.3)
    gateway.stop()
    raise GatewayStartError(
        f"gateway did not answer /healthz within {timeout:.0f}s:\n{gateway.log_tail()}"
    )


def _is_gateway_health(url: str) -> bool:
    """Whether `url/healthz` answers as a gateway does (200 and its JSON), not merely 200:
    another server on the port would answer too."""
    try:
        answer = httpx.get(url + "/healthz", timeout=1)
        return answer.status_code == 200 and answer.json().get("status") == "ok"
    except (httpx.HTTPError, ValueError, AttributeError):
        return False


def embedded_gateway_database(study_db: Engine, study_id: str) -> str | None:
    """The database URL for a study's embedded gateway when the study database is
    PostgreSQL: the same database, in a schema of its own, `gateway_<study id>` (created
    here if missing), named by the URL's `search_path`. None otherwise: the gateway keeps its
    SQLite file in the study folder.

    Never the researcher's own schema: a gateway restores every live run it finds in its
    database at start, so two studies' gateways sharing run tables would train each other's
    runs."""
    url = study_db.url
    if url.get_backend_name() != "postgresql":
        return None
    schema = embedded_gateway_schema(study_id)
    with study_db.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    options = url.query.get("options")  # the user's own `-c name=value` settings stay
    search_path = f"-c search_path={schema}"
    options = f"{options} {search_path}" if isinstance(options, str) else search_path
    return url.update_query_dict({"options": options}).render_as_string(hide_password=False)


def embedded_gateway_schema(study_id: str) -> str:
    """`st-1a2b3c4d` → `gateway_st_1a2b3c4d`: the PostgreSQL schema of that study's gateway."""
    return "gateway_" + re.sub(r"[^a-z0-9_]", "_", study_id.lower())
