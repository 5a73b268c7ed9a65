"""The study side of the experiments database, migrated by Alembic: on a SQLite file and on
PostgreSQL (`db_url` in tests/postgres.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from experiments_db import crud, migrate
from experiments_db.db import make_engine, session_scope
from experiments_db.studies import ClientProcessRow, ExperimentRow, StudyRow


@pytest.fixture
def db(db_url):  # SQLite and PostgreSQL (tests/postgres.py)
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def a_study(study_id: str = "st-1", created_at: float = 1.0) -> StudyRow:
    return StudyRow(
        id=study_id,
        question="does multi-task mixing help?",
        status="running",
        phase="frame",
        planner="template",
        budget_s=1200.0,
        seeds=2,
        directory=f"/tmp/{study_id}",
        created_at=created_at,
        updated_at=created_at,
    )


def an_experiment(arm: str = "mixed", seed: int = 0, **fields) -> ExperimentRow:
    values = dict(
        id=f"st-1-{arm}-s{seed}",
        study_id="st-1",
        hypothesis_key="h1",
        arm=arm,
        role="treatment",
        seed=seed,
        config={"lr": 1e-5},
        status="planned",
        created_at=2.0,
        updated_at=2.0,
    )
    return ExperimentRow(**(values | fields))


def a_launch(experiment_id: str = "st-1-mixed-s0", attempt: int = 0, pid: int = 100):
    return ClientProcessRow(
        experiment_id=experiment_id,
        attempt=attempt,
        launcher="local",
        pid=pid,
        host="box",
        command=["swarm", "run", "workflow.py"],
        log_path="/tmp/client.log",
        started_at=3.0,
    )


@pytest.fixture
def study(db):
    with session_scope(db) as session:
        crud.create_study(session, study=a_study())
        crud.upsert_experiment(session, experiment=an_experiment())
    return db


def test_a_study_is_read_back_and_studies_are_listed_newest_first(db):
    with session_scope(db) as session:
        crud.create_study(session, study=a_study("st-old", created_at=1.0))
        crud.create_study(session, study=a_study("st-new", created_at=2.0))
    with session_scope(db) as session:
        assert crud.get_study(session, study_id="st-old").question == "does multi-task mixing help?"
        assert crud.get_study(session, study_id="st-none") is None
        assert [s.id for s in crud.list_studies(session)] == ["st-new", "st-old"]


def test_updating_a_study_sets_its_fields_and_its_updated_at(study):
    with session_scope(study) as session:
        row = crud.update_study(session, study_id="st-1", phase="design", budget_used_s=12.5)
        assert row.phase == "design" and row.updated_at > 1.0
    with session_scope(study) as session:
        row = crud.get_study(session, study_id="st-1")
        assert (row.phase, row.budget_used_s, row.ask) == ("design", 12.5, False)


def test_updating_a_missing_study_raises_study_not_found(db):
    with session_scope(db) as session, pytest.raises(crud.StudyNotFound, match="st-x"):
        crud.update_study(session, study_id="st-x", phase="design")


def test_a_status_or_field_that_does_not_exist_is_refused(study):
    with session_scope(study) as session:
        with pytest.raises(ValueError, match="sleeping"):
            crud.update_study(session, study_id="st-1", status="sleeping")
        with pytest.raises(TypeError, match="colour"):
            crud.update_study(session, study_id="st-1", colour="red")
        with pytest.raises(ValueError, match="done"):
            crud.update_experiment(session, experiment_id="st-1-mixed-s0", status="done")


def test_events_are_read_after_an_id_oldest_first_and_limited(study):
    with session_scope(study) as session:
        ids = [
            crud.add_event(session, study_id="st-1", phase="frame", kind="note", message=f"m{i}").id
            for i in range(4)
        ]
        crud.add_event(
            session,
            study_id="st-1",
            phase="decide",
            kind="decision",
            message="conclude",
            reason="h1 supported",
            data={"p": 0.01},
        )
    with session_scope(study) as session:
        after = crud.events(session, study_id="st-1", since_id=ids[1], limit=2)
        assert [e.message for e in after] == ["m2", "m3"]
        last = crud.events(session, study_id="st-1", since_id=ids[3])
        assert [(e.reason, e.data) for e in last] == [("h1 supported", {"p": 0.01})]


def test_an_event_for_a_missing_study_raises_study_not_found(db):
    with session_scope(db) as session, pytest.raises(crud.StudyNotFound):
        crud.add_event(session, study_id="st-x", phase="frame", kind="note", message="m")


def test_upserting_a_hypothesis_twice_changes_the_same_row(study):
    fields = dict(statement="mixing helps", prediction="higher accuracy", refuted_if="lower")
    with session_scope(study) as session:
        first = crud.upsert_hypothesis(session, study_id="st-1", key="h1", **fields)
        assert first.status == "open"
    with session_scope(study) as session:
        again = crud.upsert_hypothesis(
            session, study_id="st-1", key="h1", status="supported", evidence="+5%"
        )
        assert again.id == first.id
        rows = crud.hypotheses(session, study_id="st-1")
        assert [(h.key, h.statement, h.status, h.evidence) for h in rows] == [
            ("h1", "mixing helps", "supported", "+5%")
        ]


def test_a_new_hypothesis_without_a_prediction_is_refused(study):
    with session_scope(study) as session, pytest.raises(ValidationError, match="prediction"):
        crud.upsert_hypothesis(session, study_id="st-1", key="h2", statement="s", refuted_if="r")


def test_upserting_an_experiment_again_updates_it_and_keeps_when_it_was_planned(study):
    with session_scope(study) as session:
        row = crud.upsert_experiment(
            session,
            experiment=an_experiment(status="validated", created_at=9.0, workflow_path="w.py"),
        )
        assert (row.created_at, row.status, row.workflow_path) == (2.0, "validated", "w.py")
    with session_scope(study) as session:
        crud.update_experiment(session, experiment_id="st-1-mixed-s0", run_name="r-1")
        crud.upsert_experiment(session, experiment=an_experiment(arm="single"))
    with session_scope(study) as session:
        rows = crud.experiments(session, study_id="st-1")
        assert [(e.arm, e.run_name, e.attempt) for e in rows] == [
            ("mixed", "r-1", 0),
            ("single", None, 0),
        ]
        assert crud.get_experiment(session, experiment_id="st-1-none-s0") is None


def test_an_experiment_of_a_missing_or_other_study_or_id_is_refused(study):
    with session_scope(study) as session:
        with pytest.raises(crud.StudyNotFound):
            crud.upsert_experiment(
                session, experiment=an_experiment(id="st-x-a-s0", study_id="st-x")
            )
        with pytest.raises(ValueError, match="belongs to study 'st-1'"):
            crud.upsert_experiment(session, experiment=an_experiment(study_id="st-x"))
        with pytest.raises(crud.ExperimentNotFound):
            crud.update_experiment(session, experiment_id="st-1-none-s0", status="running")


def test_recording_the_same_launch_twice_returns_the_first_row(study):
    with session_scope(study) as session:
        first, created = crud.record_client_process(session, process=a_launch(pid=100))
        assert created and first.id is not None
    with session_scope(study) as session:
        again, created = crud.record_client_process(session, process=a_launch(pid=200))
        assert (created, again.id, again.pid) == (False, first.id, 100)
        retry, created = crud.record_client_process(session, process=a_launch(attempt=1))
        assert created and retry.id != first.id


def test_a_launch_of_a_missing_experiment_raises_experiment_not_found(study):
    with session_scope(study) as session, pytest.raises(crud.ExperimentNotFound):
        crud.record_client_process(session, process=a_launch(experiment_id="st-1-none-s0"))


def test_client_processes_are_listed_by_study_or_experiment_and_record_their_exit(study):
    with session_scope(study) as session:
        crud.create_study(session, study=a_study("st-2"))
        crud.upsert_experiment(session, experiment=an_experiment(id="st-2-a-s0", study_id="st-2"))
        crud.upsert_experiment(session, experiment=an_experiment(arm="single"))
        mixed, _ = crud.record_client_process(session, process=a_launch())
        crud.record_client_process(session, process=a_launch("st-1-single-s0"))
        crud.record_client_process(session, process=a_launch("st-2-a-s0"))
    with session_scope(study) as session:
        crud.update_client_process(session, process_id=mixed.id, exited_at=5.0, exit_status=1)
    with session_scope(study) as session:
        of_study = crud.client_processes(session, study_id="st-1")
        assert [p.experiment_id for p in of_study] == ["st-1-mixed-s0", "st-1-single-s0"]
        (only,) = crud.client_processes(session, experiment_id="st-1-mixed-s0")
        assert (only.exit_status, only.exited_at, only.command[0]) == (1, 5.0, "swarm")
        assert len(crud.client_processes(session)) == 3
        with pytest.raises(crud.ClientProcessNotFound):
            crud.update_client_process(session, process_id=999, exit_status=0)


def test_metric_snapshots_skip_points_already_recorded_and_read_by_step(study):
    experiment_id = "st-1-mixed-s0"
    with session_scope(study) as session:
        points = [(2, "reward", 0.5), (1, "reward", 0.2), (1, "loss", 3.0), (1, "reward", 9.9)]
        assert crud.add_metric_snapshots(session, experiment_id=experiment_id, points=points) == 3
    with session_scope(study) as session:
        more = [(2, "reward", 7.0), (3, "reward", 0.8)]
        added = crud.add_metric_snapshots(
            session, experiment_id=experiment_id, points=more, at=42.0
        )
        assert added == 1
    with session_scope(study) as session:
        rewards = crud.metric_snapshots(session, experiment_id=experiment_id, name="reward")
        assert [(m.step, m.value) for m in rewards] == [(1, 0.2), (2, 0.5), (3, 0.8)]
        assert rewards[-1].at == 42.0
        assert len(crud.metric_snapshots(session, experiment_id=experiment_id)) == 4


def test_interventions_start_pending_and_are_settled_and_filtered(study):
    with session_scope(study) as session:
        note = crud.add_intervention(
            session, study_id="st-1", kind="note", payload={"text": "try lr 1e-4"}, actor="human:ui"
        )
        pause = crud.add_intervention(session, study_id="st-1", kind="pause", actor="human:cli")
        assert (note.status, pause.payload, pause.applied_at) == ("pending", {}, None)
    with session_scope(study) as session:
        crud.mark_intervention(session, intervention_id=pause.id, status="applied", result="ok")
    with session_scope(study) as session:
        pending = crud.interventions(session, study_id="st-1", status="pending")
        assert [i.kind for i in pending] == ["note"]
        assert [i.kind for i in crud.interventions(session, study_id="st-1")] == ["note", "pause"]
        (applied,) = crud.interventions(session, study_id="st-1", kinds=["pause", "resume"])
        assert (applied.status, applied.result) == ("applied", "ok")
        assert applied.applied_at is not None
        with pytest.raises(crud.InterventionNotFound):
            crud.mark_intervention(session, intervention_id=999, status="applied")


def test_the_latest_report_is_the_newest_one(study):
    with session_scope(study) as session:
        assert crud.latest_report(session, study_id="st-1") is None
        for n in (1, 2):
            crud.add_report(
                session,
                study_id="st-1",
                markdown_path=f"report{n}.md",
                html_path=f"report{n}.html",
                conclusion=f"conclusion {n}",
                planner="template",
            )
    with session_scope(study) as session:
        assert crud.latest_report(session, study_id="st-1").markdown_path == "report2.md"
