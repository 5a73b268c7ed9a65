"""`Episode`: one attempt at one task, as the rollout sees it.

Owns: an episode's lifecycle on the client side (open → finished | aborted), what an agent
needs to make its calls count (`base_url`, `api_key`, `model`, `models`, `openai()`,
`env()`), and checking a rollout's return value (`validate_reward`). Used as `async with`,
an episode left open is aborted on the way out: with the traceback when the block raised,
with "rollout returned without finishing" when it did not.

Must not know about workflows, concurrency or progress (`swarm.runner`), nor how requests
are sent and retried (`swarm.client`). Never imports torch; `openai` only when `openai()` is
called.
"""

from __future__ import annotations

import asyncio
import logging
import math
import numbers
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from swarm.errors import (
    EpisodeNotOpen,
    EpisodeStateError,
    GatewayError,
    InvalidReward,
    NotFound,
)
from swarm.protocol import (
    REWARD_LIMIT,
    EpisodeCreated,
    EpisodeFinish,
    EpisodeResult,
    EpisodeStatus,
)

if TYPE_CHECKING:
    import openai

    from swarm.client import SwarmClient

log = logging.getLogger(__name__)

MAX_REASON_CHARS = 4000
NOT_FINISHED_REASON = "rollout returned without finishing"
ABORT_ON_CANCEL_RETRY_S = 3.0  # stopping, or the gateway is the trouble: don't wait on it long

Reward = float | dict[str, float]


class Episode:
    """An episode of a run. Open it with `async with` (or `await episode.open()`), run the
    agent against `base_url`/`api_key`, then `finish(reward)` or `abort(reason)`."""

    def __init__(
        self,
        client: SwarmClient,
        *,
        run: str,
        task_id: str,
        task_family: str | None = None,
        group_id: str | None = None,
        fallback_model: str | None = None,
    ):
        self.client = client
        self.run = run
        self.task_id = task_id
        self.task_family = task_family
        self.group_id = group_id
        self.fallback_model = fallback_model
        self.status: EpisodeStatus | None = None  # None until opened
        self.result: EpisodeResult | None = None
        self._created: EpisodeCreated | None = None
        self._openai: openai.AsyncOpenAI | None = None

    def __repr__(self) -> str:
        episode_id = self._created.episode_id if self._created else "(not opened)"
        return f"Episode({episode_id}, run={self.run!r}, task_id={self.task_id!r}, status={self.status})"

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> Episode:
        """`POST /swarm/episodes`; idempotent once open."""
        if self._created is None:
            self._created = await self.client.create_episode(
                self.run, self.task_id, self.task_family, self.group_id
            )
            self.group_id = self._created.group_id or self.group_id
            self.status = "open"
        return self

    async def __aenter__(self) -> Episode:
        return await self.open()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        try:
            if self.status == "open":
                await self._abort_on_exit(exc)
        finally:
            await self._close_openai()

    async def _abort_on_exit(self, exc: BaseException | None) -> None:
        retry_for_s = None
        if exc is None:
            reason = NOT_FINISHED_REASON
        elif isinstance(exc, asyncio.CancelledError):
            reason, retry_for_s = "client stopped while the rollout ran", ABORT_ON_CANCEL_RETRY_S
        else:
            reason = "".join(traceback.format_exception(exc))
            if isinstance(exc, GatewayError):  # the gateway is the trouble: don't wait on it long
                retry_for_s = ABORT_ON_CANCEL_RETRY_S
        try:
            await self.abort(reason, retry_for_s=retry_for_s)
        except (EpisodeNotOpen, NotFound) as error:
            log.debug("episode %s was already closed: %s", self.episode_id, error)
        except GatewayError as error:  # don't hide the block's own exception behind ours
            log.warning("could not abort episode %s: %s", self.episode_id, error)

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    async def finish(
        self, reward: Any, metrics: Mapping[str, float] | None = None
    ) -> EpisodeResult:
        """Send the reward (a float, or `{policy_name: float}`) and close the episode."""
        self._require_open("finish")
        body = EpisodeFinish(reward=validate_reward(reward), metrics=dict(metrics or {}))
        try:
            self.result = await self.client.finish_episode(
                self.episode_id, body, episode_key=self.api_key
            )
        except (EpisodeNotOpen, NotFound):
            self.status = "aborted"  # the gateway closed it already (lease lapsed, run stopped)
            raise
        self.status = "finished"
        return self.result

    async def abort(self, reason: str = "", *, retry_for_s: float | None = None) -> EpisodeResult:
        """Close the episode without training on it; `reason` (truncated) is kept."""
        self._require_open("abort")
        try:
            self.result = await self.client.abort_episode(
                self.episode_id,
                truncate_reason(reason),
                episode_key=self.api_key,
                retry_for_s=retry_for_s,
            )
        finally:
            self.status = "aborted"  # even when the gateway is away: never abort twice
        return self.result

    def _require_open(self, action: str) -> None:
        if self.status is None:
            raise EpisodeStateError(f"cannot {action} an episode that was never opened")
        if self.status != "open":
            raise EpisodeStateError(
                f"cannot {action} episode {self.episode_id}: already {self.status}"
            )

    # -- what the agent needs -----------------------------------------------------------

    @property
    def created(self) -> EpisodeCreated:
        if self._created is None:
            raise EpisodeStateError(
                "the episode is not open yet: use `async with` or `await open()`"
            )
        return self._created

    @property
    def episode_id(self) -> str:
        return self.created.episode_id

    @property
    def base_url(self) -> str:
        """An OpenAI base URL (ends in `/v1`); calls made with `api_key` are recorded here."""
        return self.created.base_url

    @property
    def api_key(self) -> str:
        return self.created.api_key

    @property
    def model(self) -> str | None:
        """The OpenAI `model` of the run's default policy."""
        created = self.created
        return created.model or next(iter(created.models.values()), None) or self.fallback_model

    @property
    def models(self) -> dict[str, str]:
        """Every policy of the run: policy name → OpenAI `model` name."""
        return dict(self.created.models)

    @property
    def policy_versions(self) -> dict[str, int]:
        return dict(self.created.policy_versions)

    def env(self) -> dict[str, str]:
        """`OPENAI_BASE_URL` and `OPENAI_API_KEY` for a subprocess or a framework that reads
        them: `subprocess.run(cmd, env=os.environ | episode.env())`."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    def openai(self, **options: Any) -> openai.AsyncOpenAI:
        """An `openai.AsyncOpenAI` bound to this episode (closed when the episode exits).

        Without options the same client is returned on every call; with options (timeout,
        max_retries, …) a new one is built each time and the caller closes it.
        """
        import openai

        if options:
            return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, **options)
        if self._openai is None:
            self._openai = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key)
        return self._openai

    async def _close_openai(self) -> None:
        if self._openai is not None:
            llm, self._openai = self._openai, None
            await llm.close()


def validate_reward(value: Any) -> Reward:
    """`value` as a reward the gateway takes, or `InvalidReward` naming what was wrong.

    A reward is a finite real number (int, float, numpy scalar; not bool) or a non-empty
    dict from policy name to one.
    """
    if isinstance(value, Mapping):
        if not value:
            raise InvalidReward("rollout returned an empty dict; return {policy_name: reward}")
        rewards = {}
        for policy, reward in value.items():
            if not isinstance(policy, str):
                raise InvalidReward(
                    f"rollout returned a dict keyed by {type(policy).__name__} ({policy!r}); "
                    "keys must be policy names (str)"
                )
            rewards[policy] = _finite_float(reward, where=f"reward[{policy!r}]")
        return rewards
    return _finite_float(value, where="reward")


def _finite_float(value: Any, *, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        hint = " (use float(...) for a bool)" if isinstance(value, bool) else ""
        raise InvalidReward(
            f"rollout returned {type(value).__name__} ({_short_repr(value)}) as {where}; "
            f"expected a float or a dict of floats{hint}"
        )
    number = float(value)
    if not math.isfinite(number):
        raise InvalidReward(f"rollout returned {number} as {where}; rewards must be finite")
    if abs(number) > REWARD_LIMIT:
        raise InvalidReward(
            f"rollout returned {number:g} as {where}; rewards must be between "
            f"-{REWARD_LIMIT:.0f} and {REWARD_LIMIT:.0f} (scale them down)"
        )
    return number


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def truncate_reason(reason: str, limit: int = MAX_REASON_CHARS) -> str:
    """Keep the end of a long reason: a traceback's last lines name the error."""
    if len(reason) <= limit:
        return reason
    marker = "…(truncated)…\n"
    return marker + reason[-(limit - len(marker)) :]
