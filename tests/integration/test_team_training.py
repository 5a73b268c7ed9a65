"""A multi-model team through the whole stack: `gateway serve` (tiny model) + `swarm run`
on the shipped two-policy workflow (`examples/team.py`: a planner and an executor) with a
run created with both policies. The run steps; each policy keeps its own weights version
and its own step metrics; every sample trains only the policy whose model its call named;
and the per-policy rewards the rollout returned are stored as given — in the gateway's
SQLite file and in PostgreSQL (`--database-url`): the module runs once on each."""

from __future__ import annotations

import statistics
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, select

from experiments_db.db import make_engine
from experiments_db.models import CallRow, EpisodeRow, SampleRow
from swarm.workflow import load_workflow
from tests.integration.conftest import shared_tiny
from tests.integration.test_training_stack import swarm_run

pytestmark = pytest.mark.slow
TEAM = Path(__file__).parents[2] / "examples" / "team.py"
POLICIES = {"planner", "executor"}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def tiny_gateway(request):
    """The session's shared tiny gateway on its SQLite file, then the shared one on
    PostgreSQL (`--database-url`): the module runs once on each (its run: "team")."""
    name = {"sqlite": "shared_tiny_gateway", "postgresql": "shared_tiny_pg_gateway"}
    return shared_tiny(request.getfixturevalue(name[request.param]))


@pytest.fixture(scope="module")
def trained_team(tiny_gateway):
    """The run "team" trained to its end by `swarm run examples/team.py`."""
    gw = tiny_gateway
    r = httpx.post(
        f"{gw.url}/runs",
        timeout=120,
        json={
            "name": "team",
            "policies": {"planner": {"base_model": "tiny"}, "executor": {"base_model": "tiny"}},
            "lr": 1e-3,
            "group_size": 2,
            "batch_groups": 1,
            "max_steps": 2,
            "max_staleness": 4,
            # a random model never solves arithmetic: keep equal-reward groups so steps train
            "zero_variance_groups": "keep",
        },
    )
    assert r.status_code == 201, r.text
    created = r.json()["policies"]
    assert {name: p["model"] for name, p in created.items()} == {
        "planner": "team/planner",
        "executor": "team/executor",
    }
    assert all(p["version"] == 0 for p in created.values())

    done = swarm_run(gw, "team", TEAM, "--concurrency", "2", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr  # exits once the run finishes
    return gw


def rows(gw, table, **where) -> list:
    """`table`'s rows in the gateway's database (`where`: column == value)."""
    engine = make_engine(gw.database_url)
    try:
        with Session(engine) as session:
            query = select(table)
            for column, value in where.items():
                query = query.where(getattr(table, column) == value)
            return list(session.exec(query).all())
    finally:
        engine.dispose()  # PostgreSQL: no pooled connection left on the module's database


def test_a_two_policy_run_trains_each_policy_to_its_own_new_version(trained_team):
    run = httpx.get(f"{trained_team.url}/runs/team").json()
    assert run["error"] is None and run["status"] == "finished", run
    assert run["step"] == 2 and set(run["policies"]) == POLICIES
    for name in POLICIES:
        assert run["policies"][name]["model"] == f"team/{name}"
        assert run["policies"][name]["version"] >= 2, run["policies"]
    assert run["samples_trained"] > 0


def test_every_step_has_metrics_for_each_policy(trained_team):
    metrics = httpx.get(f"{trained_team.url}/runs/team/metrics", params={"since": 0}).json()
    assert {m["policy"] for m in metrics} == POLICIES | {None}
    for policy in POLICIES:
        mine = [m for m in metrics if m["policy"] == policy]
        for name in ("loss", "reward/mean", "samples/trained"):
            assert {m["step"] for m in mine if m["name"] == name} == {1, 2}, (policy, name)
        assert all(m["value"] > 0 for m in mine if m["name"] == "samples/trained")


def test_each_sample_trains_only_the_policy_its_call_named(trained_team):
    gw = trained_team
    samples = rows(gw, SampleRow, run="team")
    assert {s.policy for s in samples} == POLICIES
    calls = {(c.episode_id, c.index): c for c in rows(gw, CallRow)}
    for sample in samples:
        assert calls[(sample.episode_id, sample.call_index)].model == f"team/{sample.policy}"
    trained = [s for s in samples if s.status == "trained"]
    assert {s.policy for s in trained} == POLICIES

    # the step metrics count exactly that policy's samples (the planner's never train the
    # executor, nor the other way round)
    metrics = httpx.get(f"{gw.url}/runs/team/metrics", params={"name": "samples/trained"}).json()
    for m in metrics:
        mine = [s for s in trained if s.policy == m["policy"] and s.step_trained == m["step"]]
        assert m["value"] == len(mine), (m, len(mine))


def test_per_policy_rewards_are_stored_as_the_rollout_returned_them(trained_team):
    gw = trained_team
    team = load_workflow(TEAM).module
    tasks = {str(task["id"]): task for task in team.tasks()}
    episodes = [e for e in rows(gw, EpisodeRow, run="team") if e.status == "finished"]
    assert len(episodes) >= 4  # 2 steps x 1 group x 2 episodes
    calls = {(c.episode_id, c.index): c for c in rows(gw, CallRow)}
    for episode in episodes:
        assert isinstance(episode.reward, dict) and set(episode.reward) == POLICIES
        plan, answer = calls[(episode.id, 0)], calls[(episode.id, 1)]
        assert (plan.model, answer.model) == ("team/planner", "team/executor")
        task = tasks[episode.task_id]
        assert episode.reward == team.rewards(plan.completion_text, answer.completion_text, task)
        for sample in rows(gw, SampleRow, episode_id=episode.id):
            assert sample.reward == episode.reward[sample.policy]

    # each policy's reward/mean is the mean of its own rewards over the step's episodes
    metrics = httpx.get(f"{gw.url}/runs/team/metrics", params={"name": "reward/mean"}).json()
    for m in (m for m in metrics if m["policy"] is not None):
        step_rewards = [e.reward[m["policy"]] for e in episodes if e.step == m["step"]]
        assert m["value"] == pytest.approx(statistics.fmean(step_rewards))
