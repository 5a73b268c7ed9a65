"""Chaos-test machinery: a real `gateway serve` with a short client lease, and a fleet of
`swarm run` processes that can be killed (SIGKILL) and replaced.

`start_gateway_with_lease` is `gateway serve --client-lease-s S` as a user types it
(`researcher.local_gateway.start_local_gateway`). `bench/churn.py` uses the same helpers.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from researcher.local_gateway import LocalGateway, start_local_gateway

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ChaosGateway(LocalGateway):
    state_dir: Path = Path()
    lease_s: float = 30.0

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.state_dir / 'gateway.sqlite'}"


def start_gateway_with_lease(
    tmp: Path, *, lease_s: float, model: str = "tiny", timeout: float = 120.0
) -> ChaosGateway:
    """`gateway serve --model MODEL` on a free loopback port, clients leased for `lease_s`."""
    state_dir = tmp / "state"
    started = start_local_gateway(
        model=model,
        state_dir=state_dir,
        log_path=tmp / "gateway.log",
        extra_args=["--client-lease-s", str(lease_s)],
        timeout=timeout,
    )
    return ChaosGateway(started.url, started.process, started.log_path, state_dir, lease_s)


@dataclass
class ClientProcess:
    number: int
    process: subprocess.Popen
    ledger: Path
    log_path: Path


@dataclass
class ClientFleet:
    """`swarm run WORKFLOW` processes against one run; each writes its own ledger and log."""

    gateway_url: str
    run: str
    workflow: Path
    workdir: Path
    concurrency: int = 2
    running: list[ClientProcess] = field(default_factory=list)
    killed: list[ClientProcess] = field(default_factory=list)
    stopped: list[ClientProcess] = field(default_factory=list)
    _started: int = 0

    def start(self) -> ClientProcess:
        number = self._started
        self._started += 1
        ledger = self.workdir / f"ledger-{number}.txt"
        log_path = self.workdir / f"client-{number}.log"
        cmd = [sys.executable, "-m", "swarm.cli", "run", str(self.workflow)]
        cmd += ["--gateway", self.gateway_url, "--run", self.run]
        cmd += ["--concurrency", str(self.concurrency), "--name", f"chaos-{number}"]
        process = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdout=log_path.open("w"),
            stderr=subprocess.STDOUT,
            env=dict(os.environ, SWARMRL_CHAOS_LEDGER=str(ledger)),
        )
        client = ClientProcess(number, process, ledger, log_path)
        self.running.append(client)
        return client

    def busy_pids(self) -> set[str]:
        """Pids of the running clients that hold open episodes now (the gateway's view)."""
        try:
            listed = httpx.get(f"{self.gateway_url}/swarm/clients", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return set()
        return {c["labels"].get("pid", "") for c in listed if c.get("episodes_open", 0) > 0}

    def kill_one(self, rng: random.Random) -> ClientProcess:
        """SIGKILL a random running client (no goodbye to the gateway) and reap it; one
        that holds open episodes when there is one, so the lease-lapse path is exercised."""
        busy = self.busy_pids()
        pool = [i for i, c in enumerate(self.running) if str(c.process.pid) in busy]
        client = self.running.pop(rng.choice(pool) if pool else rng.randrange(len(self.running)))
        client.process.send_signal(signal.SIGKILL)
        client.process.wait(timeout=10)
        self.killed.append(client)
        return client

    def stop_all(self, timeout: float = 20.0) -> None:
        """SIGTERM every running client (aborts its open episodes, deregisters); SIGKILL
        whatever has not exited by `timeout`."""
        for client in self.running:
            client.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for client in self.running:
            try:
                client.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                client.process.kill()
                client.process.wait(timeout=10)
        self.stopped.extend(self.running)
        self.running = []

    def ledger_episode_ids(self) -> list[str]:
        ids: list[str] = []
        for client in self.running + self.killed + self.stopped:
            if client.ledger.exists():
                ids += client.ledger.read_text().split()
        return ids


def churn(fleet: ClientFleet, *, seconds: float, every_s: float, rng: random.Random) -> int:
    """For `seconds`, SIGKILL a random client every `every_s` and start a replacement at
    once; the number killed. Bounded in time and in count."""
    kills = 0
    started = time.monotonic()
    max_kills = int(seconds / every_s) + 1
    while kills < max_kills:
        next_kill = started + (kills + 0.5) * every_s
        if next_kill >= started + seconds:
            break
        time.sleep(max(next_kill - time.monotonic(), 0))
        fleet.kill_one(rng)
        fleet.start()
        kills += 1
    time.sleep(max(started + seconds - time.monotonic(), 0))
    return kills
