"""A real local Ray cluster for the tests: `ray start --head --block` on loopback with every
port picked free and its own temp dir (again with fresh ports, up to 3 times, when `ray
start` exits before its dashboard answers: a port taken in between), started once per
session and stopped (its process
group killed) at the end — never `ray stop`, which would stop every Ray on the machine.
Tests that need it skip, saying why, where Ray (`pip install 'swarmrl[cluster]'`, which
`make install` adds) is missing.

Fixture (registered for every test by `tests/conftest.py`):

- `ray_cluster`: a `RayCluster` (8 logical CPUs, so a few 1-CPU actors fit on a 2-core box) with `address` (`127.0.0.1:PORT`, what `ray.init(address=)`
  and `gateway serve --ray` take), `dashboard_url` (`http://127.0.0.1:PORT`, the job API
  `researcher start --launcher ray` submits to) and `temp_dir`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

START_TIMEOUT_S = 300.0  # a hang guard: ray start takes ~10 s quiet, far more beside other work


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def unavailable() -> str | None:
    """Why no test cluster can be started here (None: it can)."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed (pip install 'swarmrl[cluster]'; `make install` adds it)"
    if not (Path(sys.executable).parent / "ray").exists():
        return "the `ray` command is not next to this Python"
    return None


@dataclass
class RayCluster:
    address: str
    dashboard_url: str
    temp_dir: Path
    process: subprocess.Popen

    def env(self) -> dict[str, str]:
        """Environment for a child process that should find this cluster by itself."""
        return {"RAY_ADDRESS": self.address, "RAY_TMPDIR": str(self.temp_dir.parent)}


def _dashboard_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def start_cluster(num_cpus: int = 8) -> RayCluster:
    # Ray turns token authentication on by itself when ~/.ray/auth_token exists (any earlier
    # `ray get-auth-token --generate` on the machine): its dashboard then answers 401 and
    # every child would need the token. The test cluster is loopback-only: off, for this
    # process and every child (the gateway, clients, jobs), unless the caller chose a mode.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # short: Ray puts unix sockets under it (path limit 107 bytes)
    temp_root = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    gcs, dashboard, agent, agent_grpc, metrics, env_agent, client, nm, om = _free_ports(9)
    command = [
        str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
        "--node-ip-address", "127.0.0.1", "--port", str(gcs), "--num-cpus", str(num_cpus),
        "--include-dashboard", "true", "--dashboard-host", "127.0.0.1",
        "--dashboard-port", str(dashboard), "--dashboard-agent-listen-port", str(agent),
        "--dashboard-agent-grpc-port", str(agent_grpc), "--metrics-export-port", str(metrics),
        "--runtime-env-agent-port", str(env_agent), "--ray-client-server-port", str(client),
        "--node-manager-port", str(nm), "--object-manager-port", str(om),
        "--temp-dir", str(temp_root / "ray"), "--disable-usage-stats",
        "--object-store-memory", str(200 * 1024 * 1024),
    ]  # fmt: skip
    log = open(temp_root / "ray-start.log", "wb")  # noqa: SIM115 - the child writes it
    env = os.environ | {"RAY_USAGE_STATS_ENABLED": "0"}
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    cluster = RayCluster(
        address=f"127.0.0.1:{gcs}",
        dashboard_url=f"http://127.0.0.1:{dashboard}",
        temp_dir=temp_root / "ray",
        process=process,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _dashboard_up(cluster.dashboard_url):
        if process.poll() is not None or time.monotonic() > deadline:
            # read the log before stop_cluster removes its folder
            tail = (temp_root / "ray-start.log").read_text(errors="replace")[-3000:]
            exited = process.poll() is not None
            stop_cluster(cluster)
            raise (RayStartExited if exited else RuntimeError)(
                f"ray start --head did not come up in {START_TIMEOUT_S:.0f} s "
                f"(exit code {process.poll()}):\n{tail}"
            )
        time.sleep(0.5)
    return cluster


class RayStartExited(RuntimeError):
    """`ray start` exited before its dashboard answered (a port taken between picking it free
    and Ray binding it, say: likelier with other work on the machine)."""


def start_cluster_retrying(attempts: int = 3) -> RayCluster:
    """`start_cluster`, again with fresh ports when `ray start` exited early; a start that
    hangs past its timeout is not retried."""
    for attempt in range(1, attempts + 1):
        try:
            return start_cluster()
        except RayStartExited:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def stop_cluster(cluster: RayCluster) -> None:
    try:
        os.killpg(cluster.process.pid, signal.SIGTERM)
        cluster.process.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:  # whatever ignored SIGTERM (workers, the dashboard's children)
        os.killpg(cluster.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(cluster.temp_dir.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    reason = unavailable()
    if reason:
        pytest.skip(f"Ray tests skipped: {reason}")
    cluster = start_cluster_retrying()
    try:
        yield cluster
    finally:
        stop_cluster(cluster)
