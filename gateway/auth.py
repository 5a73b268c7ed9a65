"""Who is calling: the admin key, episode keys, and which episode a call is recorded into.

Owns: the binding rules. A bearer key that is an episode's key binds the call to that
episode; a call under `/episodes/{id}/v1/...` is recorded into `{id}`. Without an admin key
configured, other keys (or none) mean plain, unrecorded inference; with one, OpenAI calls
need the admin key or an episode key. Knows nothing about OpenAI wire types or engines.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

import anyio

from gateway.errors import EpisodeNotFound, Unauthorized
from gateway.recorder import EPISODE_KEY_PREFIX, EpisodeRecorder
from gateway.settings import GatewaySettings


@dataclass(frozen=True)
class CallBinding:
    episode_id: str | None  # None: plain inference on the current weights, not recorded


PLAIN_INFERENCE = CallBinding(episode_id=None)


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


def require_admin(token: str | None, settings: GatewaySettings) -> None:
    """Admin-only endpoints: open when no admin key is configured."""
    if settings.api_key is not None and not is_admin_key(token, settings):
        raise Unauthorized("This endpoint needs the admin API key.")


async def require_admin_or_episode_key(
    token: str | None, episode_id: str, recorder: EpisodeRecorder, settings: GatewaySettings
) -> None:
    if settings.api_key is None or is_admin_key(token, settings):
        return
    if await episode_of_key(token, recorder) != episode_id:
        raise Unauthorized("Only the admin key or this episode's key can read it.")
