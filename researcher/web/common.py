"""What the UI's routes share: rendering a page, database reads that 404, form parsing, a
study's gateway, and recording an intervention (an InterventionRow and an event, so it
shows in the timeline). Imported by the routes and `researcher.web.app`; imports neither."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.engine import Engine

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.studies import ExperimentRow, InterventionRow, StudyRow
from researcher.settings import read_gateway_key

ACTOR = "human:ui"


def html(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
    """The template `name` rendered with the app's Jinja2 environment (set by `make_app`)."""
    return request.app.state.templates.TemplateResponse(request, name, context, status_code=status)


def engine_of(request: Request) -> Engine:
    return request.app.state.engine


def study_or_404(request: Request, study_id: str) -> StudyRow:
    with session_scope(engine_of(request)) as session:
        study = crud.get_study(session, study_id=study_id)
    if study is None:
        raise HTTPException(404, f"no study {study_id!r}")
    return study


def experiment_or_404(request: Request, experiment_id: str) -> tuple[ExperimentRow, StudyRow]:
    with session_scope(engine_of(request)) as session:
        row = crud.get_experiment(session, experiment_id=experiment_id)
        study = crud.get_study(session, study_id=row.study_id) if row else None
    if row is None or study is None:
        raise HTTPException(404, f"no run {experiment_id!r}")
    return row, study


def run_name(row: ExperimentRow) -> str:
    return row.run_name or row.id


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form body as {field: last value} (no python-multipart needed)."""
    body = (await request.body()).decode("utf-8", errors="replace")
    return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}


def gateway_of(request: Request, study: StudyRow):
    """A GatewayAPI-like client for the study's gateway, or None when it has none yet.
    The admin key is its embedded gateway's (kept under $SWARMRL_HOME/secrets), else the
    one an older study saved in settings.json, else $SWARMRL_API_KEY (a --gateway's key)."""
    if not study.gateway_url:
        return None
    api_key = read_gateway_key(study.id)
    settings = Path(study.directory) / "settings.json"
    if api_key is None and settings.exists():
        try:
            api_key = json.loads(settings.read_text()).get("api_key")
        except (OSError, ValueError):
            api_key = None
    api_key = api_key or os.environ.get("SWARMRL_API_KEY") or None
    factory = request.app.state.gateway_factory
    return factory(study.gateway_url, api_key=api_key) if api_key else factory(study.gateway_url)


def close(gateway: Any) -> None:
    if gateway is not None and hasattr(gateway, "close"):
        gateway.close()


def record_intervention(
    engine: Engine,
    study: StudyRow,
    kind: str,
    payload: dict[str, Any],
    *,
    message: str,
    status: str = "pending",
    result: str | None = None,
    experiment_id: str | None = None,
    reason: str | None = None,
) -> InterventionRow:
    """A human intervention from the UI and its timeline event; `status` other than
    pending settles it at once (the UI applied it itself)."""
    with session_scope(engine) as session:
        item = crud.add_intervention(session, study_id=study.id, kind=kind, payload=payload,
                                     actor=ACTOR, experiment_id=experiment_id, reason=reason)  # fmt: skip
        if status != "pending":
            item = crud.mark_intervention(session, intervention_id=item.id, status=status,
                                          result=result)  # fmt: skip
        current = crud.get_study(session, study_id=study.id)
        crud.add_event(session, study_id=study.id, phase=current.phase if current else study.phase,
                       kind="intervention", message=message, reason=ACTOR,
                       data={"intervention": item.id, "kind": kind, "status": item.status})  # fmt: skip
    return item
