"""Host and Origin guards for swarmrl's local web apps (the gateway and the researcher UI).

Owns: `WebGuards`, a pure ASGI middleware that refuses, before any route runs,
- a request whose `Host` is not a name of this server (DNS rebinding: a page on
  evil.example whose name now resolves to 127.0.0.1 reaches a loopback service with
  `Host: evil.example`) → 421;
- a state-changing request (POST, PUT, PATCH, DELETE) sent by a page of another site: its
  `Origin` (or, without one, its `Referer`) names neither this host nor an allowed one → 403;
- with `json_only` (an API that only speaks JSON): a state-changing request carrying a
  non-JSON body or `Content-Type` → 415. A browser may send a cross-site "simple request"
  (text/plain, form-encoded) without asking first; our clients send `application/json`,
  or no body and no `Content-Type`.

Which hosts a server answers to (`allowed_hostnames`): the loopback names, the address it
is bound to and an allow-list (a reverse proxy's public name). Bound to every interface
(0.0.0.0, ::) it cannot know its own names, so without an allow-list Host is not checked
there (such a bind needs a key anyway).

It lives in `swarm` because that is the one package both the gateway and the researcher
may import; it uses the standard library only, so the client SDK stays light. It knows
nothing about either app: each passes `refuse(status, code, message)`, an ASGI app
answering in its own error shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Any]
Refuse = Callable[[int, str, str], ASGIApp]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def hostname_of(netloc: str) -> str:
    """`Host`-style `name[:port]` → the lower-case name (`[::1]:80` → `::1`)."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def allowed_hostnames(bind_host: str, allowed: Iterable[str] = ()) -> frozenset[str] | None:
    """The host names a server bound to `bind_host` answers to; None: any (a wildcard
    bind without an allow-list)."""
    extra = {hostname_of(name) for name in allowed if name.strip()}
    if bind_host.strip() in WILDCARD_BINDS and not extra:
        return None
    return LOOPBACK_NAMES | extra | {hostname_of(bind_host)}


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class WebGuards:
    def __init__(
        self,
        app: ASGIApp,
        *,
        bind_host: str,
        allowed_hosts: Iterable[str] = (),
        refuse: Refuse,
        json_only: bool = False,
    ):
        self.app = app
        self.hostnames = allowed_hostnames(bind_host, allowed_hosts)
        # pages a state-changing request may come from besides this server's own origin
        self.trusted_sites = frozenset(hostname_of(name) for name in allowed_hosts if name.strip())
        self.refuse = refuse
        self.json_only = json_only

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        refusal = self._refusal(scope.get("method", "GET"), headers)
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await self.refuse(*refusal)(scope, receive, send)

    def _known(self, hostname: str) -> bool:
        return self.hostnames is None or hostname in self.hostnames

    def _refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str, str] | None:
        host = headers.get("host")
        if host is not None and not self._known(hostname_of(host)):
            return (
                421,
                "host_not_allowed",
                f"Host {host!r} is not a name of this server; it answers to "
                f"{', '.join(sorted(self.hostnames or ()))} (add a reverse proxy's name "
                "with --allowed-host).",
            )
        if method not in STATE_CHANGING:
            return None
        origin = headers.get("origin")
        source = origin if origin is not None else headers.get("referer")
        if source is not None and not self._same_site(source, host):
            return (
                403,
                "cross_site_request",
                f"{'Origin' if origin is not None else 'Referer'} {source!r} is another "
                f"site: a {method} from a page of another site is refused.",
            )
        if self.json_only:
            content_type = headers.get("content-type")
            has_body = headers.get("content-length", "0") not in ("0", "") or (
                "transfer-encoding" in headers
            )
            if (content_type is not None and not _is_json(content_type)) or (
                content_type is None and has_body
            ):
                return (
                    415,
                    "unsupported_media_type",
                    f"Content-Type {content_type or '(none)'!s} is not accepted: a {method} "
                    "sends application/json (or no body and no Content-Type).",
                )
        return None

    def _same_site(self, source: str, host: str | None) -> bool:
        """Whether a page at `source` (an Origin or a Referer URL) is this server or an
        allowed name; "null" (a sandboxed page, a file) never is."""
        netloc = urlsplit(source).netloc.lower() if source != "null" else ""
        if not netloc:
            return False
        if host is not None and netloc == host.strip().lower():
            return True
        return hostname_of(netloc) in self.trusted_sites
