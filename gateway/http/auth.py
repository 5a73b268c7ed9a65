"""Who is calling: the admin key, run-scoped client keys, episode keys, and which episode a
call is recorded into.

Owns: the binding rules. A bearer key that is an episode's key binds the call to that
episode; a call under `/episodes/{id}/v1/...` is recorded into `{id}`. Without an admin key
configured, other keys (or none) mean plain, unrecorded inference; with one, OpenAI calls
need the admin key or an episode key.

A client key (`sk-cl-…`, from `POST /runs/{run}/client-keys`) is what a swarm client that
should not control runs holds: it registers, heartbeats and deletes its own clients, creates
episodes of its run and finishes, aborts and reads them, and reads its run — nothing else
(403 elsewhere in the swarm API, 401 on run control). It is derived from the admin key and
the run's name (an HMAC), so the gateway stores nothing and a restarted gateway accepts it
again; rotating the admin key revokes every client key. Without an admin key configured the
gateway is open to everyone and a client key is as good as none.
Knows nothing about OpenAI wire types or engines.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

import anyio

from gateway.errors import EpisodeNotFound, Forbidden, Unauthorized
from gateway.recording.recorder import EPISODE_KEY_PREFIX, EpisodeRecorder
from gateway.settings import GatewaySettings


@dataclass(frozen=True)
class CallBinding:
    episode_id: str | None  # None: plain inference on the current weights, not recorded


PLAIN_INFERENCE = CallBinding(episode_id=None)

CLIENT_KEY_PREFIX = "sk-cl-"
_CLIENT_KEY = re.compile(r"sk-cl-([0-9a-f]{48})-(.+)")
_KEYLESS_SECRET = secrets.token_hex(32)  # a gateway without an admin key: keys of this process


@dataclass(frozen=True)
class SwarmCaller:
    """Who calls the swarm API: the admin (or anyone, on a gateway without an admin key),
    or the holder of a client key of `run`."""

    run: str | None  # None: not confined to a run

    @property
    def confined(self) -> bool:
        return self.run is not None

    def may_use(self, run: str | None) -> bool:
        return self.run is None or self.run == run


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def is_admin_key(token: str | None, settings: GatewaySettings) -> bool:
    if settings.api_key is None or token is None:
        return False
    return hmac.compare_digest(token.encode(), settings.api_key.encode())


async def episode_of_key(token: str | None, recorder: EpisodeRecorder) -> str | None:
    """The episode a key belongs to; 401 for an unknown key that looks like an episode's."""
    if token is None or not token.startswith(EPISODE_KEY_PREFIX):
        return None
    episode_id = await anyio.to_thread.run_sync(recorder.resolve_key, token)
    if episode_id is None:
        raise Unauthorized("Unknown episode API key.")
    return episode_id


async def bind_openai_call(
    *,
    token: str | None,
    path_episode_id: str | None,
    recorder: EpisodeRecorder,
    settings: GatewaySettings,
) -> CallBinding:
    key_episode_id = await episode_of_key(token, recorder)
    admin = is_admin_key(token, settings)
    if settings.api_key is not None and key_episode_id is None and not admin:
        raise Unauthorized("A valid API key (the admin key or an episode key) is required.")
    if path_episode_id is None:
        if key_episode_id is None:
            return PLAIN_INFERENCE
        await anyio.to_thread.run_sync(recorder.ensure_open, key_episode_id)
        return CallBinding(episode_id=key_episode_id)
    if not await anyio.to_thread.run_sync(recorder.has_episode, path_episode_id):
        raise EpisodeNotFound(f"No episode with id {path_episode_id!r}.", param="episode_id")
    if key_episode_id is not None and key_episode_id != path_episode_id:
        raise Unauthorized("This API key belongs to a different episode.")
    await anyio.to_thread.run_sync(recorder.ensure_open, path_episode_id)
    return CallBinding(episode_id=path_episode_id)


def client_key_for(run: str, settings: GatewaySettings) -> str:
    """The client key of `run`: `sk-cl-<hmac of the run's name under the admin key>-<run>`."""
    secret = settings.api_key or _KEYLESS_SECRET
    mac = hmac.new(secret.encode(), f"swarmrl client key\0{run}".encode(), hashlib.sha256)
    return f"{CLIENT_KEY_PREFIX}{mac.hexdigest()[:48]}-{run}"


def run_of_client_key(token: str | None, settings: GatewaySettings) -> str | None:
    """The run a client key belongs to; None for a token that is not one; 401 for a forged
    or outdated one (the admin key changed)."""
    if token is None or not token.startswith(CLIENT_KEY_PREFIX):
        return None
    match = _CLIENT_KEY.fullmatch(token)
    if match is None or not hmac.compare_digest(
        token.encode(), client_key_for(match.group(2), settings).encode()
    ):
        raise Unauthorized("Unknown client API key (was the gateway's admin key changed?).")
    return match.group(2)


def swarm_caller(token: str | None, settings: GatewaySettings) -> SwarmCaller:
    """The admin, or a client key's holder; 401 for anyone else on a gateway with a key."""
    if settings.api_key is None or is_admin_key(token, settings):
        return SwarmCaller(run=None)
    run = run_of_client_key(token, settings)
    if run is None:
        raise Unauthorized("This endpoint needs the admin API key or a client key of the run.")
    return SwarmCaller(run=run)


def require_run_access(caller: SwarmCaller, run: str | None, *, what: str) -> None:
    """403 when a client key's holder reaches for another run's `what`."""
    if not caller.may_use(run):
        raise Forbidden(
            f"This client key belongs to run {caller.run!r}; it cannot reach {what} of "
            f"run {run!r}.",
            param="run",
        )


def require_admin(token: str | None, settings: GatewaySettings) -> None:
    """Admin-only endpoints: open when no admin key is configured."""
    if settings.api_key is not None and not is_admin_key(token, settings):
        raise Unauthorized("This endpoint needs the admin API key.")


def require_admin_or_run_client(token: str | None, run: str, settings: GatewaySettings) -> None:
    """The admin key, or a client key of `run` (a client reads its own run)."""
    if token is not None and token.startswith(CLIENT_KEY_PREFIX):
        require_run_access(swarm_caller(token, settings), run, what="the settings")
        return
    require_admin(token, settings)


async def require_admin_or_episode_key(
    token: str | None, episode_id: str, recorder: EpisodeRecorder, settings: GatewaySettings
) -> None:
    """The admin key, the episode's own key, or a client key of the episode's run."""
    if settings.api_key is None or is_admin_key(token, settings):
        return
    if token is not None and token.startswith(CLIENT_KEY_PREFIX):
        caller = swarm_caller(token, settings)
        episode = await anyio.to_thread.run_sync(recorder.get_episode, episode_id)
        require_run_access(caller, episode.run, what="the episodes")
        return
    if await episode_of_key(token, recorder) != episode_id:
        raise Unauthorized("Only the admin key or this episode's key can read it.")
