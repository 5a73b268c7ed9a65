"""The gateway's Host, Origin and JSON-only guards (`swarm.web_guards.WebGuards`).

Owns: which names the gateway answers to (loopback, its bind address, `public_base_url`'s
host and `--allowed-host`) and how a refusal looks (the OpenAI-shaped error body). The
checks themselves are shared with the researcher UI in `swarm.web_guards`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp

from gateway.errors import (
    CrossSiteRequest,
    GatewayError,
    MisdirectedRequest,
    UnsupportedMediaType,
    error_response,
)
from gateway.settings import GatewaySettings
from swarm.web_guards import WebGuards

_ERRORS: dict[int, type[GatewayError]] = {
    403: CrossSiteRequest,
    415: UnsupportedMediaType,
    421: MisdirectedRequest,
}


def _refuse(status: int, code: str, message: str) -> ASGIApp:
    return error_response(_ERRORS[status](message, code=code))


def gateway_guards(app: ASGIApp, settings: GatewaySettings) -> WebGuards:
    allowed = list(settings.allowed_hosts)
    if settings.public_base_url:
        allowed.append(urlsplit(settings.public_base_url).netloc)
    return WebGuards(
        app, bind_host=settings.host, allowed_hosts=allowed, refuse=_refuse, json_only=True
    )
