"""Dropped batches in the learned-or-not verdict: an arm whose runs took only batches that
trained nothing "did not learn", and the reason says how many batches trained nothing;
the evaluate node reads the counts from the gateway's run record."""

from __future__ import annotations

from types import SimpleNamespace

from researcher.gateway_api import GatewayRefused
from researcher.learning import learned_or_not
from researcher.nodes.evaluate import dropped_batches
from researcher.plan import RunResult
from tests.unit.researcher.test_learning import BASELINE, design, run


def test_an_arm_whose_runs_trained_nothing_did_not_learn_and_says_why():
    runs = [
        RunResult(
            arm="control",
            seed=s,
            run=f"control-s{s}",
            status="stopped",
            dropped_batches={"zero_variance": 15},
        )  # fmt: skip
        for s in (0, 1)
    ]
    learning = learned_or_not(design(), runs, BASELINE)
    assert learning.verdict == "did not learn"
    assert learning.reason == (
        "did not learn: no training step, 30 of 30 batches trained nothing: zero_variance 30"
    )


def test_dropped_batches_are_named_in_the_reason_beside_the_usual_verdict():
    plain = [run("mixed", s, 0.60, 0.2, 0.7) for s in (0, 1)]  # 16 steps each
    dropped = [
        r.model_copy(update={"dropped_batches": {"zero_variance": 5, "stale": 1}}) for r in plain
    ]
    before, after = (
        learned_or_not(design(), plain, BASELINE),
        learned_or_not(design(), dropped, BASELINE),
    )
    assert after.verdict == before.verdict == "learned"
    assert after.reason == before.reason + (
        "; 12 of 44 batches trained nothing: zero_variance 10, stale 2"
    )
    assert "batches" not in before.reason


def test_evaluate_reads_the_runs_dropped_batches_from_the_gateway():
    events: list[str] = []

    def get_run(name: str) -> dict:
        if name == "gone":
            raise GatewayRefused("no run 'gone'", status=404, code="run_not_found")
        if name == "old":
            return {"name": "old", "step": 3}  # a gateway that does not count them
        return {"name": name, "batches_dropped": {"zero_variance": 4, "stale": 0}}

    ctx = SimpleNamespace(gateway=SimpleNamespace(get_run=get_run),
                          event=lambda phase, kind, text, **_: events.append(text))  # fmt: skip
    assert dropped_batches(ctx, "r") == {"zero_variance": 4}
    assert dropped_batches(ctx, "old") == {}
    assert dropped_batches(ctx, None) == {}
    assert dropped_batches(ctx, "gone") == {} and "gone: dropped batches unknown" in events[0]
