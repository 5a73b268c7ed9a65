"""A gateway started on a database written by cf4dd29's code (before Alembic managed the
gateway's tables; the fixtures in tests/fixtures/ and the script that wrote them): the
database opens and is migrated, run "old" is restored as it was left (paused at step 0, no
checkpoint, two samples buffered, its open episode aborted), and once resumed the tiny model
trains a step from the old samples and new ones. On SQLite (the file copied into the state
dir) and on PostgreSQL (the old gateway's pg_dump loaded into a fresh database)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from experiments_db import crud, migrate
from experiments_db.db import session_scope
from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.unit.experiments_db.test_gateway_migrations import (
    OLD_POSTGRESQL,
    OLD_SQLITE,
    load_dump,
)
from tests.unit.gateway.conftest import bearer, eventually, finish, open_episode, run_state


@pytest.fixture(params=["sqlite", "postgresql"])
def old_settings(request: pytest.FixtureRequest, tmp_path) -> GatewaySettings:
    state_dir = tmp_path / "gateway"
    state_dir.mkdir()
    database_url = None
    if request.param == "sqlite":
        shutil.copyfile(OLD_SQLITE, state_dir / "gateway.sqlite")
    else:
        database_url = request.getfixturevalue("pg_database")
        load_dump(database_url, OLD_POSTGRESQL)
    return GatewaySettings(
        state_dir=state_dir, api_key=None, database_url=database_url, allowed_hosts=["testserver"]
    )


@pytest.fixture
def gateway(old_settings: GatewaySettings, tiny_factory) -> Iterator[TestClient]:
    """The gateway of today on the old database, serving the tiny model as its base model."""
    from trainer.config import EngineConfig, ModelConfig
    from trainer.engine import TorchEngine
    from trainer.model import load_model
    from trainer.tokenizer import HFChatTokenizer
    from trainer.types import ServedModel

    loaded = load_model(ModelConfig(name="tiny", dtype="float32"))
    tokenizer = HFChatTokenizer(loaded.tokenizer)
    engine = TorchEngine(loaded.model, tokenizer, EngineConfig(max_batch=8))
    served = ServedModel(name="tiny", tokenizer=tokenizer, engine=engine)
    recorder = EpisodeRecorder.from_settings(old_settings)
    app = make_app([served], recorder, old_settings, policy_factory=tiny_factory)
    try:
        with TestClient(app) as client:
            yield client
    finally:
        engine.shutdown()


@pytest.mark.slow
def test_a_run_of_a_database_written_by_cf4dd29_resumes_and_trains(gateway, old_settings):
    url = old_settings.resolved_database_url
    assert migrate.current(url, migrate.GATEWAY) == migrate.head(migrate.GATEWAY)
    state = run_state(gateway, "old")
    assert (state["status"], state["step"]) == ("paused", 0)
    assert (state["samples_buffered"], state["episodes_finished"]) == (2, 2)
    assert state["episodes_aborted"] == 1  # the episode cf4dd29's gateway left open

    assert gateway.post("/runs/old/resume").status_code == 200
    for reward in (0.0, 1.0):  # the second group of the batch; the first is the old one
        episode = open_episode(gateway, "old", group_id="g2")
        body = {"model": episode["model"], "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 6}  # fmt: skip
        reply = gateway.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
        assert reply.status_code == 200, reply.text
        assert finish(gateway, episode, reward=reward).status_code == 200
    eventually(lambda: run_state(gateway, "old")["step"] >= 1, 60)

    state = run_state(gateway, "old")
    assert (state["step"], state["samples_buffered"], state["samples_trained"]) == (1, 0, 4)
    assert state["policies"]["policy"]["version"] == 1
    with session_scope(gateway.app.state.gateway.recorder.db) as session:
        samples = crud.list_samples(session, run_id="old")
    assert [(s.status, s.step_trained) for s in samples] == [("trained", 1)] * 4
