"""`/` (every study, and the form that starts one) and `/studies/{id}` (hypotheses,
experiments, live curves, the events timeline, the report, the intervention forms)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from sqlmodel import col, select

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.studies import EventRow, StudyRow
from researcher.errors import ResearcherError
from researcher.plan import Reading
from researcher.planner import make_planner
from researcher.planner.wording import reading_rows
from researcher.settings import DEFAULT_MODEL, parse_budget
from researcher.user_workflow import client_env_allow
from researcher.web.common import engine_of, form_of, html, study_or_404
from researcher.web.spawn import start_command

router = APIRouter()
MODELS = (DEFAULT_MODEL, "tiny")
DECIDED = ("approve", "reject")


def _studies_page(request: Request, *, form: dict | None = None, errors: list[str] | None = None,
                  status: int = 200):  # fmt: skip
    with session_scope(engine_of(request)) as session:
        studies = crud.list_studies(session)
    defaults = {"question": "", "budget": "20m", "model": DEFAULT_MODEL, "seeds": "2", "ask": "",
                "workflow": "", "client_env": ""}  # fmt: skip
    return html(request, "studies.html", {
        "studies": studies, "form": defaults | (form or {}), "errors": errors or [],
        "models": MODELS, "message": request.query_params.get("msg"),
    }, status)  # fmt: skip


@router.get("/")
def studies_page(request: Request):
    return _studies_page(request)


def validate_start(form: dict[str, str]) -> tuple[list[str], dict]:
    """The start form's errors (in words) and, when none, the cleaned values."""
    errors: list[str] = []
    question = form.get("question", "").strip()
    model = form.get("model", "").strip() or DEFAULT_MODEL
    budget = form.get("budget", "").strip() or "20m"
    if not question.strip(" \t\n?!.,;:"):
        errors.append('the question is empty: ask something, e.g. "does multi-task mixing help?"')
    try:
        parse_budget(budget)
    except ResearcherError as error:
        errors.append(str(error))
    try:
        seeds = int(form.get("seeds", "2") or 2)
        if not 1 <= seeds <= 10:
            raise ValueError
    except ValueError:
        errors.append(f"seeds {form.get('seeds')!r} is not a whole number from 1 to 10")
        seeds = 2
    if model not in MODELS:
        errors.append(f"model {model!r} is not one of {', '.join(MODELS)}")
    # `--client-env NAME ...`: names set apart by commas or spaces, checked as the CLI does
    named = [name for name in re.split(r"[\s,]+", form.get("client_env", "")) if name]
    try:
        client_env = client_env_allow(named, given_as="extra environment variable")
    except ResearcherError as error:
        errors.append(str(error))
        client_env = []
    workflow = form.get("workflow", "").strip() or None
    frame_args: dict = {}
    if workflow is not None:
        workflow, frame_args, problem = _check_workflow(workflow, client_env)
        errors.extend(problem)
    if question and not errors:
        try:
            # read as `researcher start --workflow` will: the workflow's PARAMS may be the factor
            make_planner("template").frame(question, served_models=[model], model=model,
                                           **frame_args)  # fmt: skip
        except ResearcherError as error:
            errors.append(str(error))
    values = {"question": question, "budget": budget, "model": model, "seeds": seeds,
              "ask": form.get("ask") in ("on", "1", "true"), "workflow": workflow,
              "client_env": client_env}  # fmt: skip
    return errors, values


def _check_workflow(path: str, client_env: list[str]) -> tuple[str, dict, list[str]]:
    """The workflow file's path as the study will get it, what reading a question about it
    needs (`frame_args_of`), and what is wrong with it: it must be an absolute path on this
    machine (the UI's, where the study runs), import with the environment a client gets
    (plus `client_env`), and have a test split. Imported once."""
    from researcher.nodes.frame import frame_args_of
    from researcher.user_workflow import require_test_split

    if not Path(path).expanduser().is_absolute():
        return path, {}, [f"workflow {path!r}: give the file's absolute path on this machine"]
    try:
        found = require_test_split(path, client_env_allow=client_env)
    except ResearcherError as error:
        return path, {}, [str(error)]
    return str(found.path), frame_args_of(found), []


@router.post("/studies")
async def start_study(request: Request):
    form = await form_of(request)
    errors, values = validate_start(form)
    if errors:
        return _studies_page(request, form=form, errors=errors, status=422)
    engine = engine_of(request)
    with session_scope(engine) as session:
        before = set(session.exec(select(StudyRow.id)).all())
    command = start_command(values["question"], budget=values["budget"], model=values["model"],
                            seeds=values["seeds"], ask=values["ask"],
                            workflow=values["workflow"], client_env=values["client_env"])  # fmt: skip
    pid = request.app.state.spawn_study(
        command, db_url=engine.url.render_as_string(hide_password=False)
    )
    deadline = time.monotonic() + request.app.state.start_wait_s
    while True:
        with session_scope(engine) as session:
            query = select(StudyRow).where(StudyRow.question == values["question"],
                                           col(StudyRow.id).not_in(before))  # fmt: skip
            found = session.exec(query.order_by(col(StudyRow.created_at).desc())).first()
        if found is not None:
            return RedirectResponse(f"/studies/{found.id}", status_code=303)
        if time.monotonic() >= deadline:
            message = f"starting the study (researcher pid {pid}); it will appear here shortly"
            return RedirectResponse(f"/?msg={quote(message)}", status_code=303)
        await asyncio.sleep(0.2)


def waiting_for(events: list[EventRow], interventions) -> EventRow | None:
    """The "waiting" event the study is blocked on (an --ask approval), if it is."""
    waits = [e for e in events if e.kind == "waiting"]
    if not waits:
        return None
    last = waits[-1]
    if any(i.kind in DECIDED and i.created_at >= last.at for i in interventions):
        return None
    if any(e.id > last.id and e.phase == "approve" and e.kind == "decision" for e in events):
        return None
    return last


def reading_of(events: list[EventRow]) -> list[tuple[str, str]] | None:
    """The question as read (the frame event's reading) as table rows, newest framing."""
    for event in reversed(events):
        if (
            event.phase == "frame"
            and event.kind == "decision"
            and (event.data or {}).get("reading")
        ):
            return reading_rows(Reading.model_validate(event.data["reading"]))
    return None


def study_view(request: Request, study_id: str) -> dict:
    study = study_or_404(request, study_id)
    with session_scope(engine_of(request)) as session:
        hypotheses = crud.hypotheses(session, study_id=study_id)
        experiments = crud.experiments(session, study_id=study_id)
        last = {}
        for row in experiments:
            points = crud.metric_snapshots(session, experiment_id=row.id, name="reward/mean")
            last[row.id] = points[-1] if points else None
        events = crud.events(session, study_id=study_id)
        interventions = crud.interventions(session, study_id=study_id)
        report = crud.latest_report(session, study_id=study_id)
    waiting = waiting_for(events, interventions) if study.status in ("running", "paused") else None
    planned = [r for r in experiments if r.status == "planned"]
    reading = reading_of(events)
    return {
        "study": study, "hypotheses": hypotheses, "experiments": experiments, "last": last,
        "events": list(reversed(events)), "last_event_id": events[-1].id if events else 0,
        "interventions": list(reversed(interventions)), "report": report,
        "waiting": waiting, "planned": planned, "reading": reading, "errors": [],
        "message": None,
    }  # fmt: skip


@router.get("/studies/{study_id}")
def study_page(request: Request, study_id: str):
    view = study_view(request, study_id)
    view["message"] = request.query_params.get("msg")
    return html(request, "study.html", view)


@router.get("/studies/{study_id}/curves.json")
def curves(request: Request, study_id: str):
    """{arm: {seed: [[step, reward/mean], ...]}} from the metric snapshots."""
    study_or_404(request, study_id)
    out: dict[str, dict[str, list]] = {}
    with session_scope(engine_of(request)) as session:
        for row in crud.experiments(session, study_id=study_id):
            points = crud.metric_snapshots(session, experiment_id=row.id, name="reward/mean")
            series = out.setdefault(row.arm, {}).setdefault(str(row.seed), [])
            series.extend([p.step, p.value] for p in points)
    return JSONResponse(out)


@router.get("/studies/{study_id}/events.json")
def events_json(request: Request, study_id: str, since: int = 0):
    """Events with id > since, newest first, and the study's status and phase."""
    study = study_or_404(request, study_id)
    with session_scope(engine_of(request)) as session:
        rows = crud.events(session, study_id=study_id, since_id=since)
    return JSONResponse({
        "status": study.status, "phase": study.phase,
        "events": [{"id": e.id, "at": e.at, "phase": e.phase, "kind": e.kind,
                    "message": e.message, "reason": e.reason} for e in reversed(rows)],
    })  # fmt: skip


@router.get("/studies/{study_id}/report")
def report(request: Request, study_id: str):
    study_or_404(request, study_id)
    with session_scope(engine_of(request)) as session:
        found = crud.latest_report(session, study_id=study_id)
    if found is None or not Path(found.html_path).is_file():
        raise HTTPException(404, f"study {study_id} has no report yet")
    return FileResponse(found.html_path, media_type="text/html")
