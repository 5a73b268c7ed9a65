"""The researcher's view of a gateway: the few run-control calls it makes, over HTTP only.

Owns: `GatewayAPI` — health, capacity, served models, create (idempotently) / read / edit / stop a
run, read its metrics, get a run's client key — with retries on connection errors (tenacity) and OpenAI-shaped
error bodies turned into `GatewayUnavailable` / `GatewayRefused` with the gateway's message.
Knows nothing of the gateway's internals: it could be on another continent.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_exponential

from researcher.errors import ResearcherError


class GatewayUnavailable(ResearcherError):
    """The gateway did not answer (down, wrong URL, network)."""


class GatewayRefused(ResearcherError):
    """The gateway answered with an error."""

    def __init__(self, message: str, *, status: int, code: str | None):
        super().__init__(message)
        self.status = status
        self.code = code


_retrying = retry(
    retry=retry_if_exception_type(httpx.TransportError),
    wait=wait_exponential(multiplier=0.2, max=5),
    stop=stop_after_delay(30),
    reraise=True,
)


class GatewayAPI:
    def __init__(self, url: str, *, api_key: str | None = None, timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.api_key = api_key
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    @_retrying
    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._http.request(method, path, **kwargs)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._send(method, path, **kwargs)
        except httpx.TransportError as error:
            raise GatewayUnavailable(
                f"gateway {self.url} did not answer {method} {path}: {error!r}. "
                "Is `gateway serve` running there?"
            ) from None
        if response.status_code >= 400:
            try:
                body = response.json()["error"]
                message, code = body.get("message", response.text), body.get("code")
            except (ValueError, KeyError, TypeError):
                message, code = response.text[:500], None
            raise GatewayRefused(
                f"{method} {path} → {response.status_code}: {message}",
                status=response.status_code,
                code=code,
            )
        return response.json() if response.content else None

    def healthz(self) -> dict:
        return self._call("GET", "/healthz")

    def check(self, *, within_s: float = 5.0) -> dict:
        """`/healthz` without the long retry: a wrong URL fails in seconds, naming it."""
        deadline = time.monotonic() + within_s
        while True:
            try:
                response = self._http.get("/healthz", timeout=min(5.0, within_s))
                response.raise_for_status()
                return response.json()
            except httpx.HTTPError as error:
                if time.monotonic() >= deadline:
                    raise GatewayUnavailable(
                        f"gateway {self.url} did not answer /healthz ({error!r}). Is "
                        "`gateway serve` running there? Without --gateway the researcher "
                        "starts its own."
                    ) from None
                time.sleep(0.5)

    def capacity(self) -> dict | None:
        """`GET /capacity` (how many runs to train at once there); None from a gateway
        older than that endpoint (404)."""
        try:
            return self._call("GET", "/capacity")
        except GatewayRefused as error:
            if error.status == 404:
                return None
            raise

    def served_models(self) -> list[str]:
        """The base models the gateway serves (not the `<run>/<policy>` names)."""
        models = [m["id"] for m in self._call("GET", "/v1/models")["data"]]
        return [m for m in models if "/" not in m]

    def create_run(self, body: dict) -> dict:
        """POST /runs; a run of that name that exists already is returned as it is (so a
        launch repeated after a crash creates nothing twice)."""
        try:
            return self._call("POST", "/runs", json=body)
        except GatewayRefused as error:
            if error.status != 409:
                raise
            return self.get_run(body["name"])

    def client_key(self, name: str) -> str | None:
        """A key for `name`'s swarm clients that controls no run (POST /runs/{id}/client-keys);
        None when this gateway has no admin key (its clients need none)."""
        if self.api_key is None:
            return None
        return self._call("POST", f"/runs/{name}/client-keys")["api_key"]

    def list_runs(self) -> list[dict]:
        return self._call("GET", "/runs")

    def get_run(self, name: str) -> dict:
        return self._call("GET", f"/runs/{name}")

    def checkpoints(self, name: str) -> list[dict]:
        """The run's saved checkpoints and exports ({step, path, created_at}), oldest first."""
        return self._call("GET", f"/runs/{name}/checkpoints")

    def delete_checkpoint(self, name: str, step: int) -> None:
        """Delete a run's checkpoint (or export) at `step`, files and all."""
        self._call("DELETE", f"/runs/{name}/checkpoints/{step}")

    def patch_run(self, name: str, fields: dict) -> dict:
        return self._call("PATCH", f"/runs/{name}", json=fields)

    def stop_run(self, name: str) -> dict | None:
        try:
            return self._call("POST", f"/runs/{name}/stop")
        except GatewayRefused as error:
            if error.status in (404, 409):  # gone, or finished already
                return None
            raise

    def pause_run(self, name: str) -> dict:
        return self._call("POST", f"/runs/{name}/pause")

    def resume_run(self, name: str) -> dict:
        return self._call("POST", f"/runs/{name}/resume")

    def metrics(self, name: str, *, since: int = 0) -> list[dict]:
        return self._call("GET", f"/runs/{name}/metrics", params={"since": since})
