"""Clients die mid-episode (kill -9) and are replaced while a run trains: nothing a client
was told is finished gets lost or trained twice, training keeps going, and the dead
clients' open episodes are aborted once their lease lapses."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from tests.chaos.conftest import (
    ClientFleet,
    check_ledger,
    churn,
    create_run,
    start_gateway_with_lease,
)
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.slow

WORKFLOW = Path(__file__).parent / "workflows" / "ledger_length.py"
LEASE_S = 2.0
CLIENTS = 4
CHURN_S = 40.0
KILL_EVERY_S = 4.0


def test_killed_clients_lose_no_finished_episode_and_training_goes_on(tmp_path):
    from experiments_db.db import make_engine
    from experiments_db.models import EpisodeRow

    gw = start_gateway_with_lease(tmp_path, lease_s=LEASE_S)
    fleet = ClientFleet(gw.url, "churn", WORKFLOW, tmp_path, concurrency=2)
    try:
        create_run(gw.url, "churn")
        step = lambda: httpx.get(f"{gw.url}/runs/churn", timeout=10).json()["step"]  # noqa: E731

        for _ in range(CLIENTS):
            fleet.start()
        wait_for(lambda: step() >= 1, timeout=120)  # a hang bound on a loaded box
        step_before = step()
        kills = churn(fleet, seconds=CHURN_S, every_s=KILL_EVERY_S, rng=random.Random(5))
        step_after = step()
        fleet.stop_all()
        # 143: stopped by its SIGTERM handler; -SIGTERM: a replacement started in the last
        # seconds of the churn, stopped before a loaded box got it to install that handler
        stopped_cleanly = {143, -signal.SIGTERM}
        assert all(c.process.returncode in stopped_cleanly for c in fleet.stopped), [
            (c.number, c.process.returncode, c.log_path.read_text()[-2000:]) for c in fleet.stopped
        ]

        engine = make_engine(gw.database_url)
        killed_pids = {str(c.process.pid) for c in fleet.killed}

        def killed_episodes() -> list[EpisodeRow]:
            with Session(engine) as session:
                return killed_clients_episodes(session, killed_pids)

        # the last one was killed a few seconds ago: give its lease time to lapse
        wait_for(
            lambda: all(e.status != "open" for e in killed_episodes()),
            timeout=LEASE_S + 10,
        )
        ledger = fleet.ledger_episode_ids()
        with Session(engine) as session:
            finished = len(
                session.exec(select(EpisodeRow.id).where(EpisodeRow.status == "finished")).all()
            )
            of_killed = killed_clients_episodes(session, killed_pids)
    finally:
        fleet.stop_all()
        gw.stop()

    checked = check_ledger(ledger, gw.database_url, "churn")
    lease_aborted = [e for e in of_killed if _lease_abort(e)]
    print(
        f"\nchurn: {kills} clients killed and replaced in {CHURN_S:.0f}s; "
        f"steps {step_before} -> {step_after}; ledger: {checked.ledger} episodes finished by "
        f"clients, {checked.persisted} persisted as finished ({finished} finished in the "
        f"database), {checked.trained} trained in one step, {checked.buffered} buffered; "
        f"{len(lease_aborted)} episodes of killed clients aborted when their lease lapsed"
    )

    assert kills >= 5
    assert step_after - step_before >= 2  # training went on through the churn
    assert lease_aborted, "no killed client had an open episode aborted by its lease lapsing"
    for episode in of_killed:
        assert episode.status == "finished" or _lease_abort(episode), (
            episode.status,
            episode.abort_reason,
        )


def _lease_abort(episode) -> bool:
    return episode.status == "aborted" and "lease" in (episode.abort_reason or "")


def killed_clients_episodes(session: Session, killed_pids: set[str]) -> list:
    """Episodes of the clients whose process was killed (clients label themselves with their
    pid; a process that registered again has several client ids)."""
    from experiments_db.models import ClientRow, EpisodeRow

    killed_ids = [
        row.id
        for row in session.exec(select(ClientRow)).all()
        if row.labels.get("pid") in killed_pids
    ]
    return session.exec(select(EpisodeRow).where(EpisodeRow.client_id.in_(killed_ids))).all()
