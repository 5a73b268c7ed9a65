"""The gateway is killed (kill -9) mid-run with three `swarm run` clients working, and
started again on the same port and --state-dir: the clients reconnect by themselves (same
processes) and go on finishing episodes, nothing a client was told is finished is lost or
trained twice, and the run goes on from its last checkpoint — weights version, trainer
step count and AdamW state — with steps advancing past it. On the gateway's SQLite file
and on PostgreSQL (`--database-url`; the checkpoints stay in the state dir): the ledger is
checked against the database the gateway came back on.

    .venv/bin/python -m pytest -q -m slow tests/chaos/test_gateway_kill.py
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from tests.chaos.conftest import ClientFleet, check_ledger, create_run, start_gateway_with_lease
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.slow

WORKFLOW = Path(__file__).parent / "workflows" / "ledger_length.py"
RUN = "killed"
LEASE_S = 10.0  # a loaded box must not lapse a lease: only the kill is chaos here
CLIENTS = 3
CHECKPOINT_EVERY = 2


def test_a_killed_gateway_comes_back_where_its_clients_and_checkpoint_left_it(
    tmp_path, gateway_database
):
    from experiments_db.db import make_engine
    from experiments_db.models import ClientRow, EpisodeRow

    gw = start_gateway_with_lease(tmp_path, lease_s=LEASE_S, database_url=gateway_database)
    fleet = ClientFleet(gw.url, RUN, WORKFLOW, tmp_path, concurrency=2)
    http = httpx.Client(base_url=gw.url, timeout=30)
    try:
        # every checkpoint kept whole: the optimizer state of older ones is read below
        create_run(gw.url, RUN, checkpoint_every=CHECKPOINT_EVERY, keep_checkpoints=0)
        run = lambda: http.get(f"/runs/{RUN}").json()  # noqa: E731
        checkpoints = lambda: http.get(f"/runs/{RUN}/checkpoints").json()  # noqa: E731

        for _ in range(CLIENTS):
            fleet.start()
        # kill between two checkpoints, so that a step the restart must train again exists;
        # the step is read last, just before the kill: read first, the next step and its
        # checkpoint could be saved while the checkpoint list was being asked for
        step_at_kill = wait_for(
            lambda: checkpoints() and (step := run()["step"]) % CHECKPOINT_EVERY != 0 and step,
            timeout=120,
            every=0.1,
        )
        gw.process.send_signal(signal.SIGKILL)
        gw.process.wait(timeout=10)
        killed_at = time.time()
        pids = {str(c.process.pid) for c in fleet.running}
        ledger_at_kill = {c.number: _lines(c.ledger) for c in fleet.running}

        gw = start_gateway_with_lease(
            tmp_path, lease_s=LEASE_S, port=gw.port, log_name="restarted.log", log_level="info",
            database_url=gateway_database,
        )  # fmt: skip
        restored = run()
        # the checkpoint it came back from is the latest one saved before the kill (the
        # restored run trains at once and may save a newer one before this reads the list)
        checkpoint = max(
            (c for c in checkpoints() if c["created_at"] < killed_at), key=lambda c: c["step"]
        )
        state = json.loads((Path(checkpoint["path"]) / "policy" / "trainer_state.json").read_text())
        restart_line = f"run {RUN}: restarting at step {checkpoint['step']} from"
        assert restart_line in gw.log_path.read_text()
        assert state["steps"] == checkpoint["step"]
        assert checkpoint["step"] < step_at_kill  # a step after it died with the process
        assert restored["step"] >= checkpoint["step"]
        assert restored["policies"]["policy"]["version"] >= state["version"]

        # the same client processes reconnect by themselves and finish new episodes
        wait_for(
            lambda: all(_lines(c.ledger) > ledger_at_kill[c.number] for c in fleet.running),
            timeout=120,
            every=0.2,
        )
        assert all(c.process.poll() is None for c in fleet.running)
        assert {str(c.process.pid) for c in fleet.running} == pids

        # training goes past a checkpoint saved after the restart
        later = wait_for(
            lambda: [c for c in checkpoints() if c["step"] > checkpoint["step"]],
            timeout=120,
            every=0.2,
        )[0]
        step_after = run()["step"]
        fleet.stop_all()
        assert all(c.process.returncode == 143 for c in fleet.stopped), [
            (c.number, c.process.returncode, c.log_path.read_text()[-2000:]) for c in fleet.stopped
        ]
    finally:
        fleet.stop_all()
        http.close()
        gw.stop()

    # the weights version, the trainer's step count and AdamW's state came back from the
    # checkpoint: in the first checkpoint after the restart all three went on from there
    later_state = json.loads((Path(later["path"]) / "policy" / "trainer_state.json").read_text())
    assert later_state["version"] - state["version"] == later["step"] - checkpoint["step"]
    assert later_state["steps"] == later["step"]
    assert _adam_steps(Path(checkpoint["path"]) / "policy") == checkpoint["step"]
    assert _adam_steps(Path(later["path"]) / "policy") == later["step"]

    ledger = fleet.ledger_episode_ids()
    checked = check_ledger(ledger, gw.database_url, RUN)
    engine = make_engine(gw.database_url)
    try:
        with Session(engine) as session:
            episodes = {e.id: e for e in session.exec(select(EpisodeRow)).all()}
            clients = session.exec(select(ClientRow)).all()
    finally:
        engine.dispose()
    after_restart = [i for i in ledger if episodes[i].created_at > killed_at]
    by_restart = [e for e in episodes.values() if "gateway restarted" in (e.abort_reason or "")]
    print(
        f"\ngateway kill: killed at step {step_at_kill}; "
        f"restored from checkpoint step {checkpoint['step']} (version {state['version']}); "
        f"step {step_after} at the end, checkpoint step {later['step']} after the restart; "
        f"ledger: {checked.ledger} episodes finished by clients ({len(after_restart)} after "
        f"the restart), {checked.persisted} persisted as finished, {checked.trained} trained "
        f"in one step, {checked.buffered} buffered; {len(by_restart)} open episodes aborted "
        f"by the restart; {len(clients)} client registrations for {CLIENTS} processes"
    )
    assert after_restart  # the clients carried on after the restart
    # every process registered again after the restart, under the same pid label
    assert {c.labels.get("pid") for c in clients if c.registered_at > killed_at} >= pids


def _lines(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def _adam_steps(policy_checkpoint: Path) -> int:
    """AdamW's step count in a checkpoint's `optimizer.pt` (the same for every parameter)."""
    import torch

    state = torch.load(policy_checkpoint / "optimizer.pt", weights_only=True)["state"]
    steps = {int(s["step"]) for s in state.values()}
    assert len(steps) == 1, steps
    return steps.pop()
