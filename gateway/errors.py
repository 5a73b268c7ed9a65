"""Gateway errors and their one mapping to OpenAI-shaped HTTP responses.

Owns: the `GatewayError` hierarchy (what went wrong, in the client's terms) and
`install_error_handlers`, the only place that turns exceptions into HTTP status codes.
Trainer errors (`trainer.errors`) are translated here too. Every error body is
`{"error": {"message", "type", "param", "code"}}`. Tracebacks are logged here and never
sent to the client.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trainer.errors import (
    ChatFormatError,
    EngineStopped,
    InvalidPrompt,
    ModelNotAvailable,
    PromptTooLong,
    TrainerError,
)

log = logging.getLogger(__name__)


class GatewayError(Exception):
    status: int = 500
    type: str = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code


class InvalidRequest(GatewayError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request_error"


class ContextLengthExceeded(InvalidRequest):
    code = "context_length_exceeded"


class Unauthorized(GatewayError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class Forbidden(GatewayError):
    """A valid key that may not do this (a client key reaching for another run)."""

    status = 403
    type = "permission_error"
    code = "forbidden"


class ModelNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "model_not_found"


class EpisodeNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "episode_not_found"


class RunNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "run_not_found"


class CheckpointNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "checkpoint_not_found"


class ClientNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "client_not_found"


class ClientSuperseded(ClientNotFound):
    """404 `client_superseded`: a newer client registered under this client's name, so the
    gateway treats this one as gone (a client that comes back under its name is a new one)."""

    code = "client_superseded"


class Conflict(GatewayError):
    """409: the request clashes with the current state of what it names (an episode already
    finished, a stopped run, a duplicate name)."""

    status = 409
    type = "invalid_request_error"
    code = "conflict"


class EpisodeNotOpen(Conflict):
    code = "episode_not_open"


class RunNotAccepting(Conflict):
    code = "run_not_accepting"


class Unprocessable(GatewayError):
    """422: a well-formed body whose values cannot be used (the swarm and run APIs)."""

    status = 422
    type = "invalid_request_error"
    code = "invalid_value"


class InsufficientStorage(GatewayError):
    """507: a checkpoint would not fit on the state directory's disk (nothing was written;
    the run is paused until disk space is freed and it is resumed)."""

    status = 507
    type = "server_error"
    code = "insufficient_storage"


class RateLimited(GatewayError):
    """429: come back in `retry_after` seconds (also sent as a `Retry-After` header).

    `type` "requests" with `code` "rate_limit_exceeded" is what OpenAI sends for a
    request-rate 429 (its token-rate ones say "tokens"); the openai SDK keys on the
    status (`RateLimitError`) and the `Retry-After` header, never on `type`."""

    status = 429
    type = "requests"
    code = "rate_limit_exceeded"

    def __init__(self, message: str, *, retry_after: float, code: str | None = None):
        super().__init__(message, code=code)
        self.retry_after = retry_after


class NotConfigured(GatewayError):
    """501: this gateway was started without what the endpoint needs."""

    status = 501
    type = "server_error"
    code = "not_implemented"


class PayloadTooLarge(GatewayError):
    status = 413
    type = "invalid_request_error"
    code = "payload_too_large"


class CrossSiteRequest(GatewayError):
    """A state-changing request sent by another site's page (Origin or Referer)."""

    status = 403
    type = "permission_error"


class MisdirectedRequest(GatewayError):
    """A `Host` that is not a name of this server (DNS rebinding)."""

    status = 421
    type = "invalid_request_error"


class UnsupportedMediaType(GatewayError):
    status = 415
    type = "invalid_request_error"


class ServiceUnavailable(GatewayError):
    status = 503
    type = "server_error"
    code = "service_unavailable"


class InternalError(GatewayError):
    status = 500
    type = "server_error"
    code = None


def from_trainer_error(error: TrainerError) -> GatewayError:
    """What a trainer error means to an API client (engine internals stay in the log)."""
    if isinstance(error, PromptTooLong):
        return ContextLengthExceeded(str(error), param="messages")
    if isinstance(error, ChatFormatError):
        return InvalidRequest(str(error), param="messages")
    if isinstance(error, InvalidPrompt):
        return InvalidRequest(str(error), param="prompt")
    if isinstance(error, EngineStopped):
        return ServiceUnavailable("The model is not serving right now; retry shortly.")
    if isinstance(error, ModelNotAvailable):
        return ModelNotFound(str(error), param="model")
    return InternalError("The server had an error while generating.")


def error_body(
    message: str, *, type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


def as_gateway_error(error: Exception) -> GatewayError:
    """Any exception as the error a client may see; unexpected ones are logged here."""
    if isinstance(error, GatewayError):
        return error
    if isinstance(error, TrainerError):
        translated = from_trainer_error(error)
        if translated.status >= 500:
            log.error("trainer error: %s: %s", type(error).__name__, error, exc_info=error)
        return translated
    log.error("unhandled error: %s", type(error).__name__, exc_info=error)
    return InternalError("The server had an error while processing your request.")


def stream_error_event(error: Exception) -> str:
    """The SSE `data` payload that ends a stream which failed after it started."""
    gateway_error = as_gateway_error(error)
    body = error_body(
        gateway_error.message,
        type=gateway_error.type,
        param=gateway_error.param,
        code=gateway_error.code,
    )
    return json.dumps(body)


def error_response(error: GatewayError) -> JSONResponse:
    body = error_body(error.message, type=error.type, param=error.param, code=error.code)
    headers = None
    if isinstance(error, RateLimited):
        body["error"]["retry_after"] = error.retry_after
        headers = {"Retry-After": _retry_after_header(error.retry_after)}
    return JSONResponse(body, status_code=error.status, headers=headers)


def internal_error_response() -> JSONResponse:
    body = error_body("The server had an error while processing your request.", type="server_error")
    return JSONResponse(body, status_code=500)


_HTTP_STATUS_CODES = {
    400: ("invalid_request_error", "bad_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    409: ("invalid_request_error", "conflict"),
    413: ("invalid_request_error", "payload_too_large"),
    422: ("invalid_request_error", "invalid_value"),
}
# Validation errors under these prefixes are 422s (the swarm and run APIs); the OpenAI
# endpoints keep OpenAI's 400.
UNPROCESSABLE_PREFIXES = ("/swarm/", "/runs")
# How pydantic names the branches of a union in an error location (`reward.float`).
_UNION_SCALAR_TAGS = frozenset({"float", "int", "str", "bool", "none", "bytes"})


def _is_union_tag(part: object) -> bool:
    return isinstance(part, str) and (part in _UNION_SCALAR_TAGS or "[" in part)


def _field_path(loc: tuple) -> list[str]:
    """An error location as the client's field path: no `body`, no union branch names."""
    path = []
    for part in loc:
        if part in ("body", "query", "path") and not path:
            continue
        if _is_union_tag(part):
            continue
        path.append(str(part))
    return path


def validation_error_to_gateway_error(exc: RequestValidationError) -> InvalidRequest:
    """The first validation problem, named by its field path (`messages.0.role: ...`)."""
    errors = exc.errors()
    if not errors:
        return InvalidRequest("Invalid request body.")
    first = errors[0]
    if first.get("type") == "json_invalid":
        detail = (first.get("ctx") or {}).get("error", "JSON decode error")
        return InvalidRequest(f"Malformed JSON body: {detail}.", code="json_invalid")
    first_field = _field_path(first.get("loc", ()))
    if first_field:
        # A union's branches each report a problem with the same field: the deepest one (a
        # bad value inside a dict) says most, and together they count as one problem.
        same = [e for e in errors if _field_path(e["loc"])[: len(first_field)] == first_field]
        first = max(same, key=lambda e: len(_field_path(e["loc"])))
        errors = [first] + [e for e in errors if e not in same]
    loc = _field_path(first.get("loc", ()))
    param = ".".join(loc) or None
    message = first.get("msg", "Invalid value")
    if param is None and first.get("type") in ("missing", "model_attributes_type", "dict_type"):
        message = "The request body must be a JSON object (Content-Type: application/json)"
    text = f"{param}: {message}" if param else message
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return InvalidRequest(text, param=param)


async def _on_gateway_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GatewayError)
    return error_response(exc)


async def _on_trainer_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TrainerError)
    return error_response(as_gateway_error(exc))


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    error = validation_error_to_gateway_error(exc)
    if request.url.path.startswith(UNPROCESSABLE_PREFIXES):
        error = Unprocessable(error.message, param=error.param)
    return error_response(error)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    type_, code = _HTTP_STATUS_CODES.get(exc.status_code, ("invalid_request_error", None))
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"Unknown route: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    body = error_body(message, type=type_, code=code)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


class CatchUnhandledErrors:
    """ASGI middleware: any other exception becomes a generic 500, logged with traceback.

    Starlette's own 500 handler re-raises into the server after answering; this one
    answers, logs once, and lets the server go on serving.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response_started = False

        async def send_tracking_start(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracking_start)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not response_started:
                await internal_error_response()(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception that reaches FastAPI to an OpenAI-shaped JSON error.

    GatewayError → its status; trainer errors → what they mean to a client (prompt too
    long → 400, engine stopped → 503, other → 500); validation errors and malformed JSON
    → 400 naming the field (422 on the swarm and run APIs); unknown routes and methods → 404/405; anything else → 500
    (logged here, the traceback never sent). Call before adding outer middleware.
    """
    app.add_exception_handler(GatewayError, _on_gateway_error)
    app.add_exception_handler(TrainerError, _on_trainer_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_middleware(CatchUnhandledErrors)
