"""The study's intervention forms: pause / resume, stop, add a note, approve / reject.

Each one is an InterventionRow by "human:ui" and an event in the timeline. Pause, resume
and stop take effect here (the study's status; `stop_study`); a note, approve and reject
stay pending until the researcher driving the study reads them (its next monitor pass, or
the `--ask` wait)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.web.common import (
    engine_of,
    form_of,
    html,
    record_intervention,
    study_or_404,
)
from researcher.web.routes.studies import study_view, waiting_for

router = APIRouter(prefix="/studies/{study_id}")
MAX_NOTE = 4000


def _back(study_id: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"/studies/{study_id}?msg={quote(message)}", status_code=303)


def _refuse(request: Request, study_id: str, message: str, status: int = 422):
    view = study_view(request, study_id)
    view["errors"] = [message]
    return html(request, "study.html", view, status)


def _set_status(request: Request, study_id: str, *, want: str, source: str, kind: str):
    study = study_or_404(request, study_id)
    if study.status != source:
        return _refuse(request, study_id, f"cannot {kind} a study that is {study.status} "
                       f"(only a {source} one)", 409)  # fmt: skip
    with session_scope(engine_of(request)) as session:
        crud.update_study(session, study_id=study_id, status=want)
    record_intervention(engine_of(request), study, kind, {}, status="applied",
                        result=f"status {want}", message=f"{kind} requested from the UI")  # fmt: skip
    return _back(study_id, f"study {want}")


@router.post("/pause")
def pause(request: Request, study_id: str):
    return _set_status(request, study_id, want="paused", source="running", kind="pause")


@router.post("/resume")
def resume(request: Request, study_id: str):
    return _set_status(request, study_id, want="running", source="paused", kind="resume")


@router.post("/stop")
def stop(request: Request, study_id: str):
    from researcher.study import stop_study

    study = study_or_404(request, study_id)
    if study.status in ("finished", "failed", "stopped"):
        return _refuse(request, study_id, f"the study is already {study.status}", 409)
    outcome = stop_study(engine_of(request), study_id)
    record_intervention(engine_of(request), study, "stop", {}, status="applied", result=outcome,
                        message="stop requested from the UI")  # fmt: skip
    return _back(study_id, outcome)


@router.post("/note")
async def note(request: Request, study_id: str):
    study = study_or_404(request, study_id)
    text = (await form_of(request)).get("text", "").strip()
    if not text:
        return _refuse(request, study_id, "the note is empty: write what the planner should know")
    if len(text) > MAX_NOTE:
        return _refuse(request, study_id, f"the note is {len(text)} characters; at most {MAX_NOTE}")
    record_intervention(engine_of(request), study, "note", {"text": text},
                        message=f"note added: {text[:200]}")  # fmt: skip
    return _back(study_id, "note added: the planner reads it at its next monitor pass")


async def _decide(request: Request, study_id: str, verdict: str):
    study = study_or_404(request, study_id)
    reason = (await form_of(request)).get("reason", "").strip() or None
    with session_scope(engine_of(request)) as session:
        events = crud.events(session, study_id=study_id)
        interventions = crud.interventions(session, study_id=study_id)
    if study.status not in ("running", "paused") or waiting_for(events, interventions) is None:
        return _refuse(
            request, study_id, f"the study is not waiting for approval: nothing to {verdict}", 409
        )
    record_intervention(engine_of(request), study, verdict, {}, reason=reason,
                        message=f"design {verdict}d from the UI")  # fmt: skip
    return _back(study_id, f"{verdict} sent: the study carries on within a second")


@router.post("/approve")
async def approve(request: Request, study_id: str):
    return await _decide(request, study_id, "approve")


@router.post("/reject")
async def reject(request: Request, study_id: str):
    return await _decide(request, study_id, "reject")
