"""report: the study's Markdown + HTML report with figures, from the database and state.

`write_study_report` is also what `researcher report` and a failing study call, so a study
that stopped early still leaves a report of what it did. Per trained run it also reads what
its training episodes went through: the counts `monitor` kept in the experiment's config
(`episodes`; from the client's log for a study run before they were kept) and, from the
client's log, why episodes aborted (`failure_cause`, one line per cause with file:line) and
the mean reward the client last saw — the gateway may be gone by now.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ExperimentRow
from researcher.client_output import ClientLogFacts, read_client_log
from researcher.context import StudyContext
from researcher.disk import DELETED
from researcher.errors import ResearcherError
from researcher.gateway_api import GatewayUnavailable
from researcher.nodes.validate import dry_run_failures
from researcher.plan import Analysis, Decision, Design, Framing, RunResult
from researcher.report import write_report
from researcher.report.context import (
    HypothesisStatus,
    ReportContext,
    ReportEvent,
    ReportIntervention,
    ReproRun,
    RunEpisodes,
)
from researcher.settings import directory_size
from researcher.state import StudyState


def report_context(ctx: StudyContext, state: dict[str, Any]) -> ReportContext:
    study = ctx.study()
    with ctx.session() as session:
        hypotheses = crud.hypotheses(session, study_id=ctx.study_id)
        events = crud.events(session, study_id=ctx.study_id)
        interventions = crud.interventions(session, study_id=ctx.study_id)
        experiments = crud.experiments(session, study_id=ctx.study_id)
        logs = {
            row.id: [p.log_path for p in crud.client_processes(session, experiment_id=row.id)]
            for row in experiments
            if row.run_name
        }
    notes = list(state.get("notes", []))
    for item in interventions:
        text = str(item.payload.get("text", "")).strip() if item.kind == "note" else ""
        if text and text not in notes:
            notes.append(text)
    runs = []
    checkpoint = _checkpoint_finder(ctx)
    # runs whose weights were deleted; a row never launched has no run_name, so None must
    # not be in here (every event without the key would put it there)
    deleted = {
        e.data["deleted_weights"] for e in events if e.data and e.data.get("deleted_weights")
    }
    for row in experiments:
        if not row.workflow_path or not Path(row.workflow_path).exists():
            continue
        arm = row.config.get("arm", {})
        # an arm may train its own number of steps (a study of max_steps), as launch sends
        steps = arm.get("run", {}).get("max_steps") or row.config.get("steps")
        settings = {**arm.get("run", {}), "name": row.id, "seed": row.seed, "max_steps": steps}
        runs.append(ReproRun(arm=row.arm, seed=row.seed, run=row.id, settings=settings,
                             code_version=row.code_version, workflow_path=row.workflow_path,
                             workflow_code=Path(row.workflow_path).read_text(),
                             checkpoint=DELETED if row.run_name in deleted
                             else checkpoint(row.run_name),
                             status=row.status, steps_done=_last_step(row),
                             stop_reason=row.error))  # fmt: skip
    problems = [
        f"{e.phase}: {e.message}" + (f" ({e.reason})" if e.reason else "")
        for e in events
        if e.kind in ("problem", "error")
    ]
    return ReportContext(
        study_id=ctx.study_id,
        question=study.question,
        framing=Framing.model_validate(state["framing"]),
        planner=study.planner,
        hypotheses=[
            HypothesisStatus(
                key=h.key,
                statement=h.statement,
                prediction=h.prediction,
                refuted_if=h.refuted_if,
                parent=h.parent,
                status=h.status,
                evidence=h.evidence,
            )  # fmt: skip
            for h in hypotheses
        ],
        designs=[Design.model_validate(d) for d in state.get("designs", [])],
        results=[
            RunResult.model_validate(r) for round_ in state.get("results", []) for r in round_
        ],
        analyses=[Analysis.model_validate(a) for a in state.get("analyses", [])],
        decision=Decision.model_validate(state["decision"]) if state.get("decision") else None,
        events=[
            ReportEvent(at=e.at, phase=e.phase, kind=e.kind, message=e.message, reason=e.reason)
            for e in events
        ],  # fmt: skip
        interventions=[
            ReportIntervention(
                at=i.created_at,
                actor=i.actor,
                kind=i.kind,
                payload=i.payload or {},
                reason=i.reason,
                status=i.status,
            )  # fmt: skip
            for i in interventions
        ],
        notes=notes,
        runs=runs,
        problems=problems,
        episodes=[_run_episodes(row, logs[row.id]) for row in experiments if row.run_name],
        budget_s=study.budget_s,
        budget_used_s=study.budget_used_s,
        started_at=study.created_at,
        finished_at=time.time(),
        gateway_url=study.gateway_url,
        disk_used_bytes=directory_size(ctx.directory),
        disk_budget_bytes=ctx.settings.disk_budget_bytes,
        **_replayed(ctx),
    )


def _last_step(row: ExperimentRow) -> int | None:
    """The last training step the run logged, from its evaluated result's curve."""
    curve = RunResult.model_validate(row.result).curve if row.result else []
    return max((int(step) for step, _ in curve), default=None)


def _run_episodes(row: ExperimentRow, log_paths: list[str]) -> RunEpisodes:
    """What the run's training episodes went through; the counts `monitor` kept win over
    the logs' (which miss a client's last moments, and an unreadable log)."""
    facts = ClientLogFacts()
    for path in log_paths:
        try:
            read_client_log(Path(path).read_text(errors="replace"), facts)
        except OSError:  # a log on another host (ray), or removed: the counts still stand
            continue
    kept = row.config.get("episodes") or {}
    reward = facts.recent_reward
    return RunEpisodes(
        run=row.id, arm=row.arm, seed=row.seed, stop_reason=row.error,
        finished=int(kept.get("finished", facts.finished)),
        aborted=int(kept.get("aborted", facts.aborted)),
        causes=[(facts.examples[c], n) for c, n in facts.causes.most_common()],
        recent_reward=reward if reward is not None and math.isfinite(reward) else None,
        recent_n=facts.recent_n,
    )  # fmt: skip


def _checkpoint_finder(ctx: StudyContext):
    """name → the path of the run's newest checkpoint or export, as the gateway reports it;
    None when it has none, or once the gateway stopped answering (a report of a failed study
    must not wait on a dead gateway run after run)."""
    gone = False

    def newest(run: str | None) -> str | None:
        nonlocal gone
        finder = getattr(ctx.gateway, "checkpoints", None)
        if gone or not run or finder is None:
            return None
        try:
            points = finder(run)
        except GatewayUnavailable:
            gone = True
            return None
        except ResearcherError:  # no such run on this gateway (any more)
            return None
        return max(points, key=lambda p: p.get("step", 0))["path"] if points else None

    return newest


def _replayed(ctx: StudyContext) -> dict[str, Any]:
    """{replays, replays_report} for a study made by `researcher rerun` (its replay.json)."""
    from researcher.planner.replay import load_replay

    record = load_replay(ctx.directory)
    if record is None:
        return {}
    return {"replays": record.replays, "replays_report": record.replays_report}


def write_study_report(ctx: StudyContext, state: dict[str, Any], *, conclusion: str) -> Path:
    files = write_report(report_context(ctx, state), ctx.directory / "report")
    with ctx.session() as session:
        crud.add_report(
            session, study_id=ctx.study_id, markdown_path=str(files.markdown),
            html_path=str(files.html), conclusion=conclusion, planner=ctx.study().planner,
        )  # fmt: skip
    return files.html


def report(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("report")
    decision = state.get("decision") or {}
    conclusion = decision.get("conclusion") or {
        "rejected": "no conclusion: the design was rejected",
        "no valid workflow": f"no conclusion: {dry_run_failures(ctx)}",
    }.get(state.get("outcome", ""), "no conclusion")
    html = write_study_report(ctx, dict(state), conclusion=conclusion)
    ctx.tick(latest_finding=conclusion[:1000])
    ctx.event("report", "result", f"report written: {html}")
    return {}
