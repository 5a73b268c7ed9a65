"""`SwarmClient`: the swarm API of a gateway, spoken over HTTP.

Owns: registering a client (`POST /swarm/clients`), heartbeats, deregistering, reading a
run (`GET /runs/{run}`), creating, finishing and aborting episodes, and the one retry policy
for all of them — exponential backoff with jitter (tenacity) while the gateway is briefly
away (connection errors, 502/503/504), and waiting out `429` for as long as its
`retry_after` says. It maps error responses to `swarm.errors` in one place (`_raise_for`).

Must not know about workflows, progress bars or torch: `swarm.runner` drives it, and
library users call it directly:

    async with SwarmClient("http://127.0.0.1:8400", name="my-agent") as client:
        await client.register()
        async with client.episode("my-run", task_id="t-1") as episode:
            ...
            await episode.finish(1.0)

A retried episode creation whose first attempt reached the gateway may leave one extra
open episode behind; the gateway aborts it when this client deregisters or its lease lapses.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from swarm.episode import Episode
from swarm.errors import (
    ClientNotFound,
    ClientSuperseded,
    Conflict,
    EpisodeNotOpen,
    GatewayError,
    GatewayUnavailable,
    NotFound,
    RunNotAccepting,
    RunNotFound,
    Throttled,
    Unauthorized,
)
from swarm.protocol import (
    ClientRegister,
    ClientRegistered,
    EpisodeAbort,
    EpisodeCreate,
    EpisodeCreated,
    EpisodeFinish,
    EpisodeResult,
    RunPublic,
)

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({502, 503, 504})
DEFAULT_RETRY_AFTER_S = 1.0  # a 429 that names no wait
NOT_FOUND_BY_CODE: dict[str, type[NotFound]] = {
    "client_not_found": ClientNotFound,
    "client_superseded": ClientSuperseded,
    "run_not_found": RunNotFound,
}


class SwarmClient:
    """An async client of one gateway. Use as `async with`; `close()` deregisters."""

    def __init__(
        self,
        gateway_url: str,
        *,
        api_key: str | None = None,
        name: str = "swarm-client",
        code_version: str | None = None,
        labels: Mapping[str, str] | None = None,
        retry_for_s: float = 120.0,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 10.0,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.gateway_url = gateway_url.rstrip("/")
        self.api_key = api_key
        self.registration = ClientRegister(
            name=name, code_version=code_version, labels=dict(labels or {})
        )
        self.retry_for_s = retry_for_s
        self.client_id: str | None = None
        self.lease_s: float | None = None
        self._backoff = wait_exponential_jitter(initial=retry_initial_s, max=retry_max_s)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.gateway_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            transport=transport,
        )

    async def __aenter__(self) -> SwarmClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- clients ------------------------------------------------------------------------

    async def register(self) -> ClientRegistered:
        """`POST /swarm/clients`: episodes created afterwards belong to this client."""
        response = await self._request("POST", "/swarm/clients", json=self.registration)
        registered = ClientRegistered.model_validate(response.json())
        self.client_id, self.lease_s = registered.client_id, registered.lease_s
        return registered

    async def heartbeat(self) -> None:
        """Keep the lease alive. Raises `ClientNotFound` when the gateway forgot us."""
        if self.client_id is None:
            raise ClientNotFound("heartbeat before register()")
        await self._request(
            "POST", f"/swarm/clients/{self.client_id}/heartbeat", not_found=ClientNotFound
        )

    async def deregister(self, *, retry_for_s: float = 5.0) -> None:
        """`DELETE /swarm/clients/{id}`: the gateway aborts this client's open episodes."""
        if self.client_id is None:
            return
        client_id, self.client_id = self.client_id, None
        try:
            await self._request("DELETE", f"/swarm/clients/{client_id}", retry_for_s=retry_for_s)
        except NotFound:
            log.debug("client %s was already gone", client_id)

    async def close(self) -> None:
        """Deregister (if registered) and release the connection pool."""
        try:
            await self.deregister()
        finally:
            await self._http.aclose()

    # -- runs ---------------------------------------------------------------------------

    async def get_run(self, run: str) -> RunPublic | None:
        """`GET /runs/{run}`, or None when the gateway has no such run."""
        try:
            response = await self._request("GET", f"/runs/{run}")
        except NotFound:
            return None
        return RunPublic.model_validate(response.json())

    async def served_models(self) -> list[str]:
        """The ids of `GET /v1/models`: policies and served base models."""
        response = await self._request("GET", "/v1/models")
        return [entry["id"] for entry in response.json().get("data", [])]

    # -- episodes -----------------------------------------------------------------------

    def episode(
        self,
        run: str,
        task_id: str,
        task_family: str | None = None,
        group_id: str | None = None,
        *,
        fallback_model: str | None = None,
    ) -> Episode:
        """An episode of `run`, opened by `async with` (or `await episode.open()`).

        `fallback_model` is `episode.model` when the gateway names no model for the run
        (a run that records without training serves base models only).
        """
        return Episode(
            self,
            run=run,
            task_id=task_id,
            task_family=task_family,
            group_id=group_id,
            fallback_model=fallback_model,
        )

    async def create_episode(
        self,
        run: str,
        task_id: str,
        task_family: str | None = None,
        group_id: str | None = None,
    ) -> EpisodeCreated:
        """`POST /swarm/episodes`. Raises `RunNotAccepting` when the run is stopped,
        `RunNotFound` when there is no such run, `ClientNotFound` when the gateway forgot
        this client (register again)."""
        body = EpisodeCreate(
            client_id=self.client_id,
            run=run,
            task_id=task_id,
            task_family=task_family,
            group_id=group_id,
        )
        response = await self._request(
            "POST", "/swarm/episodes", json=body, conflict=RunNotAccepting
        )
        return EpisodeCreated.model_validate(response.json())

    async def finish_episode(
        self, episode_id: str, finish: EpisodeFinish, *, episode_key: str | None = None
    ) -> EpisodeResult:
        """`POST /swarm/episodes/{id}/finish`. Raises `EpisodeNotOpen` when it was closed."""
        return await self._close_episode(episode_id, "finish", finish, episode_key=episode_key)

    async def abort_episode(
        self,
        episode_id: str,
        reason: str,
        *,
        episode_key: str | None = None,
        retry_for_s: float | None = None,
    ) -> EpisodeResult:
        """`POST /swarm/episodes/{id}/abort`. Raises `EpisodeNotOpen` when it was closed."""
        body = EpisodeAbort(reason=reason)
        return await self._close_episode(
            episode_id, "abort", body, episode_key=episode_key, retry_for_s=retry_for_s
        )

    async def _close_episode(
        self,
        episode_id: str,
        action: str,
        body: EpisodeFinish | EpisodeAbort,
        *,
        episode_key: str | None,
        retry_for_s: float | None = None,
    ) -> EpisodeResult:
        response = await self._request(
            "POST",
            f"/swarm/episodes/{episode_id}/{action}",
            json=body,
            conflict=EpisodeNotOpen,
            episode_key=episode_key,
            retry_for_s=retry_for_s,
        )
        return EpisodeResult.model_validate(response.json())

    # -- one request, retried -----------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        not_found: type[NotFound] = NotFound,
        conflict: type[Conflict] = Conflict,
        episode_key: str | None = None,
        retry_for_s: float | None = None,
    ) -> httpx.Response:
        """Send once per attempt; retry while the gateway is away or throttling."""
        payload = json.model_dump(mode="json") if hasattr(json, "model_dump") else json
        headers = {}
        if episode_key is not None and self.api_key is None:
            headers["Authorization"] = f"Bearer {episode_key}"
        budget_s = self.retry_for_s if retry_for_s is None else retry_for_s

        def give_up(state: RetryCallState) -> bool:
            if isinstance(state.outcome.exception(), Throttled):
                return False  # the gateway is up and asked us to wait: wait as long as it says
            return (state.seconds_since_start or 0.0) >= budget_s

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception()
            if isinstance(error, Throttled):
                return error.retry_after
            return self._backoff(state)

        def say_waiting(state: RetryCallState) -> None:
            error = state.outcome.exception()
            noteworthy = state.attempt_number == 1 or state.attempt_number % 5 == 0
            level = (
                logging.WARNING
                if noteworthy and not isinstance(error, Throttled)
                else logging.DEBUG
            )
            log.log(
                level, "%s %s: %s; retrying (attempt %d)", method, path, error, state.attempt_number
            )

        retrying = AsyncRetrying(
            retry=retry_if_exception_type((GatewayUnavailable, Throttled)),
            stop=give_up,
            wait=wait,
            before_sleep=say_waiting,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                try:
                    response = await self._http.request(method, path, json=payload, headers=headers)
                except httpx.TransportError as error:
                    raise GatewayUnavailable(
                        f"{method} {self.gateway_url}{path}: {type(error).__name__}: {error}"
                    ) from error
                _raise_for(response, not_found=not_found, conflict=conflict)
        return response


def _raise_for(
    response: httpx.Response, *, not_found: type[NotFound], conflict: type[Conflict]
) -> None:
    """Turn an error response into the matching `GatewayError`; pass successes through."""
    status = response.status_code
    if status < 400:
        return
    message, code, retry_after = _error_details(response)
    if status == 429:
        raise Throttled(message, retry_after=retry_after, code=code)
    kind: type[GatewayError]
    if status in RETRIED_STATUSES:
        kind = GatewayUnavailable
    elif status in (401, 403):
        kind = Unauthorized
    elif status == 404:
        kind = NOT_FOUND_BY_CODE.get(code or "", not_found)
    elif status == 409:
        kind = conflict
    else:
        kind = GatewayError
    raise kind(message, status=status, code=code)


def _error_details(response: httpx.Response) -> tuple[str, str | None, float]:
    """(message, code, retry_after) of an OpenAI-shaped error body, tolerating others.

    `retry_after` comes from `error.retry_after`, a top-level `retry_after`, or the
    `Retry-After` header (whole seconds, so the least precise), in that order.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    message = (
        error.get("message")
        or (body.get("detail") if isinstance(body, dict) else None)
        or response.text[:500]
        or response.reason_phrase
    )
    retry_after = DEFAULT_RETRY_AFTER_S
    for candidate in (
        error.get("retry_after"),
        body.get("retry_after") if isinstance(body, dict) else None,
        response.headers.get("retry-after"),
    ):
        if candidate is None:
            continue
        try:
            retry_after = max(0.0, float(candidate))
        except (TypeError, ValueError):
            continue
        break
    return str(message), error.get("code"), retry_after
