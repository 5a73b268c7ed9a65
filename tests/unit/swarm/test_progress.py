"""`RunProgress`: the numbers a person watches, on a terminal and in a log."""

from __future__ import annotations

import io

from rich.console import Console

from swarm.progress import RECENT_REWARDS, RunProgress


def test_the_counts_line_names_every_number():
    progress = RunProgress(Console(file=io.StringIO()), total=10)
    progress.saw_policy_versions({"policy": 2})
    progress.saw_policy_versions({"policy": 4})
    progress.episode_finished(1.0)
    progress.episode_finished(0.0)
    progress.episode_aborted()
    counts = progress.counts()
    assert counts.startswith("3/10 done · ") and "ep/s" in counts
    assert (
        "reward 0.500 (last 2)" in counts and "policy v4" in counts and counts.endswith("1 aborted")
    )


def test_the_mean_reward_is_over_the_last_fifty():
    progress = RunProgress(Console(file=io.StringIO()))
    for reward in [0.0] * 10 + [1.0] * RECENT_REWARDS:
        progress.episode_finished(reward)
    assert progress.mean_recent_reward == 1.0 and progress.finished == 60


def test_several_policies_show_each_version():
    progress = RunProgress(Console(file=io.StringIO()))
    progress.saw_policy_versions({"solver": 3, "critic": 1})
    assert "policy critic:v1 solver:v3" in progress.counts()


def test_on_a_terminal_a_bar_is_drawn_and_failures_print_above_it():
    out = io.StringIO()
    with RunProgress(Console(file=out, force_terminal=True, width=120), total=4) as progress:
        progress.episode_finished(1.0)
        progress.failure("Traceback (most recent call last):\nValueError: boom")
    text = out.getvalue()
    assert "ValueError: boom" in text and "1/4 done" in text
