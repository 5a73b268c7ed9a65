"""Chaos-test machinery: a real `gateway serve` with a short client lease, and a fleet of
`swarm run` processes that can be killed (SIGKILL) and replaced.

`start_gateway_with_lease` is `gateway serve --client-lease-s S` as a user types it
(`researcher.local_gateway.start_local_gateway`), on its SQLite file or a PostgreSQL
database. `bench/churn.py` uses the same helpers.
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
from tests.integration.conftest import gateway_database  # noqa: F401  (sqlite | postgresql)

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ChaosGateway(LocalGateway):
    state_dir: Path = Path()
    lease_s: float = 30.0
    database: str | None = None  # its --database-url; None: its SQLite file in state_dir

    @property
    def database_url(self) -> str:
        return self.database or f"sqlite:///{self.state_dir / 'gateway.sqlite'}"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def start_gateway_with_lease(
    tmp: Path,
    *,
    lease_s: float,
    model: str = "tiny",
    timeout: float = 300.0,  # a hang guard, not a speed check
    port: int | None = None,
    log_name: str = "gateway.log",
    log_level: str = "warning",
    database_url: str | None = None,
) -> ChaosGateway:
    """`gateway serve --model MODEL --state-dir TMP/state` on `port` (default: a free
    loopback one), clients leased for `lease_s`, on `database_url` (default: its SQLite
    file in the state dir). The same `tmp`, `port` and `database_url` again restart a
    killed gateway where its clients look for it."""
    state_dir = tmp / "state"
    started = start_local_gateway(
        model=model,
        state_dir=state_dir,
        log_path=tmp / log_name,
        extra_args=["--client-lease-s", str(lease_s), "--log-level", log_level],
        timeout=timeout,
        port=port,
        database_url=database_url,
    )
    return ChaosGateway(
        started.url, started.process, started.log_path, state_dir, lease_s, database_url
    )


# The chaos tests' run: a GRPO run on `tiny` whose every finished episode is trained or
# waits in the buffer — groups of 2, one per step, zero-variance groups kept, groups cut
# short by a dead client trained alone after `group_timeout_s`, nothing stale.
CHAOS_RUN = {
    "policies": {"policy": {"base_model": "tiny"}},
    "lr": 1e-3,
    "group_size": 2,
    "batch_groups": 1,
    "zero_variance_groups": "keep",
    "partial_groups": "train",
    "min_group_size": 1,
    "group_timeout_s": 3.0,
    "max_staleness": 10_000,
    "max_steps": 100_000,
}


def create_run(gateway_url: str, name: str, **settings: object) -> dict:
    """`POST /runs` of `CHAOS_RUN` named `name`, with `settings` on top; the run."""
    response = httpx.post(
        f"{gateway_url}/runs", timeout=60, json={**CHAOS_RUN, "name": name, **settings}
    )
    assert response.status_code == 201, response.text
    return response.json()


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
    extra_args: list[str] = field(default_factory=list)  # e.g. ["--watch"]
    name_prefix: str = "chaos"  # clients are named PREFIX-0, PREFIX-1, …
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
        cmd += ["--concurrency", str(self.concurrency), "--name", f"{self.name_prefix}-{number}"]
        cmd += self.extra_args
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


@dataclass(frozen=True)
class LedgerCheck:
    ledger: int  # episodes the clients saw finish
    persisted: int  # of those, "finished" in the database
    trained: int  # of those, consumed by a training step
    buffered: int  # of those, waiting in the buffer


def check_ledger(ledger: list[str], database_url: str, run: str) -> LedgerCheck:
    """The ledger property of issue 5, asserted against the database as it is now: every
    episode a client saw finish is "finished" in the database, and its samples were all
    trained in exactly one step (the step recorded on the episode) or are all still
    buffered (no step consumed it) — never dropped, never in two steps.

    One step, not two, even across a gateway restart: a restart rewinds the steps after
    its checkpoint (their samples back to "buffered" with no `step_trained`, their
    episodes' `step` back to None: `gateway.runs.store.RunStore.rewind`) and trains them
    again, so a sample consumed before the kill by a step that died with the process is
    recorded once, by the step that trained it after the restart."""
    from sqlmodel import Session, select

    from experiments_db.db import make_engine
    from experiments_db.models import EpisodeRow, SampleRow

    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            episodes = {e.id: e for e in session.exec(select(EpisodeRow)).all()}
            samples = session.exec(select(SampleRow).where(SampleRow.run == run)).all()
    finally:
        engine.dispose()  # PostgreSQL: no pooled connection left on the test's database
    by_episode: dict[str, list[SampleRow]] = {}
    for sample in samples:
        by_episode.setdefault(sample.episode_id, []).append(sample)

    assert len(ledger) == len(set(ledger)) and ledger
    missing = [i for i in ledger if i not in episodes or episodes[i].status != "finished"]
    assert not missing, f"{len(missing)} finished episodes not in the database: {missing[:5]}"
    trained = 0
    for episode_id in ledger:
        rows = by_episode.get(episode_id, [])
        assert rows, f"finished episode {episode_id} has no samples"
        assert {s.status for s in rows} <= {"trained", "buffered"}, [
            (s.status, s.drop_reason) for s in rows
        ]
        trained_steps = {s.step_trained for s in rows if s.status == "trained"}
        if trained_steps:  # trained: all of it, in exactly one step, the episode's step
            assert all(s.status == "trained" for s in rows)
            assert trained_steps == {episodes[episode_id].step}
            trained += 1
        else:
            assert episodes[episode_id].step is None
    return LedgerCheck(len(ledger), len(ledger) - len(missing), trained, len(ledger) - trained)
