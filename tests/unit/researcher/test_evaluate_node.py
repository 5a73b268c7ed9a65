"""The evaluate node scores a round's runs as many at once as the study trains."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from researcher.nodes import evaluate as node


def _rows(n: int):
    return [SimpleNamespace(id=f"e{i}", run_name=f"r{i}", workflow_path=None) for i in range(n)]


def _ctx(parallel_runs):
    return SimpleNamespace(
        gateway=SimpleNamespace(url="http://gw", api_key=None),
        settings=SimpleNamespace(parallel_runs=parallel_runs),
    )


PLAN = SimpleNamespace(eval_family="learnable", eval_episodes=4, task_params={})
FRAMING = SimpleNamespace(workflow=None)


def test_two_runs_are_evaluated_at_once_when_two_train_at_once(monkeypatch):
    inside = threading.Barrier(2, timeout=10)  # both must be evaluating at the same time

    def fake_evaluate(url, model, **kwargs):
        inside.wait()
        return [1.0, 0.0] if model == "r0/policy" else [1.0, 1.0]

    monkeypatch.setattr(node, "evaluate_policy", fake_evaluate)
    scored = node._evaluate_all(_ctx(2), PLAN, FRAMING, _rows(2))
    assert scored["e0"][0] == [1.0, 0.0] and scored["e1"][0] == [1.0, 1.0]


def test_one_at_a_time_when_runs_train_one_at_a_time_and_a_failure_is_raised(monkeypatch):
    active, most = 0, 0
    lock = threading.Lock()

    def fake_evaluate(url, model, **kwargs):
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        try:
            if model == "r2/policy":
                raise RuntimeError("gateway went away")
            return [1.0]
        finally:
            with lock:
                active -= 1

    monkeypatch.setattr(node, "evaluate_policy", fake_evaluate)
    assert set(node._evaluate_all(_ctx(1), PLAN, FRAMING, _rows(2))) == {"e0", "e1"}
    assert most == 1
    with pytest.raises(RuntimeError, match="went away"):
        node._evaluate_all(_ctx(3), PLAN, FRAMING, _rows(3))
