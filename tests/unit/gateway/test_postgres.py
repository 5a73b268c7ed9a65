"""The gateway on PostgreSQL by URL: the same app, its database a fresh PostgreSQL database
(tests/postgres.py starts the server); and `gateway serve` with a URL that refuses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.postgres import _free_port
from tests.unit.gateway.conftest import chat_as, create_run, finish, open_episode
from tests.unit.gateway.test_episode_lifecycle import race_finishes_against_the_end_of_a_run


@pytest.fixture
def settings(tmp_path: Path, pg_database: str) -> GatewaySettings:
    url = pg_database.replace("postgresql+psycopg://", "postgresql://")  # as a user writes it
    return GatewaySettings(
        state_dir=tmp_path / "gateway", api_key=None, database_url=url, allowed_hosts=["testserver"]
    )


@pytest.mark.slow
def test_many_finishes_racing_the_end_of_a_run_each_land_or_get_a_409_on_postgresql(
    trainer_client,
):
    race_finishes_against_the_end_of_a_run(trainer_client)


def test_a_run_and_a_finished_episode_are_stored_in_postgresql(trainer_client, settings):
    assert trainer_client.app.state.gateway.recorder.db.dialect.name == "postgresql"
    create_run(trainer_client)
    episode = open_episode(trainer_client, group_id="g")
    chat_as(trainer_client, episode, content="one")
    chat_as(trainer_client, episode, content="two")
    result = finish(trainer_client, episode, reward=2.0)
    assert result.status_code == 200 and result.json()["samples"] == 2

    read = trainer_client.get(f"/swarm/episodes/{episode['episode_id']}").json()
    assert (read["status"], len(read["calls"])) == ("finished", 2)
    listed = trainer_client.get("/runs/r/episodes").json()
    assert [(e["episode_id"], e["reward"], e["group_id"]) for e in listed] == [
        (episode["episode_id"], 2.0, "g")
    ]

    fresh = EpisodeRecorder.from_settings(settings)  # a new engine on the same database
    assert fresh.get_episode(episode["episode_id"]).status == "finished"
    with session_scope(fresh.db) as session:
        samples = crud.list_samples(session, episode_id=episode["episode_id"])
        run = crud.get_run(session, run_id="r")
    assert [(s.call_index, s.reward, s.status) for s in samples] == [
        (0, 2.0, "buffered"),
        (1, 2.0, "buffered"),
    ]
    assert samples[0].prompt_token_ids == read["calls"][0]["prompt_token_ids"]
    assert (run.episodes_finished, run.samples_buffered) == (1, 2)
    fresh.db.dispose()


@pytest.mark.slow
def test_serve_with_a_postgresql_url_that_refuses_fails_in_one_line_before_loading(tmp_path):
    url = f"postgresql://swarm:secret@127.0.0.1:{_free_port()}/swarmrl"  # nothing listens
    env = os.environ | {"SWARMRL_HOME": str(tmp_path)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--model", "tiny", "--database-url", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert time.monotonic() - started < 45  # no connection retries (process start: ~5 s)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: cannot open the gateway database")
    assert "--database-url" in lines[0] and "secret" not in lines[0]
    assert "loaded" not in done.stderr + done.stdout
