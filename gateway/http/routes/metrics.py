"""`GET /metrics`: Prometheus text, open like `/healthz` (no key needed)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Response

from gateway.http.routes.deps import State
from gateway.http.telemetry import PROMETHEUS_CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response)
async def prometheus_metrics(state: State) -> Response:
    body = await anyio.to_thread.run_sync(state.telemetry.render)
    return Response(body, media_type=PROMETHEUS_CONTENT_TYPE)
