"""`make_app`: the web UI's FastAPI app — templates, token auth, error pages, routes.

Owns the app's dependencies (the study database engine, how to reach a study's gateway,
how to start a study) and the cross-cutting parts: a request naming a Host that is not
this server's is refused (421, DNS rebinding) and so is a form post from another site's
page (403; both `swarm.web_guards`), a token (when given) guards every request, unknown
ids get an HTML 404 page. The pages themselves are in `researcher.web.routes`, and what
they share (rendering a template, database reads that 404) in `researcher.web.common`:
the imports run app → routes → common, never back.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.engine import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from researcher.gateway_api import GatewayAPI
from researcher.settings import format_duration
from researcher.web import spawn
from researcher.web.routes import interventions, runs, studies
from swarm.web_guards import WebGuards

HERE = Path(__file__).parent
COOKIE = "swarmrl_ui_token"


class QuickGatewayAPI(GatewayAPI):
    """A page must not hang for 30 s on a gateway that is down: no retries, short timeout."""

    def __init__(self, url: str, *, api_key: str | None = None):
        super().__init__(url, api_key=api_key, timeout_s=5.0)

    def _send(self, method: str, path: str, **kwargs: Any):
        return self._http.request(method, path, **kwargs)


def _token_of(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.query_params.get("token") or request.cookies.get(COOKIE)


def _as_bytes(value: str) -> bytes:
    """A token as bytes to compare: a header arrives decoded as latin-1, a query or
    cookie as UTF-8; a non-ASCII one simply never matches (tokens are ASCII)."""
    return value.encode("utf-8", "surrogatepass")


def check_token(token: str) -> str:
    """`token` if it can guard the UI: printable ASCII, as headers and cookies carry it."""
    if not token or not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError(
            "the UI token must be printable ASCII without spaces (it travels in an "
            "Authorization header and a cookie)"
        )
    return token


def _refuse(status: int, code: str, message: str):
    return PlainTextResponse(f"{status}: {message}", status_code=status)


def make_app(
    engine: Engine,
    *,
    token: str | None = None,
    gateway_factory: Callable[..., Any] | None = None,
    bind_host: str = "127.0.0.1",
    allowed_hosts: Iterable[str] = (),
) -> FastAPI:
    """The UI on `engine`'s study database. `gateway_factory(url[, api_key=...])` returns a
    GatewayAPI-like object (tests pass a fake); with `token`, every request must carry it.
    Requests may name as Host loopback, `bind_host` and `allowed_hosts` (a proxy's name)."""
    if token is not None:
        check_token(token)
    app = FastAPI(title="swarmrl researcher", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters["duration"] = format_duration
    templates.env.filters["clock"] = _clock
    app.state.engine = engine
    app.state.templates = templates
    app.state.gateway_factory = gateway_factory or QuickGatewayAPI
    app.state.spawn_study = spawn.spawn_study  # tests replace it
    app.state.start_wait_s = 8.0  # how long a start waits for the new study's row
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def guard(request: Request, call_next):
        if token is not None:
            given = _token_of(request)
            if given is None or not secrets.compare_digest(_as_bytes(given), _as_bytes(token)):
                return PlainTextResponse(
                    "401: this UI needs its token: open it once with ?token=… "
                    "or send Authorization: Bearer …",
                    status_code=401,
                )
        response: Response = await call_next(request)
        if token is not None and request.query_params.get("token") == token:
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    # outermost: a foreign Host or another site's post is refused before the token check
    app.add_middleware(
        WebGuards, bind_host=bind_host, allowed_hosts=list(allowed_hosts), refuse=_refuse
    )

    @app.exception_handler(StarletteHTTPException)
    async def error_page(request: Request, error: StarletteHTTPException):
        return templates.TemplateResponse(
            request, "error.html", {"status": error.status_code, "message": error.detail},
            status_code=error.status_code,
        )  # fmt: skip

    app.include_router(studies.router)
    app.include_router(interventions.router)
    app.include_router(runs.router)
    return app


def _clock(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
