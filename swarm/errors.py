"""Errors of the swarm client SDK, under one root: `SwarmError`.

Owns: what can go wrong on the client side, in the user's terms — a workflow file that
cannot be used, a rollout's return value that is not a reward, an expression the shipped
calculator refuses, and the gateway's answers turned into exceptions (`GatewayError` and its
kinds). Must not know about HTTP libraries beyond a status code and a message; the client
(`swarm.client`) is the one place that maps responses to these classes.
"""

from __future__ import annotations


class SwarmError(Exception):
    """Root of every error the swarm SDK raises on purpose."""


class WorkflowError(SwarmError):
    """A workflow file that cannot run: it does not import, lacks `tasks`/`rollout`, has a
    synchronous `rollout`, or its `tasks()` yields something that is not a task."""


class InvalidReward(SwarmError):
    """A rollout returned something that is not a float or a `{policy: float}` dict."""


class EpisodeStateError(SwarmError):
    """An `Episode` used out of order: attributes read before it was opened, or finished
    or aborted twice."""


class InvalidExpression(SwarmError):
    """The calculator tool refused an expression (names, calls, attributes, …) or could not
    evaluate it (division by zero, too long)."""


class GatewayError(SwarmError):
    """The gateway answered with an error (or could not be reached: `status` None)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no answer"
        return f"{self.message} ({where})"


class GatewayUnavailable(GatewayError):
    """Connection refused/reset, a timeout, or 502/503/504: retried with backoff."""


class Throttled(GatewayError):
    """429: the gateway asks the client to wait `retry_after` seconds, then try again."""

    def __init__(self, message: str, *, retry_after: float, status: int = 429, code=None):
        super().__init__(message, status=status, code=code)
        self.retry_after = retry_after


class Unauthorized(GatewayError):
    """401/403: the admin key is missing or wrong (`--api-key` / `SWARMRL_API_KEY`)."""


class NotFound(GatewayError):
    """404: no such run, client or episode."""


class Conflict(GatewayError):
    """409: the request clashes with the current state of the thing it names."""


class RunNotAccepting(Conflict):
    """409 on episode creation: the run is stopped or finished and takes no more episodes."""


class EpisodeNotOpen(Conflict):
    """409 on finish/abort: the episode was already finished or aborted (for instance by the
    gateway, when the client's lease lapsed or the run stopped)."""


class ClientNotFound(NotFound):
    """404 `client_not_found`: the gateway no longer knows this client (deleted, or its lease
    lapsed); registering again gives a new client id."""


class ClientSuperseded(ClientNotFound):
    """404 `client_superseded`: another client registered under this client's name, so the
    gateway ended this one. Registering again would end that one in turn: stop instead."""


class RunNotFound(NotFound):
    """404 `run_not_found`: no run of that name on the gateway (create it with `POST /runs`)."""
