"""`RolloutWatchdog` says a stalled event loop before any timeout: a rollout that blocks the
loop for less than --episode-timeout still stops the heartbeat, and the gateway then drops
the client ("lease lapsed") with no word of why."""

from __future__ import annotations

import time

from swarm.watchdog import RolloutWatchdog


def _watchdog(**kw) -> RolloutWatchdog:
    return RolloutWatchdog(gateway_url="http://127.0.0.1:9", api_key=None, timeout_s=120.0,
                           client_id=lambda: None, poll_s=0.02, **kw)  # fmt: skip


def test_a_loop_stalled_with_a_rollout_in_flight_is_said_once(capfd):
    with _watchdog(stall_warn_s=0.3) as watchdog:
        watchdog.started("ep-1", "key", "t3")
        watchdog.pulse()
        time.sleep(1.5)  # no pulse: the loop is "blocked"
    err = capfd.readouterr().err
    assert err.count("the event loop has not run for") == 1, err
    assert "episode ep-1 (task t3)" in err and "asyncio.to_thread" in err


def test_a_loop_that_runs_or_has_nothing_in_flight_is_not_said(capfd):
    # a generous threshold: a loaded box may delay the pulses below by a fraction of it
    with _watchdog(stall_warn_s=1.5) as watchdog:
        deadline = time.monotonic() + 1.0
        token = watchdog.started("ep-1", "key", "t3")
        while time.monotonic() < deadline:  # the loop runs: pulses keep coming
            watchdog.pulse()
            time.sleep(0.02)
        watchdog.ended(token)
        time.sleep(2.0)  # stalled, but no rollout in flight (idle between tasks)
    assert "event loop has not run" not in capfd.readouterr().err
