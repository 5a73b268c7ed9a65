"""Dropped batches in the learned-or-not verdict: an arm whose runs took only batches that
trained nothing "did not learn", and the reason says how many batches trained nothing;
the evaluate node reads the counts from the gateway's run record."""

from __future__ import annotations

from types import SimpleNamespace

from researcher.gateway_api import GatewayRefused
from researcher.learning import learned_or_not, not_testable_words
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


ZERO_VARIANCE_STOP = "no learning signal: 20 consecutive batches trained nothing (zero_variance 20)"


def stopped_for_equal_rewards(arm: str) -> RunResult:
    """A run the gateway stopped at step 0: every group's rewards were equal (w14: always
    0.5; a tiny random model on countdown: always 0)."""
    return RunResult(arm=arm, seed=0, run=f"{arm}-s0", status="stopped",
                     note=ZERO_VARIANCE_STOP, dropped_batches={"zero_variance": 20})  # fmt: skip


def test_runs_stopped_for_equal_rewards_in_a_workflow_point_at_the_reward_not_at_the_lr():
    workflow = design().model_copy(update={"eval_family": "workflow"})
    learned = {
        arm: learned_or_not(workflow, [stopped_for_equal_rewards(arm)], None)
        for arm in ("control", "mixed")
    }
    assert all(v.verdict == "did not learn" for v in learned.values())
    assert "every group's rewards were equal in 20 batches in a row" in learned["mixed"].reason
    words = not_testable_words(learned, steps=20)
    assert "your reward does not depend on the model's output" in words.lower()
    assert "check what rollout returns" in words
    assert "higher learning rate within the safe range" not in words
    assert "easier level" not in words


def test_runs_stopped_for_equal_rewards_on_a_shipped_task_say_the_task_is_too_hard():
    learned = {
        arm: learned_or_not(design(), [stopped_for_equal_rewards(arm)], BASELINE)
        for arm in ("control", "mixed")
    }
    words = not_testable_words(learned, steps=20)
    assert "the task is too hard for the model" in words
    assert "every sample of a task scored the same" in words
    assert "rollout" not in words and "higher learning rate within the safe range" not in words


def test_runs_that_trained_and_did_not_learn_keep_the_usual_advice():
    flat = [run("control", s, 0.10, 0.08, 0.08) for s in (0, 1)]
    learned = {"control": learned_or_not(design(), flat, BASELINE)}
    assert learned["control"].verdict == "did not learn"
    assert "a higher learning rate within the safe range" in not_testable_words(learned)
    # one arm stopped for equal rewards, the other trained: not every run had no signal
    learned["mixed"] = learned_or_not(design(), [stopped_for_equal_rewards("mixed")], BASELINE)
    assert "a higher learning rate within the safe range" in not_testable_words(learned)
