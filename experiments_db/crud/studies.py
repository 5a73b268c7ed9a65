"""Studies and what they are made of: hypotheses, experiments, client processes, metric
snapshots, interventions, events and reports.

Callers own the session (and so the transaction). Functions that change a row return it;
a row that must exist and does not raises a `StudyRecordNotFound` subclass (a
`LookupError`), and a status outside its table's vocabulary raises `ValueError`. Inserts
look up first and then add, so they behave the same on SQLite and PostgreSQL; they assume
one writer per study (the researcher process that drives it).
"""

from __future__ import annotations

import time
from typing import Any

from sqlmodel import Session, SQLModel, col, select

from experiments_db.studies import (
    EXPERIMENT_STATUSES,
    HYPOTHESIS_STATUSES,
    INTERVENTION_STATUSES,
    STUDY_STATUSES,
    ClientProcessRow,
    EventRow,
    ExperimentRow,
    HypothesisRow,
    InterventionRow,
    MetricSnapshotRow,
    ReportRow,
    StudyRow,
)


class StudyRecordNotFound(LookupError):
    """A study-side row that must exist does not."""


class StudyNotFound(StudyRecordNotFound):
    pass


class ExperimentNotFound(StudyRecordNotFound):
    pass


class ClientProcessNotFound(StudyRecordNotFound):
    pass


class InterventionNotFound(StudyRecordNotFound):
    pass


def _check_status(status: str | None, allowed: tuple[str, ...], what: str) -> None:
    if status is not None and status not in allowed:
        raise ValueError(f"{what} status {status!r} is not one of {', '.join(allowed)}")


def _set_fields(row: SQLModel, fields: dict[str, Any]) -> None:
    unknown = set(fields) - set(type(row).model_fields)
    if unknown:
        raise TypeError(f"{type(row).__name__} has no field(s) {', '.join(sorted(unknown))}")
    for name, value in fields.items():
        setattr(row, name, value)


def _require_study(session: Session, study_id: str) -> StudyRow:
    study = session.get(StudyRow, study_id)
    if study is None:
        raise StudyNotFound(f"no study {study_id!r}")
    return study


def _require_experiment(session: Session, experiment_id: str) -> ExperimentRow:
    experiment = session.get(ExperimentRow, experiment_id)
    if experiment is None:
        raise ExperimentNotFound(f"no experiment {experiment_id!r}")
    return experiment


# studies


def create_study(session: Session, *, study: StudyRow) -> StudyRow:
    _check_status(study.status, STUDY_STATUSES, "study")
    session.add(study)
    session.flush()
    return study


def get_study(session: Session, *, study_id: str) -> StudyRow | None:
    return session.get(StudyRow, study_id)


def list_studies(session: Session) -> list[StudyRow]:
    """All studies, newest first."""
    query = select(StudyRow).order_by(col(StudyRow.created_at).desc(), col(StudyRow.id).desc())
    return list(session.exec(query).all())


def update_study(session: Session, *, study_id: str, **fields: Any) -> StudyRow:
    """Set columns of a study (status, phase, budget_used_s, ...); `updated_at` is now
    unless given."""
    study = _require_study(session, study_id)
    _check_status(fields.get("status"), STUDY_STATUSES, "study")
    _set_fields(study, {"updated_at": time.time()} | fields)
    session.add(study)
    session.flush()
    return study


# events


def add_event(
    session: Session,
    *,
    study_id: str,
    phase: str,
    kind: str,
    message: str,
    reason: str | None = None,
    data: dict[str, Any] | None = None,
) -> EventRow:
    _require_study(session, study_id)
    event = EventRow(
        study_id=study_id,
        at=time.time(),
        phase=phase,
        kind=kind,
        message=message,
        reason=reason,
        data=data,
    )
    session.add(event)
    session.flush()
    return event


def events(
    session: Session, *, study_id: str, since_id: int = 0, limit: int | None = None
) -> list[EventRow]:
    """A study's events with `id > since_id`, oldest first (at most `limit`)."""
    query = (
        select(EventRow)
        .where(EventRow.study_id == study_id, col(EventRow.id) > since_id)
        .order_by(col(EventRow.id))
    )
    if limit is not None:
        query = query.limit(limit)
    return list(session.exec(query).all())


# hypotheses


def upsert_hypothesis(session: Session, *, study_id: str, key: str, **fields: Any) -> HypothesisRow:
    """Insert the study's hypothesis `key`, or set `fields` on it when it exists. A new one
    needs statement, prediction and refuted_if (pydantic's ValidationError otherwise)."""
    _check_status(fields.get("status"), HYPOTHESIS_STATUSES, "hypothesis")
    query = select(HypothesisRow).where(
        HypothesisRow.study_id == study_id, HypothesisRow.key == key
    )
    hypothesis = session.exec(query).first()
    if hypothesis is None:
        _require_study(session, study_id)
        values = {"created_at": time.time()} | fields | {"study_id": study_id, "key": key}
        hypothesis = HypothesisRow.model_validate(values)
    else:
        _set_fields(hypothesis, fields)
    session.add(hypothesis)
    session.flush()
    return hypothesis


def hypotheses(session: Session, *, study_id: str) -> list[HypothesisRow]:
    query = (
        select(HypothesisRow)
        .where(HypothesisRow.study_id == study_id)
        .order_by(col(HypothesisRow.id))
    )
    return list(session.exec(query).all())


# experiments


def upsert_experiment(session: Session, *, experiment: ExperimentRow) -> ExperimentRow:
    """Insert `experiment`, or copy the fields it was built with onto the row with its id
    (keeping that row's `created_at`; `updated_at` becomes now unless given)."""
    _check_status(experiment.status, EXPERIMENT_STATUSES, "experiment")
    existing = session.get(ExperimentRow, experiment.id)
    if existing is None:
        _require_study(session, experiment.study_id)
        session.add(experiment)
        session.flush()
        return experiment
    if existing.study_id != experiment.study_id:
        raise ValueError(
            f"experiment {experiment.id!r} belongs to study {existing.study_id!r}, "
            f"not {experiment.study_id!r}"
        )
    if existing is not experiment:
        fields = experiment.model_dump(exclude_unset=True, exclude={"id", "created_at"})
        if "updated_at" not in fields:
            fields["updated_at"] = time.time()
        _set_fields(existing, fields)
    session.add(existing)
    session.flush()
    return existing


def get_experiment(session: Session, *, experiment_id: str) -> ExperimentRow | None:
    return session.get(ExperimentRow, experiment_id)


def experiments(session: Session, *, study_id: str) -> list[ExperimentRow]:
    """A study's experiments in the order they were planned."""
    query = (
        select(ExperimentRow)
        .where(ExperimentRow.study_id == study_id)
        .order_by(col(ExperimentRow.created_at), col(ExperimentRow.id))
    )
    return list(session.exec(query).all())


def update_experiment(session: Session, *, experiment_id: str, **fields: Any) -> ExperimentRow:
    """Set columns of an experiment; `updated_at` is now unless given."""
    experiment = _require_experiment(session, experiment_id)
    _check_status(fields.get("status"), EXPERIMENT_STATUSES, "experiment")
    _set_fields(experiment, {"updated_at": time.time()} | fields)
    session.add(experiment)
    session.flush()
    return experiment


# client processes


def record_client_process(
    session: Session, *, process: ClientProcessRow
) -> tuple[ClientProcessRow, bool]:
    """Record a launch; when (experiment_id, attempt) is already recorded, return that row
    and False instead (so a resumed researcher never launches an attempt twice)."""
    query = select(ClientProcessRow).where(
        ClientProcessRow.experiment_id == process.experiment_id,
        ClientProcessRow.attempt == process.attempt,
    )
    existing = session.exec(query).first()
    if existing is not None:
        return existing, False
    _require_experiment(session, process.experiment_id)
    session.add(process)
    session.flush()
    return process, True


def client_processes(
    session: Session, *, study_id: str | None = None, experiment_id: str | None = None
) -> list[ClientProcessRow]:
    """Recorded launches, oldest first, of one study and/or one experiment (all if neither)."""
    query = select(ClientProcessRow)
    if study_id is not None:
        query = query.join(ExperimentRow).where(ExperimentRow.study_id == study_id)
    if experiment_id is not None:
        query = query.where(ClientProcessRow.experiment_id == experiment_id)
    return list(session.exec(query.order_by(col(ClientProcessRow.id))).all())


def update_client_process(session: Session, *, process_id: int, **fields: Any) -> ClientProcessRow:
    process = session.get(ClientProcessRow, process_id)
    if process is None:
        raise ClientProcessNotFound(f"no client process {process_id}")
    _set_fields(process, fields)
    session.add(process)
    session.flush()
    return process


# metric snapshots


def add_metric_snapshots(
    session: Session,
    *,
    experiment_id: str,
    points: list[tuple[int, str, float]],
    at: float | None = None,
) -> int:
    """Add (step, name, value) points of an experiment, skipping those already recorded
    (and repeats within `points`); returns how many were added."""
    if not points:
        return 0
    _require_experiment(session, experiment_id)
    steps = sorted({step for step, _, _ in points})
    query = select(MetricSnapshotRow.step, MetricSnapshotRow.name).where(
        MetricSnapshotRow.experiment_id == experiment_id,
        col(MetricSnapshotRow.step).in_(steps),
    )
    seen = {(step, name) for step, name in session.exec(query).all()}
    at = time.time() if at is None else at
    added = 0
    for step, name, value in points:
        if (step, name) in seen:
            continue
        seen.add((step, name))
        session.add(
            MetricSnapshotRow(
                experiment_id=experiment_id, step=step, name=name, value=float(value), at=at
            )
        )
        added += 1
    session.flush()
    return added


def metric_snapshots(
    session: Session, *, experiment_id: str, name: str | None = None
) -> list[MetricSnapshotRow]:
    """An experiment's snapshots (of one metric when `name` is given), by step."""
    query = select(MetricSnapshotRow).where(MetricSnapshotRow.experiment_id == experiment_id)
    if name is not None:
        query = query.where(MetricSnapshotRow.name == name)
    query = query.order_by(col(MetricSnapshotRow.step), col(MetricSnapshotRow.id))
    return list(session.exec(query).all())


# interventions


def add_intervention(
    session: Session,
    *,
    study_id: str,
    kind: str,
    payload: dict[str, Any] | None = None,
    actor: str,
    reason: str | None = None,
    experiment_id: str | None = None,
) -> InterventionRow:
    """A pending intervention for the researcher to apply at its next chance."""
    _require_study(session, study_id)
    intervention = InterventionRow(
        study_id=study_id,
        experiment_id=experiment_id,
        kind=kind,
        payload=payload or {},
        actor=actor,
        reason=reason,
        status="pending",
        created_at=time.time(),
    )
    session.add(intervention)
    session.flush()
    return intervention


def interventions(
    session: Session,
    *,
    study_id: str,
    status: str | None = None,
    kinds: list[str] | tuple[str, ...] | None = None,
) -> list[InterventionRow]:
    """A study's interventions, oldest first, optionally of one status and some kinds."""
    query = select(InterventionRow).where(InterventionRow.study_id == study_id)
    if status is not None:
        query = query.where(InterventionRow.status == status)
    if kinds is not None:
        query = query.where(col(InterventionRow.kind).in_(list(kinds)))
    return list(session.exec(query.order_by(col(InterventionRow.id))).all())


def mark_intervention(
    session: Session, *, intervention_id: int, status: str, result: str | None = None
) -> InterventionRow:
    """Settle an intervention (applied | rejected | failed); `applied_at` becomes now."""
    _check_status(status, INTERVENTION_STATUSES, "intervention")
    intervention = session.get(InterventionRow, intervention_id)
    if intervention is None:
        raise InterventionNotFound(f"no intervention {intervention_id}")
    intervention.status, intervention.result = status, result
    intervention.applied_at = None if status == "pending" else time.time()
    session.add(intervention)
    session.flush()
    return intervention


# reports


def add_report(
    session: Session,
    *,
    study_id: str,
    markdown_path: str,
    html_path: str,
    conclusion: str,
    planner: str,
) -> ReportRow:
    _require_study(session, study_id)
    report = ReportRow(
        study_id=study_id,
        created_at=time.time(),
        markdown_path=markdown_path,
        html_path=html_path,
        conclusion=conclusion,
        planner=planner,
    )
    session.add(report)
    session.flush()
    return report


def latest_report(session: Session, *, study_id: str) -> ReportRow | None:
    query = (
        select(ReportRow)
        .where(ReportRow.study_id == study_id)
        .order_by(col(ReportRow.created_at).desc(), col(ReportRow.id).desc())
    )
    return session.exec(query).first()
