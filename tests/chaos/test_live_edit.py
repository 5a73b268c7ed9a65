"""Rewards edited while a run trains: one `swarm run --watch` client restarts itself with
the edited file; another, plain, is killed (kill -9) and started again on its edited file.
The new code versions register, their episodes train with their own
`code/<version>/*` metrics next to the old versions', the old clients' open episodes are
gone, and training keeps going.

    .venv/bin/python -m pytest -q -m slow tests/chaos/test_live_edit.py
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from tests.chaos.conftest import ClientFleet, create_run, start_gateway_with_lease
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.slow

WORKFLOW = Path(__file__).parent / "workflows" / "constant_reward.py"
RUN = "edited"
LEASE_S = (
    15.0  # a loaded 2-core box delays heartbeats by 5 s and more: only the edits are chaos here
)
# a bound on a hang, not a speed: a loaded 2-core box starts a `swarm run` client (torch
# imports) and trains its first step in well over 30 s
WAIT_S = 120
# (reward before the edit, reward after it) of the watched and of the restarted client
WATCHED = (0.25, 0.75)
RESTARTED = (0.5, 1.0)


def test_edited_rewards_train_as_new_code_versions_while_the_run_goes_on(tmp_path):
    from experiments_db.db import make_engine
    from experiments_db.models import ClientRow, EpisodeRow

    watched_file = _workflow(tmp_path / "watched", WATCHED[0])
    restarted_file = _workflow(tmp_path / "restarted", RESTARTED[0])
    gw = start_gateway_with_lease(tmp_path, lease_s=LEASE_S)
    watched = ClientFleet(
        gw.url, RUN, watched_file, watched_file.parent, extra_args=["--watch"], name_prefix="w"
    )
    restarted = ClientFleet(gw.url, RUN, restarted_file, restarted_file.parent, name_prefix="r")
    http = httpx.Client(base_url=gw.url, timeout=30)
    try:
        create_run(gw.url, RUN, group_timeout_s=2.0)
        step = lambda: http.get(f"/runs/{RUN}").json()["step"]  # noqa: E731

        def code_of(pid: int) -> dict | None:
            """The active client of process `pid` (the gateway's view), if registered."""
            listed = http.get("/swarm/clients").json()
            return next((c for c in listed if c["labels"].get("pid") == str(pid)), None)

        def trained(version: str) -> list[float]:
            points = http.get(
                f"/runs/{RUN}/metrics", params={"name": f"code/{version}/reward/mean"}
            ).json()
            return [p["value"] for p in points]

        watcher = watched.start().process
        old_restarted = restarted.start().process
        old_w = wait_for(lambda: code_of(watcher.pid), timeout=WAIT_S, every=0.2)
        old_r = wait_for(lambda: code_of(old_restarted.pid), timeout=WAIT_S, every=0.2)
        wait_for(lambda: trained(old_w["code_version"]), timeout=WAIT_S, every=0.2)
        wait_for(lambda: trained(old_r["code_version"]), timeout=WAIT_S, every=0.2)
        step_at_edit = step()

        _edit(watched_file, WATCHED)  # the watching process restarts by itself
        _edit(restarted_file, RESTARTED)
        restarted.kill_one(random.Random(0))  # the user's Ctrl-\ …
        new_restarted = restarted.start().process  # … and `swarm run` again

        new_w = wait_for(
            lambda: (
                (c := code_of(watcher.pid)) and c["code_version"] != old_w["code_version"] and c
            ),
            timeout=WAIT_S,
            every=0.2,
        )
        new_r = wait_for(lambda: code_of(new_restarted.pid), timeout=WAIT_S, every=0.2)
        wait_for(lambda: trained(new_w["code_version"]), timeout=WAIT_S, every=0.2)
        wait_for(lambda: trained(new_r["code_version"]), timeout=WAIT_S, every=0.2)
        step_after = step()

        engine = make_engine(gw.database_url)
        old_ids = {old_w["client_id"], old_r["client_id"]}

        def old_open() -> list[EpisodeRow]:
            with Session(engine) as session:
                query = select(EpisodeRow).where(
                    EpisodeRow.client_id.in_(old_ids), EpisodeRow.status == "open"
                )
                return session.exec(query).all()

        def statuses() -> dict[str, str]:
            listed = http.get("/swarm/clients", params={"include_gone": True}).json()
            return {c["client_id"]: c["status"] for c in listed}

        # the watched client left at once; the killed one once its lease lapsed
        wait_for(
            lambda: {statuses()[i] for i in old_ids} == {"gone"} and not old_open(),
            timeout=LEASE_S + WAIT_S,
            every=0.2,
        )
        gone = statuses()
        metrics = {
            (name, version): trained(version)
            for name, version in [
                ("watched before", old_w["code_version"]),
                ("watched after", new_w["code_version"]),
                ("restarted before", old_r["code_version"]),
                ("restarted after", new_r["code_version"]),
            ]
        }
        assert watcher.poll() is None  # --watch restarted the code, not the process
        with Session(engine) as session:
            versions = {c.id: c.code_version for c in session.exec(select(ClientRow)).all()}
            episodes = session.exec(select(EpisodeRow).where(EpisodeRow.run == RUN)).all()
        watched.stop_all()
        restarted.stop_all()
    finally:
        watched.stop_all()
        restarted.stop_all()
        http.close()
        gw.stop()

    rewards_by_version: dict[str, set[float]] = {}
    for episode in episodes:
        if episode.status == "finished":
            rewards_by_version.setdefault(versions[episode.client_id], set()).add(episode.reward)
    aborted_by_edit = [e for e in episodes if e.client_id in old_ids and e.status == "aborted"]
    print(
        f"\nlive edit: steps {step_at_edit} -> {step_after}; "
        + "; ".join(
            f"{name} (code {version}): {len(values)} steps, reward/mean {set(values)}"
            for (name, version), values in metrics.items()
        )
        + f"; {len(aborted_by_edit)} open episodes of the old clients aborted: "
        + f"{sorted({e.abort_reason for e in aborted_by_edit})}"
    )

    assert len({old_w["code_version"], new_w["code_version"], old_r["code_version"]}) == 3
    assert new_r["code_version"] not in {old_w["code_version"], new_w["code_version"]}
    assert new_r["code_version"] != old_r["code_version"]
    assert gone[old_w["client_id"]] == gone[old_r["client_id"]] == "gone"
    assert gone[new_w["client_id"]] == gone[new_r["client_id"]] == "active"
    # each code version's steps and episodes carry that version's reward, and only it
    expected = {
        ("watched before", old_w["code_version"]): WATCHED[0],
        ("watched after", new_w["code_version"]): WATCHED[1],
        ("restarted before", old_r["code_version"]): RESTARTED[0],
        ("restarted after", new_r["code_version"]): RESTARTED[1],
    }
    for (name, version), reward in expected.items():
        assert metrics[(name, version)] and set(metrics[(name, version)]) == {reward}, name
        assert rewards_by_version[version] == {reward}, name
    assert step_after > step_at_edit  # training kept going through the edits
    # aborted by the reloading runner, by its deregistration (an episode opened meanwhile),
    # or when the killed client's lease lapsed
    reasons = ("workflow changed", "client deleted", "client lease lapsed")
    for episode in aborted_by_edit:
        assert episode.abort_reason.startswith(reasons), episode.abort_reason


def _workflow(directory: Path, reward: float) -> Path:
    directory.mkdir()
    path = directory / "workflow.py"
    shutil.copy(WORKFLOW, path)
    _edit(path, (0.25, reward))
    return path


def _edit(path: Path, rewards: tuple[float, float]) -> None:
    """Change the workflow's `REWARD = old` line to `REWARD = new`."""
    old, new = rewards
    text = path.read_text()
    assert f"REWARD = {old}\n" in text
    path.write_text(text.replace(f"REWARD = {old}\n", f"REWARD = {new}\n"))
