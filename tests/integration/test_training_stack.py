"""The whole stack for real: `gateway serve` (tiny model) + `swarm run` subprocesses on a
shipped-style workflow; the run trains, the served weights change, metrics and
checkpoints exist, and every finished episode is in the database (the gateway's SQLite
file, and a PostgreSQL database through `--database-url`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch
from sqlmodel import Session, select

from tests.integration.conftest import shared_tiny, wait_for

pytestmark = pytest.mark.slow
WORKFLOWS = Path(__file__).parent / "workflows"


@pytest.fixture(scope="module")
def tiny_gateway(shared_tiny_gateway):
    return shared_tiny(shared_tiny_gateway)  # its run: "e2e"


@pytest.fixture(params=["sqlite", "postgresql"])
def e2e_gateway(request):
    """The module's tiny gateway (the session's shared one, on its SQLite file), or the
    session's shared tiny gateway on PostgreSQL (`--database-url`)."""
    if request.param == "sqlite":
        return request.getfixturevalue("tiny_gateway")
    return shared_tiny(request.getfixturevalue("shared_tiny_pg_gateway"))


def swarm_run(
    gw, run: str, workflow: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "swarm.cli",
            "run",
            str(workflow),
            "--gateway",
            gw.url,
            "--run",
            run,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_swarm_run_trains_a_run_end_to_end(e2e_gateway):
    gw = e2e_gateway
    r = httpx.post(
        f"{gw.url}/runs",
        timeout=120,
        json={
            "name": "e2e",
            "policies": {"policy": {"base_model": "tiny"}},
            "lr": 1e-3,
            "group_size": 2,
            "batch_groups": 2,
            "max_steps": 3,
            "checkpoint_every": 3,
            "max_staleness": 4,
            # a group of 2 ties on "length mod 7" about 1 time in 7; keep such groups (advantage
            # 0) so every step updates and the version counts the steps exactly
            "zero_variance_groups": "keep",
        },
    )
    assert r.status_code in (200, 201), r.text
    assert r.json()["policies"]["policy"]["model"] == "e2e/policy"
    assert "e2e/policy" in [m["id"] for m in httpx.get(f"{gw.v1}/models").json()["data"]]

    prompt = [{"role": "user", "content": "Count to 3."}]
    before = httpx.post(
        f"{gw.v1}/chat/completions",
        json={
            "model": "e2e/policy",
            "messages": prompt,
            "max_tokens": 4,
            "temperature": 0,
            "logprobs": True,
        },
    ).json()

    done = swarm_run(
        gw, "e2e", WORKFLOWS / "length_reward.py", "--max-episodes", "16", "--concurrency", "4"
    )
    assert done.returncode == 0, done.stdout + done.stderr

    # finished = the 3rd step recorded, then its final checkpoint saved (in a Ray actor that
    # save can outlast a poll, so wait for the status, not the step)
    run = wait_for(
        lambda: (info := httpx.get(f"{gw.url}/runs/e2e").json())["status"] != "running" and info
    )
    assert (run["status"], run["step"]) == ("finished", 3)
    assert run["policies"]["policy"]["version"] >= 3
    # 3 steps x 2 groups x 2 episodes; then the finished run answers 409 and swarm run stops
    assert run["episodes_finished"] >= 12 and run["samples_trained"] > 0

    metrics = httpx.get(f"{gw.url}/runs/e2e/metrics", params={"since": 0}).json()
    names = {m["name"] for m in metrics}
    assert {"reward/mean", "loss", "grad_norm"} <= names
    assert {m["step"] for m in metrics if m["name"] == "loss"} >= {1, 2, 3} - {0}

    after = httpx.post(
        f"{gw.v1}/chat/completions",
        json={
            "model": "e2e/policy",
            "messages": prompt,
            "max_tokens": 4,
            "temperature": 0,
            "logprobs": True,
        },
    ).json()
    lp = lambda resp: [t["logprob"] for t in resp["choices"][0]["logprobs"]["content"]]  # noqa: E731
    assert lp(before) != lp(after)  # the engine serves the new weights, no restart

    checkpoints = httpx.get(f"{gw.url}/runs/e2e/checkpoints").json()
    assert checkpoints, "checkpoint_every=3 must have saved one"
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(Path(checkpoints[-1]["path"]) / "policy")
    from trainer.config import ModelConfig
    from trainer.model import load_model

    base = load_model(ModelConfig(name="tiny", dtype="float32")).model
    assert not torch.equal(reloaded.lm_head.weight.float(), base.lm_head.weight)

    # every finished episode is in the database
    from experiments_db.db import make_engine
    from experiments_db.models import EpisodeRow

    engine = make_engine(gw.database_url)
    try:
        with Session(engine) as session:
            rows = session.exec(select(EpisodeRow).where(EpisodeRow.run == "e2e")).all()
    finally:
        engine.dispose()  # PostgreSQL: no pooled connection left open on the test database
    assert sum(row.status == "finished" for row in rows) == run["episodes_finished"]


def test_a_workflow_that_fails_to_import_exits_non_zero_with_the_error(tiny_gateway):
    started = time.monotonic()
    done = swarm_run(
        tiny_gateway, "e2e", WORKFLOWS / "broken_import.py", "--max-episodes", "1", timeout=60
    )
    assert done.returncode != 0
    assert "broken on purpose" in done.stdout + done.stderr
    assert time.monotonic() - started < 30


def test_the_real_smollm2_trains_for_two_steps_through_the_stack(smollm2_gateway):
    gw = smollm2_gateway
    r = httpx.post(
        f"{gw.url}/runs",
        timeout=300,
        json={
            "name": "smollm2-steps",
            "policies": {"policy": {"base_model": "smollm2-135m"}},
            "lr": 2e-5,
            "group_size": 4,
            "batch_groups": 1,
            "max_steps": 2,
            "max_staleness": 2,
        },
    )
    assert r.status_code == 201, r.text
    done = swarm_run(
        gw, "smollm2-steps", WORKFLOWS / "length_reward.py", "--concurrency", "4", timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr  # exits by itself once the run finishes
    run = httpx.get(f"{gw.url}/runs/smollm2-steps").json()
    assert run["status"] == "finished" and run["step"] == 2
    assert run["policies"]["policy"]["version"] >= 1 and run["samples_trained"] > 0
    losses = [
        m for m in httpx.get(f"{gw.url}/runs/smollm2-steps/metrics", params={"name": "loss"}).json()
    ]
    assert losses and all(m["value"] == m["value"] for m in losses)  # finite, not NaN
