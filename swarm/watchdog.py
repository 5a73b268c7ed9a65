"""`RolloutWatchdog`: `--episode-timeout` for rollouts that block the event loop.

Owns: a thread that watches the rollouts in flight and the event loop's pulse. `asyncio.
timeout` cancels a slow rollout only when the event loop runs; a rollout that blocks it
(`time.sleep`, a synchronous HTTP call, a busy loop in `async def rollout`) is never
cancelled. When a rollout is past its timeout and the loop has not run (`pulse()`, which
the runner calls from a task every `poll_s`) for `abort_grace_s`, the loop is blocked: the
watchdog aborts the episode through the SDK on an event loop of its own thread (the gateway frees it
and its group at once), and when the loop is still blocked `exit_after_s` later it deletes
the client (the gateway aborts its other open episodes) and ends the process with one line
on stderr and `BLOCKED_EXIT_CODE` — whoever runs the client restarts it. A rollout past its
timeout while the loop runs is asyncio's to cancel, not the watchdog's.

Must not know about workflows or the runner's bookkeeping: the runner tells it when a
rollout starts and ends, and feeds the pulse.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from swarm.client import SwarmClient
from swarm.errors import EpisodeNotOpen, NotFound, SwarmError

log = logging.getLogger(__name__)

BLOCKED_EXIT_CODE = 3
ABORT_GRACE_S = 1.0  # past the timeout, a rollout asyncio has not cancelled blocks the loop
EXIT_AFTER_S = 10.0  # after the abort, the loop still blocked: the process ends
# the loop not run for this long while rollouts are in flight is said once per stall, before
# any timeout: it also stops the heartbeat, and the gateway drops a client whose lease lapses
STALL_WARN_S = 10.0


@dataclass
class _Rollout:
    episode_id: str
    episode_key: str
    task_id: str
    deadline: float
    aborted_at: float | None = None


class RolloutWatchdog:
    def __init__(
        self,
        *,
        gateway_url: str,
        api_key: str | None,
        timeout_s: float,
        client_id: Callable[[], str | None],
        abort_grace_s: float = ABORT_GRACE_S,
        exit_after_s: float = EXIT_AFTER_S,
        poll_s: float = 0.1,
        stall_warn_s: float = STALL_WARN_S,
    ):
        self.gateway_url = gateway_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.abort_grace_s = abort_grace_s
        self.exit_after_s = exit_after_s
        self.poll_s = poll_s
        self.stall_warn_s = stall_warn_s
        self._warned_at_pulse: float | None = None  # the pulse a stall was said after
        self._client_id = client_id
        self._rollouts: dict[int, _Rollout] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._pulse_at = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="swarm-watchdog", daemon=True)

    def __enter__(self) -> RolloutWatchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=5.0)

    def started(self, episode_id: str, episode_key: str, task_id: str) -> int:
        """A rollout began now; the token to pass to `ended`."""
        token = next(self._ids)
        deadline = time.monotonic() + self.timeout_s
        with self._lock:
            self._rollouts[token] = _Rollout(episode_id, episode_key, task_id, deadline)
        return token

    def pulse(self) -> None:
        """The event loop ran just now (called from a task on the loop)."""
        self._pulse_at = time.monotonic()

    def ended(self, token: int) -> None:
        with self._lock:
            self._rollouts.pop(token, None)

    def _watch(self) -> None:
        while not self._stopped.wait(self.poll_s):
            now = time.monotonic()
            self._say_stall(now)
            with self._lock:
                overdue = [
                    r for r in self._rollouts.values() if now > r.deadline + self.abort_grace_s
                ]
            for rollout in overdue:
                if rollout.aborted_at is None:
                    rollout.aborted_at = now
                    self._abort(rollout)
                elif now > rollout.aborted_at + self.exit_after_s:
                    self._leave(rollout, now)

    def _say_stall(self, now: float) -> None:
        """One line on stderr when the loop has not run for `stall_warn_s` with rollouts in
        flight (a `time.sleep(45)` under a 120 s timeout is otherwise seen only as the
        gateway forgetting the client)."""
        pulse = self._pulse_at
        if now - pulse < self.stall_warn_s or self._warned_at_pulse == pulse:
            return
        with self._lock:
            flight = [f"episode {r.episode_id} (task {r.task_id})" for r in self._rollouts.values()]
        if not flight:
            return
        self._warned_at_pulse = pulse
        print(
            f"swarm run: the event loop has not run for {now - pulse:.0f} s while "
            f"{', '.join(flight[:3])}{' …' if len(flight) > 3 else ''} ran: a synchronous call "
            "in async rollout code (time.sleep, a blocking HTTP client, heavy CPU work) stalls "
            "every rollout and the client's heartbeat, and the gateway drops a client whose "
            "heartbeat stops for its lease; use await asyncio.sleep(...) or await "
            "asyncio.to_thread(...)",
            file=sys.stderr,
            flush=True,
        )

    def _reason(self, rollout: _Rollout, now: float) -> str:
        return (
            f"rollout of episode {rollout.episode_id} (task {rollout.task_id}) blocked the event "
            f"loop {now - rollout.deadline + self.timeout_s:.0f} s, past --episode-timeout "
            f"{self.timeout_s:g} s (a synchronous call such as time.sleep in async code?)"
        )

    def _call(self, what: str, call: Callable[[SwarmClient], Awaitable[object]]) -> None:
        """One SDK call on a loop of this thread's own (the runner's loop is blocked)."""

        async def run() -> None:
            async with SwarmClient(
                self.gateway_url, api_key=self.api_key, retry_for_s=5.0, timeout_s=10.0
            ) as client:
                await call(client)

        try:
            asyncio.run(run())
        except (EpisodeNotOpen, NotFound):
            pass  # already closed or gone: what we wanted
        except SwarmError as error:
            log.warning("watchdog could not %s: %s", what, error)

    def _abort(self, rollout: _Rollout) -> None:
        reason = self._reason(rollout, time.monotonic()) + "; aborted by the client's watchdog"
        self._call(
            f"abort episode {rollout.episode_id}",
            lambda client: client.abort_episode(
                rollout.episode_id, reason, episode_key=rollout.episode_key
            ),
        )

    def _leave(self, rollout: _Rollout, now: float) -> None:
        client_id = self._client_id()
        if client_id is not None:

            async def deregister(client: SwarmClient) -> None:
                client.client_id = client_id  # the runner's registration, ended from here
                await client.deregister()

            self._call(f"delete client {client_id}", deregister)
        print(
            f"swarm run: {self._reason(rollout, now)}; its episode was aborted and the loop is "
            f"still blocked: exiting {BLOCKED_EXIT_CODE}",
            file=sys.stderr,
            flush=True,
        )
        os._exit(BLOCKED_EXIT_CODE)
