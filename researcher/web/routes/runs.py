"""`/runs/{experiment_id}`: one experiment's run — metrics charts, client processes and
their logs, live settings (the gateway's `PATCH /runs/{id}`), stop, episodes with rewards
— and `/runs/{id}/episodes/{episode_id}`, the token-level trace viewer with the episode's
group as a prefix tree."""

from __future__ import annotations

import json
import math
from collections import deque
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.errors import ResearcherError
from researcher.gateway_api import GatewayRefused
from researcher.web.common import (
    close,
    engine_of,
    experiment_or_404,
    form_of,
    gateway_of,
    html,
    record_intervention,
    run_name,
)
from researcher.web.trace import group_trees, timeline_views

router = APIRouter(prefix="/runs/{experiment_id}")
LOG_LINES = 200
GROUP_MAX = 32  # group members whose traces are fetched for the tree
UNREACHABLE = "gateway unreachable"


def _episodes(request: Request, study, run: str) -> tuple[list[dict] | None, str | None]:
    gateway = gateway_of(request, study)
    if gateway is None:
        return None, f"{UNREACHABLE}: the study has no gateway yet"
    try:
        found = gateway._call("GET", f"/runs/{run}/episodes", params={"limit": 50})
        return list(found or []), None
    except ResearcherError as error:
        return None, f"{UNREACHABLE} ({error})"
    finally:
        close(gateway)


def _run_page(request: Request, experiment_id: str, *, errors: list[str] | None = None,
              form: dict | None = None, status: int = 200):  # fmt: skip
    row, study = experiment_or_404(request, experiment_id)
    with session_scope(engine_of(request)) as session:
        processes = crud.client_processes(session, experiment_id=experiment_id)
        names = sorted(
            {p.name for p in crud.metric_snapshots(session, experiment_id=experiment_id)}
        )
    episodes, episodes_error = _episodes(request, study, run_name(row))
    config = row.config or {}
    defaults = {"lr": config.get("lr", ""), "kl_coef": config.get("kl_coef", ""),
                "task_mix": json.dumps(config["task_mix"]) if config.get("task_mix") else ""}  # fmt: skip
    return html(request, "run.html", {
        "row": row, "study": study, "run": run_name(row), "processes": processes,
        "metric_names": names, "episodes": episodes, "episodes_error": episodes_error,
        "errors": errors or [], "form": defaults | (form or {}),
        "message": request.query_params.get("msg"),
    }, status)  # fmt: skip


@router.get("")
def run_page(request: Request, experiment_id: str):
    return _run_page(request, experiment_id)


@router.get("/metrics.json")
def metrics(request: Request, experiment_id: str):
    """{metric name: [[step, value], ...]} from the run's snapshots."""
    experiment_or_404(request, experiment_id)
    out: dict[str, list] = {}
    with session_scope(engine_of(request)) as session:
        for point in crud.metric_snapshots(session, experiment_id=experiment_id):
            if math.isfinite(point.value):
                out.setdefault(point.name, []).append([point.step, point.value])
    return JSONResponse(out)


@router.get("/logs/{attempt}")
def logs(request: Request, experiment_id: str, attempt: int):
    experiment_or_404(request, experiment_id)
    with session_scope(engine_of(request)) as session:
        processes = crud.client_processes(session, experiment_id=experiment_id)
    process = next((p for p in processes if p.attempt == attempt), None)
    if process is None:
        raise HTTPException(404, f"run {experiment_id} has no client attempt {attempt}")
    path = Path(process.log_path)
    if not path.is_file():
        return PlainTextResponse(f"(no log yet at {path})")
    with path.open(errors="replace") as handle:
        return PlainTextResponse("".join(deque(handle, maxlen=LOG_LINES)))


def parse_settings(form: dict[str, str]) -> tuple[dict, list[str]]:
    """The live-edit form → the PATCH body, and what is wrong with it (in words)."""
    fields: dict = {}
    errors: list[str] = []
    for name, low in (("lr", 0.0), ("kl_coef", 0.0)):
        text = form.get(name, "").strip()
        if not text:
            continue
        try:
            value = float(text)
            if not math.isfinite(value) or value < low or (name == "lr" and value == 0):
                raise ValueError
            fields[name] = value
        except ValueError:
            errors.append(
                f"{name} {text!r} is not a {'positive' if name == 'lr' else 'non-negative'} number"
            )
    text = form.get("task_mix", "").strip()
    if text:
        try:
            mix = json.loads(text)
            if (
                not isinstance(mix, dict)
                or not mix
                or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                    for v in mix.values()
                )
            ):
                raise ValueError
            fields["task_mix"] = mix
        except ValueError:
            errors.append(f"task_mix {text!r} is not a JSON object of family → weight, "
                          'e.g. {"arithmetic": 0.5, "calculator": 0.5}')  # fmt: skip
    if not fields and not errors:
        errors.append("nothing to change: give lr, kl_coef or task_mix")
    return fields, errors


@router.post("/settings")
async def edit_settings(request: Request, experiment_id: str):
    row, study = experiment_or_404(request, experiment_id)
    form = await form_of(request)
    fields, errors = parse_settings(form)
    if errors:
        return _run_page(request, experiment_id, errors=errors, form=form, status=422)
    run = run_name(row)
    gateway = gateway_of(request, study)
    try:
        if gateway is None:
            raise ResearcherError(f"{UNREACHABLE}: the study has no gateway yet")
        gateway.patch_run(run, fields)
    except ResearcherError as error:
        record_intervention(engine_of(request), study, "patch_run", {"run": run, "fields": fields},
                            status="failed", result=str(error), experiment_id=row.id,
                            message=f"edit of run {run} failed: {error}")  # fmt: skip
        status = 422 if isinstance(error, GatewayRefused) and error.status < 500 else 502
        return _run_page(request, experiment_id, errors=[str(error)], form=form, status=status)
    finally:
        close(gateway)
    record_intervention(engine_of(request), study, "patch_run", {"run": run, "fields": fields},
                        status="applied", result="applied by the gateway", experiment_id=row.id,
                        message=f"edited run {run}: {fields}")  # fmt: skip
    return RedirectResponse(
        f"/runs/{experiment_id}?msg={quote(f'run edited: {fields}')}", status_code=303
    )


@router.post("/stop")
def stop_run(request: Request, experiment_id: str):
    row, study = experiment_or_404(request, experiment_id)
    run = run_name(row)
    gateway = gateway_of(request, study)
    try:
        if gateway is None:
            raise ResearcherError(f"{UNREACHABLE}: the study has no gateway yet")
        gateway.stop_run(run)
    except ResearcherError as error:
        record_intervention(engine_of(request), study, "stop_run", {"run": run}, status="failed",
                            result=str(error), experiment_id=row.id,
                            message=f"stop of run {run} failed: {error}")  # fmt: skip
        return _run_page(request, experiment_id, errors=[str(error)], status=502)
    finally:
        close(gateway)
    record_intervention(engine_of(request), study, "stop_run", {"run": run}, status="applied",
                        result="stopped by the gateway", experiment_id=row.id,
                        message=f"stopped run {run}")  # fmt: skip
    return RedirectResponse(
        f"/runs/{experiment_id}?msg={quote(f'run {run} stopped')}", status_code=303
    )


def _group_members(gateway, trace: dict) -> tuple[list[dict], str | None]:
    """The traces of the other episodes of `trace`'s group (`GET /runs/{run}/episodes`
    filtered by `group_id`), or why there are none."""
    group = trace.get("group_id")
    if not group:
        return [], None
    try:
        listed = gateway._call("GET", f"/runs/{trace['run']}/episodes",
                               params={"group_id": group, "limit": 1000})  # fmt: skip
        others = [e["episode_id"] for e in listed or []
                  if e.get("group_id") == group and e["episode_id"] != trace["episode_id"]]  # fmt: skip
        members = []
        for other in others[:GROUP_MAX]:
            try:
                members.append(gateway._call("GET", f"/swarm/episodes/{quote(other, safe='')}"))
            except GatewayRefused as error:
                if error.status != 404:
                    raise
    except ResearcherError as error:
        return [], f"the episodes of group {group} could not be read ({error})"
    if not members:
        return [], f"no other episode of group {group}"
    if len(others) > GROUP_MAX:
        return members, f"the tree shows {GROUP_MAX} of the group's {len(others)} other episodes"
    return members, None


@router.get("/episodes/{episode_id}")
def episode(request: Request, experiment_id: str, episode_id: str):
    row, study = experiment_or_404(request, experiment_id)
    gateway = gateway_of(request, study)
    try:
        if gateway is None:
            raise ResearcherError(f"{UNREACHABLE}: the study has no gateway yet")
        trace = gateway._call("GET", f"/swarm/episodes/{quote(episode_id, safe='')}")
        members, group_note = _group_members(gateway, trace)
    except GatewayRefused as error:
        if error.status == 404:
            raise HTTPException(404, f"no episode {episode_id!r} on the gateway") from None
        raise HTTPException(502, f"{UNREACHABLE}: {error}") from None
    except ResearcherError as error:
        raise HTTPException(502, f"{UNREACHABLE}: {error}") from None
    finally:
        close(gateway)
    return html(request, "episode.html", {
        "row": row, "study": study, "trace": trace, "timelines": timeline_views(trace),
        "group_trees": group_trees(trace, members), "group_note": group_note,
    })  # fmt: skip
