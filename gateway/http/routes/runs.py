"""Run control routes: create, list, read, edit, pause, resume, stop, checkpoints (save,
list, delete), metrics, episodes.

Thin: logic in `RunManager`. Two routers: `router` is admin-only (`ADMIN_ONLY`: with an
admin key configured, every route on it needs that key), and `run_readers` holds the one
route a client key of the run may also call, reading that run. A new run-control route
goes on `router`. `POST /runs/{id}/client-keys` hands out the run's client key (see
`gateway.http.auth`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Query

from gateway.http.auth import client_key_for, require_admin_or_run_client
from gateway.http.routes.deps import ADMIN_ONLY, State, Token
from swarm.protocol import (
    CheckpointCreate,
    CheckpointPublic,
    ClientKey,
    EpisodeStatus,
    EpisodeSummary,
    MetricPoint,
    RunCreate,
    RunPatch,
    RunPublic,
)

router = APIRouter(prefix="/runs", tags=["runs"], dependencies=ADMIN_ONLY)
run_readers = APIRouter(prefix="/runs", tags=["runs"])  # the admin or a client key of the run

# database integers are signed 64-bit: larger query ints are a 422, never a driver error
SQL_INT_MAX = 2**63 - 1
Step = Annotated[int, Path(ge=0, le=SQL_INT_MAX, description="The checkpoint's step.")]


@router.post("", response_model=RunPublic, status_code=201)
async def create_run(body: RunCreate, state: State) -> RunPublic:
    return await state.runs.create(body)


@router.get("", response_model=list[RunPublic])
async def list_runs(state: State) -> list[RunPublic]:
    return await state.runs.list_public()


@run_readers.get("/{run_id}", response_model=RunPublic)
async def get_run(run_id: str, state: State, token: Token) -> RunPublic:
    require_admin_or_run_client(token, run_id, state.settings)
    return await state.runs.public(run_id)


@router.post("/{run_id}/client-keys", response_model=ClientKey, status_code=201)
async def create_client_key(run_id: str, state: State) -> ClientKey:
    """A key for swarm clients of this run that cannot control runs (see docs/api.md)."""
    run = await state.runs.public(run_id)  # 404 for an unknown run
    return ClientKey(api_key=client_key_for(run.name, state.settings), run=run.name)


@router.patch("/{run_id}", response_model=RunPublic)
async def patch_run(run_id: str, body: RunPatch, state: State) -> RunPublic:
    return await state.runs.patch(run_id, body)


@router.post("/{run_id}/pause", response_model=RunPublic)
async def pause_run(run_id: str, state: State) -> RunPublic:
    return await state.runs.pause(run_id)


@router.post("/{run_id}/resume", response_model=RunPublic)
async def resume_run(run_id: str, state: State) -> RunPublic:
    return await state.runs.resume(run_id)


@router.post("/{run_id}/stop", response_model=RunPublic)
async def stop_run(run_id: str, state: State) -> RunPublic:
    return await state.runs.stop(run_id)


@router.post("/{run_id}/checkpoints", response_model=CheckpointPublic, status_code=201)
async def save_checkpoint(
    run_id: str, state: State, body: Annotated[CheckpointCreate | None, Body()] = None
) -> CheckpointPublic:
    """Every policy's weights now; with the optimizer state (resumable) unless the body
    says `{"optimizer": false}`."""
    options = body or CheckpointCreate()
    return await state.runs.checkpoint_by_name(run_id, optimizer=options.optimizer)


@router.get("/{run_id}/checkpoints", response_model=list[CheckpointPublic])
async def list_checkpoints(run_id: str, state: State) -> list[CheckpointPublic]:
    return await state.runs.checkpoints(run_id)


@router.delete("/{run_id}/checkpoints/{step}", status_code=204)
async def delete_checkpoint(run_id: str, step: Step, state: State) -> None:
    """Delete a checkpoint's files and row; an ended run served from it is served no more."""
    await state.runs.delete_checkpoint(run_id, step)


@router.get("/{run_id}/metrics", response_model=list[MetricPoint])
async def run_metrics(
    run_id: str,
    state: State,
    since: int | None = Query(
        None,
        ge=-SQL_INT_MAX,
        le=SQL_INT_MAX,
        description="Only steps after this one (step > since).",
    ),
    name: str | None = Query(
        None, max_length=400, description="Only this metric (e.g. reward/mean)."
    ),
) -> list[MetricPoint]:
    return await state.runs.metrics(run_id, since=since, metric=name)


@router.get("/{run_id}/episodes", response_model=list[EpisodeSummary])
async def run_episodes(
    run_id: str,
    state: State,
    status: Annotated[
        EpisodeStatus | None, Query(description="Only episodes in this status.")
    ] = None,
    limit: int = Query(50, ge=1, le=1000, description="At most this many episodes."),
    offset: int = Query(0, ge=0, le=SQL_INT_MAX, description="Skip this many (newest first)."),
    group_id: str | None = Query(
        None, max_length=200, description="Only the episodes of this group (a GRPO group)."
    ),
) -> list[EpisodeSummary]:
    return await state.runs.episodes(
        run_id, status=status, limit=limit, offset=offset, group_id=group_id
    )
