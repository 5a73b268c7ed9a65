"""A fake gateway that speaks the swarm wire contract, for the client's tests.

Not the real gateway (its tests live in tests/unit/gateway; integration tests run the two
together): a dict-backed state machine over `swarm.protocol` types with knobs for the
failures a client must survive — 429 with `retry_after`, connection errors, 503s, a run
that stops (409) or ends (finished, stopped, failed: `end_run`, which aborts its open
episodes as the real gateway does), a lease that lapses. Two adapters serve it: `mock_transport()` for an
in-process `httpx.MockTransport`, and `serve()` for a real HTTP server (uvicorn in a
thread) that `swarm run` subprocesses and the openai SDK can reach. Its
`/v1/chat/completions` answers with `reply(messages)`: by default the last user message
echoed back.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import ValidationError

from swarm.protocol import (
    ClientRegister,
    EpisodeAbort,
    EpisodeCreate,
    EpisodeCreated,
    EpisodeFinish,
    EpisodeResult,
    PolicyPublic,
    RunPublic,
    RunSettings,
)

Reply = tuple[int, Any, dict[str, str]]


@dataclass
class FakeEpisode:
    episode_id: str
    api_key: str
    run: str
    task_id: str
    task_family: str | None
    group_id: str | None
    client_id: str | None
    created_at: float
    status: str = "open"
    reward: Any = None
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    calls: int = 0


@dataclass
class FakeClient:
    client_id: str
    name: str
    code_version: str | None
    labels: dict[str, str]
    status: str = "active"
    heartbeats: int = 0


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


@dataclass
class FakeGateway:
    base_url: str = "http://fake-gateway"
    lease_s: float = 30.0
    run_name: str = "r"
    group_size: int | None = 4  # the run's settings.group_size; None: GET /runs/{run} is 404
    policies: tuple[str, ...] = ("policy",)
    policy_version: int = 3
    accept_episodes: int | None = None  # after this many creations, 409 (the run stopped)
    throttle: list[float] = field(
        default_factory=list
    )  # answer the next creations 429 with these waits
    connection_errors: int = 0  # the next N requests fail to connect (mock transport only)
    unavailable: int = 0  # the next N requests get 503
    forget_clients_on_heartbeat: bool = False
    supersede_clients_on_heartbeat: bool = False  # as if another client took the name
    reply: Callable[[list[dict[str, Any]]], str] = _last_user_text
    # the run ends after this many creations (status `run_status`, at `run_step`, with
    # `run_error`): its open episodes are aborted, calls into them and creations are 409s
    end_run_after: int | None = None
    run_status: str = "running"
    run_step: int = 0
    run_error: str | None = None
    run_ended: bool = False

    clients: dict[str, FakeClient] = field(default_factory=dict)
    episodes: dict[str, FakeEpisode] = field(default_factory=dict)
    requests: list[tuple[float, str, str]] = field(default_factory=list)
    max_open: int = 0
    creations: int = 0

    # -- views the tests read ----------------------------------------------------------------

    def with_status(self, status: str) -> list[FakeEpisode]:
        return [e for e in self.episodes.values() if e.status == status]

    def lapse_clients(self) -> None:
        """Every client's lease lapses now: the gateway forgets it and aborts its episodes."""
        for client in self.clients.values():
            if client.status == "active":
                self._drop_client(client)

    @property
    def open_now(self) -> int:
        return len(self.with_status("open"))

    # -- the contract --------------------------------------------------------------------------

    def handle(self, method: str, path: str, body: Any, token: str | None) -> Reply:
        self.requests.append((time.monotonic(), method, path))
        if self.unavailable > 0:
            self.unavailable -= 1
            return _error(503, "gateway restarting", "unavailable")
        parts = path.strip("/").split("/")
        try:
            match method, parts:
                case "POST", ["swarm", "clients"]:
                    return self._register(ClientRegister.model_validate(body))
                case "POST", ["swarm", "clients", client_id, "heartbeat"]:
                    return self._heartbeat(client_id)
                case "DELETE", ["swarm", "clients", client_id]:
                    return self._deregister(client_id)
                case "GET", ["runs", run]:
                    return self._get_run(run)
                case "GET", ["v1", "models"]:
                    return (
                        200,
                        {"object": "list", "data": [{"id": "fake-model", "object": "model"}]},
                        {},
                    )
                case "POST", ["swarm", "episodes"]:
                    return self._create(EpisodeCreate.model_validate(body))
                case "POST", ["swarm", "episodes", episode_id, "finish"]:
                    return self._close(
                        episode_id, "finished", finish=EpisodeFinish.model_validate(body)
                    )
                case "POST", ["swarm", "episodes", episode_id, "abort"]:
                    return self._close(
                        episode_id, "aborted", abort=EpisodeAbort.model_validate(body)
                    )
                case "POST", ["v1", "chat", "completions"]:
                    return self._chat(body, token)
        except ValidationError as error:
            return _error(422, str(error), "invalid_request_error")
        return _error(404, f"no route {method} {path}", "not_found")

    def _register(self, body: ClientRegister) -> Reply:
        client_id = "cl-" + uuid.uuid4().hex[:8]
        self.clients[client_id] = FakeClient(client_id, body.name, body.code_version, body.labels)
        return 200, {"client_id": client_id, "lease_s": self.lease_s}, {}

    def _heartbeat(self, client_id: str) -> Reply:
        client = self.clients.get(client_id)
        if client is not None and self.supersede_clients_on_heartbeat:
            self._drop_client(client)
            return _error(404, f"client {client_id} was superseded", "client_superseded")
        if client is None or client.status != "active" or self.forget_clients_on_heartbeat:
            self.forget_clients_on_heartbeat = False
            if client is not None:
                self._drop_client(client)
            return _error(404, f"no client {client_id}", "client_not_found")
        client.heartbeats += 1
        return 200, {"client_id": client_id, "lease_s": self.lease_s}, {}

    def _deregister(self, client_id: str) -> Reply:
        client = self.clients.get(client_id)
        if client is None or client.status != "active":
            return _error(404, f"no client {client_id}", "client_not_found")
        self._drop_client(client)
        return 200, {"client_id": client_id, "status": "gone"}, {}

    def _drop_client(self, client: FakeClient) -> None:
        client.status = "gone"
        for episode in self.episodes.values():
            if episode.client_id == client.client_id and episode.status == "open":
                episode.status, episode.reason = "aborted", "client gone"

    def _get_run(self, run: str) -> Reply:
        if self.group_size is None or run != self.run_name:
            return _error(404, f"no run {run}", "run_not_found")
        public = RunPublic(
            id=run,
            name=run,
            status=self.run_status if self.run_ended else "running",
            step=self.run_step,
            error=self.run_error if self.run_ended else None,
            settings=RunSettings(group_size=self.group_size),
            policies={
                name: PolicyPublic(
                    name=name,
                    model=f"{run}/{name}",
                    base_model="fake-model",
                    version=self.policy_version,
                )
                for name in self.policies
            },
            created_at=0.0,
        )
        return 200, public.model_dump(mode="json"), {}

    def _create(self, body: EpisodeCreate) -> Reply:
        if self.throttle:
            wait_s = self.throttle.pop(0)
            return (
                429,
                {
                    "error": {"message": "buffer full", "type": "rate_limit", "code": "throttled"},
                    "retry_after": wait_s,
                },
                {},
            )
        client = self.clients.get(body.client_id or "")
        if body.client_id is not None and (client is None or client.status != "active"):
            return _error(404, f"no active client {body.client_id}", "client_not_found")
        if self.accept_episodes is not None and self.creations >= self.accept_episodes:
            return _error(409, f"run {body.run} is stopped", "run_not_accepting")
        if self.run_ended or (
            self.end_run_after is not None and self.creations >= self.end_run_after
        ):
            self._end_run()
            message = f"Run {body.run!r} is {self.run_status} and takes no more episodes."
            return _error(409, message, "run_not_accepting")
        self.creations += 1
        episode = FakeEpisode(
            episode_id="ep-" + uuid.uuid4().hex[:10],
            api_key="sk-ep-" + uuid.uuid4().hex,
            run=body.run,
            task_id=body.task_id,
            task_family=body.task_family,
            group_id=body.group_id,
            client_id=body.client_id,
            created_at=time.monotonic(),
        )
        self.episodes[episode.episode_id] = episode
        self.max_open = max(self.max_open, self.open_now)
        created = EpisodeCreated(
            episode_id=episode.episode_id,
            api_key=episode.api_key,
            base_url=self.base_url + "/v1",
            policy_versions={name: self.policy_version for name in self.policies},
            model=f"{body.run}/{self.policies[0]}",
            models={name: f"{body.run}/{name}" for name in self.policies},
            group_id=body.group_id,
        )
        return 200, created.model_dump(mode="json"), {}

    def _close(self, episode_id: str, status: str, *, finish=None, abort=None) -> Reply:
        episode = self.episodes.get(episode_id)
        if episode is None:
            return _error(404, f"no episode {episode_id}", "episode_not_found")
        if episode.status != "open":
            return _error(409, f"episode {episode_id} is {episode.status}", "episode_not_open")
        rewards: dict[str, float] = {}
        if finish is not None:
            rewards = (
                finish.reward
                if isinstance(finish.reward, dict)
                else dict.fromkeys(self.policies, finish.reward)
            )
            unknown = set(rewards) - set(self.policies)
            if unknown:
                return _error(
                    422,
                    f"no policy {sorted(unknown)} in run {episode.run}",
                    "invalid_request_error",
                )
            episode.reward, episode.metrics = finish.reward, finish.metrics
        else:
            episode.reason = abort.reason
        episode.status = status
        result = EpisodeResult(episode_id=episode_id, status=status, rewards=rewards)
        return 200, result.model_dump(mode="json"), {}

    def end_run(self, status: str = "finished", *, step: int = 0, error: str | None = None) -> None:
        """The run ends now (as the real gateway ends one): its open episodes are aborted."""
        self.run_status, self.run_step, self.run_error = status, step, error
        self._end_run()

    def _end_run(self) -> None:
        if not self.run_ended:
            self.run_ended = True
            for episode in self.with_status("open"):
                episode.status, episode.reason = "aborted", f"run {self.run_status}"

    def _chat(self, body: dict[str, Any], token: str | None) -> Reply:
        episode = next((e for e in self.episodes.values() if e.api_key == token), None)
        if episode is not None and episode.status != "open":
            message = f"Episode {episode.episode_id} is {episode.status}: {episode.reason}."
            return _error(409, message, "episode_not_open")
        if episode is not None:
            episode.calls += 1
        completion = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:8],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": self.reply(body.get("messages", [])),
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, completion, {}

    # -- adapters ------------------------------------------------------------------------------

    def mock_transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            if self.connection_errors > 0:
                self.connection_errors -= 1
                raise httpx.ConnectError("connection refused", request=request)
            body = json.loads(request.content) if request.content else None
            status, payload, headers = self.handle(
                request.method, request.url.path, body, _bearer(request.headers)
            )
            return httpx.Response(status, json=payload, headers=headers)

        return httpx.MockTransport(handler)

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve over real HTTP on a free loopback port; yields the base URL."""
        import uvicorn
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def endpoint(request: Request) -> JSONResponse:
            raw = await request.body()
            status, payload, headers = self.handle(
                request.method,
                request.url.path,
                json.loads(raw) if raw else None,
                _bearer(request.headers),
            )
            return JSONResponse(payload, status_code=status, headers=headers)

        app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST", "DELETE"])])
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "fake gateway did not start"
            time.sleep(0.01)
        self.base_url = f"http://127.0.0.1:{port}"
        try:
            yield self.base_url
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def _bearer(headers: Any) -> str | None:
    value = headers.get("authorization") or ""
    return value.removeprefix("Bearer ").strip() or None


def _error(status: int, message: str, code: str) -> Reply:
    return (
        status,
        {"error": {"message": message, "type": "invalid_request_error", "code": code}},
        {},
    )
