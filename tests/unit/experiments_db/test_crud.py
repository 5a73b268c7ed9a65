"""The experiments database: tables, upgrades of older files, and the CRUD functions
(on SQLite and on PostgreSQL: `db_url` in tests/postgres.py)."""

from __future__ import annotations

import sqlite3
import time

import pytest
from sqlalchemy import event, inspect
from sqlalchemy.exc import IntegrityError, OperationalError

from experiments_db import crud
from experiments_db.db import (
    PG_CONNECT_TIMEOUT_S,
    make_engine,
    normalize_url,
    session_scope,
    sqlite_url,
)
from experiments_db.migrate import GATEWAY, upgrade_engine
from experiments_db.models import (
    CheckpointRow,
    EpisodeRow,
    MetricRow,
    PolicyRow,
    RunRow,
    SampleRow,
)


@pytest.fixture
def db(db_url):
    engine = make_engine(db_url)
    upgrade_engine(engine, GATEWAY)
    yield engine
    engine.dispose()


def a_run(name: str = "r") -> RunRow:
    return RunRow(id=name, settings={"lr": 1e-5}, status="running", created_at=1.0, updated_at=1.0)


def an_episode(episode_id: str, **fields) -> EpisodeRow:
    values = dict(api_key_sha256=episode_id, run="r", task_id="t", created_at=1.0) | fields
    return EpisodeRow(id=episode_id, **values)


def a_sample(episode_id: str, call_index: int = 0) -> SampleRow:
    return SampleRow(
        episode_id=episode_id,
        run="r",
        policy="p",
        call_index=call_index,
        prompt_token_ids=[1, 2],
        completion_token_ids=[3],
        behaviour_logprobs=[-0.5],
        version=0,
        reward=1.0,
        created_at=1.0,
    )


def test_postgresql_urls_use_psycopg_3_and_give_up_connecting_after_a_timeout():
    assert normalize_url("postgresql://u@h/d") == "postgresql+psycopg://u@h/d"
    assert normalize_url("postgres://u:p@h:5/d") == "postgresql+psycopg://u:p@h:5/d"
    assert normalize_url("postgresql+psycopg2://u@h/d") == "postgresql+psycopg2://u@h/d"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    engine = make_engine("postgresql://u@127.0.0.1:1/d")  # nothing connects until used
    assert engine.dialect.driver == "psycopg"
    seen = []
    event.listen(engine, "do_connect", lambda _d, _r, _a, kwargs: seen.append(kwargs))
    started = time.monotonic()
    with pytest.raises(OperationalError):  # nothing listens on port 1
        engine.connect()
    assert time.monotonic() - started < PG_CONNECT_TIMEOUT_S + 5
    assert seen[0]["connect_timeout"] == PG_CONNECT_TIMEOUT_S
    engine.dispose()


def test_an_older_database_gets_the_new_nullable_columns_and_the_missing_tables(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as old:  # the issue-2 episode table
        old.execute(
            "CREATE TABLE episode (id VARCHAR PRIMARY KEY, api_key_sha256 VARCHAR NOT NULL, "
            "run VARCHAR NOT NULL, task_id VARCHAR NOT NULL, task_family VARCHAR, "
            "group_id VARCHAR, client_id VARCHAR, status VARCHAR NOT NULL, created_at FLOAT NOT NULL)"
        )
        old.execute(
            "INSERT INTO episode VALUES ('ep-1', 'h', 'default', 't', NULL, NULL, NULL, 'open', 1.0)"
        )
    engine = make_engine(sqlite_url(path))
    upgrade_engine(engine, GATEWAY)
    columns = {c["name"] for c in inspect(engine).get_columns("episode")}
    assert {"reward", "metrics", "finished_at", "abort_reason", "step"} <= columns
    assert {"call", "run", "sample", "checkpoint"} <= set(inspect(engine).get_table_names())
    with session_scope(engine) as session:
        episode = crud.get_episode(session, episode_id="ep-1")
        assert (episode.status, episode.reward, episode.step) == ("open", None, None)
    upgrade_engine(engine, GATEWAY)  # idempotent


def test_run_counters_are_bumped_in_the_database(db):
    with session_scope(db) as session:
        crud.insert_run(
            session, run=a_run(), policies=[PolicyRow(run="r", name="p", base_model="m")]
        )
    with session_scope(db) as session:
        crud.bump_run_counters(session, run_id="r", episodes_finished=1, samples_buffered=3)
        crud.bump_run_counters(session, run_id="r", samples_buffered=-2, samples_trained=2)
        crud.bump_run_counters(session, run_id="nope", episodes_finished=1)  # skipped
    with session_scope(db) as session:
        run = crud.get_run(session, run_id="r")
        (policy,) = crud.list_policies(session, run_id="r")
    assert (run.episodes_finished, run.samples_buffered, run.samples_trained) == (1, 1, 2)
    assert policy.version == 0
    with pytest.raises(AssertionError):
        with session_scope(db) as session:
            crud.bump_run_counters(session, run_id="r", step=1)


def test_samples_move_from_buffered_to_trained_or_dropped(db):
    with session_scope(db) as session:
        crud.insert_episode(session, episode=an_episode("ep-1", status="finished"))
        crud.insert_samples(session, samples=[a_sample("ep-1", 0), a_sample("ep-1", 1)])
    with session_scope(db) as session:
        first, second = crud.list_samples(session, run_id="r", status="buffered")
        crud.mark_samples(session, sample_ids=[first.id], status="trained", step=3, reason=None)
        crud.mark_samples(session, sample_ids=[second.id], status="dropped", step=3, reason="stale")
        crud.mark_episodes_consumed(session, episode_ids=["ep-1"], step=3)
    with session_scope(db) as session:
        rows = crud.list_samples(session, episode_id="ep-1")
        assert crud.list_samples(session, run_id="r", status="buffered") == []
        assert crud.get_episode(session, episode_id="ep-1").step == 3
    assert [(r.status, r.step_trained, r.drop_reason) for r in rows] == [
        ("trained", 3, None),
        ("dropped", 3, "stale"),
    ]


def test_open_episodes_are_found_by_run_and_client(db):
    with session_scope(db) as session:
        crud.insert_episode(session, episode=an_episode("a", client_id="c1"))
        crud.insert_episode(session, episode=an_episode("b", client_id="c1", status="finished"))
        crud.insert_episode(session, episode=an_episode("c", client_id="c2", run="other"))
    with session_scope(db) as session:
        assert crud.list_open_episode_ids(session, client_id="c1") == ["a"]
        assert crud.list_open_episode_ids(session, run="other") == ["c"]
        assert crud.count_open_episodes_by_client(session) == {"c1": 1, "c2": 1}


def test_metrics_are_read_after_a_step_and_by_name(db):
    with session_scope(db) as session:
        crud.insert_metrics(
            session,
            metrics=[
                MetricRow(run="r", step=step, policy="p", name=name, value=step, time=0.0)
                for step in (1, 2, 3)
                for name in ("loss", "kl")
            ],
        )
    with session_scope(db) as session:
        assert [m.step for m in crud.list_metrics(session, run_id="r", since_step=2)] == [3, 3]
        losses = crud.list_metrics(session, run_id="r", since_step=None, name="loss")
        assert [m.value for m in losses] == [1.0, 2.0, 3.0]


def test_checkpoints_are_unique_per_step(db):
    with session_scope(db) as session:
        crud.insert_checkpoint(
            session, checkpoint=CheckpointRow(run="r", step=1, path="/a", created_at=0)
        )
    with session_scope(db) as session:
        assert crud.get_checkpoint(session, run_id="r", step=1).path == "/a"
        assert crud.get_checkpoint(session, run_id="r", step=2) is None
    with pytest.raises(IntegrityError):
        with session_scope(db) as session:
            crud.insert_checkpoint(
                session, checkpoint=CheckpointRow(run="r", step=1, path="/b", created_at=0)
            )
