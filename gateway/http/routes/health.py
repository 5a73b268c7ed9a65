"""`GET /healthz`: liveness plus what is served and at which weights version;
`GET /capacity`: how many runs to train here at once (gateway/http/capacity.py). Both open."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter
from pydantic import BaseModel

from gateway.http.capacity import Capacity, capacity
from gateway.http.routes.deps import State

router = APIRouter(tags=["health"])


@cache
def _package_version() -> str:
    try:
        return version("swarmrl")
    except PackageNotFoundError:
        return "0+unknown"


class Health(BaseModel):
    status: str
    models: list[str]
    version: str  # the swarmrl release
    policy_versions: dict[str, int]  # weights version per served model


@router.get("/healthz", response_model=Health)
async def healthz(state: State) -> Health:
    return Health(
        status="ok",
        models=state.models.names(),
        version=_package_version(),
        policy_versions=state.models.policy_versions(),
    )


@router.get("/capacity", response_model=Capacity)
async def get_capacity(state: State) -> Capacity:
    active = sum(1 for run in state.runs.runs() if not run.is_terminal)
    return capacity(
        state.settings, active_runs=active, served_models=len(state.models.base_names())
    )
