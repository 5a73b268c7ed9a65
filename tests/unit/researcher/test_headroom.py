"""researcher.headroom: a control near the ceiling (floor) of held-out accuracy is said beside
the verdict, and the pilot stops a comparison that could not support the hypothesis only
when even its interval leaves too little room — at most 2.5% of the time when there is
room, shown by simulation."""

from __future__ import annotations

import math

import numpy as np

from researcher.analysis import analyse
from researcher.answer import plain_answer
from researcher.headroom import ceiling_words, no_room
from researcher.plan import Arm, Design, Framing, RunResult

STUDIES = 4000


def design(
    direction: str = "greater", min_effect: float = 0.05, outcome="heldout_accuracy"
) -> Design:
    arms = [Arm(name=n, role=r, description="", tasks={"chain_sum": 1.0}, run={"lr": lr}, level=lr)
            for n, r, lr in (("lr-2e-05", "control", 2e-5), ("lr-4e-05", "treatment", 4e-5))]  # fmt: skip
    return Design(hypothesis="H1", arms=arms, seeds=[0, 1], steps=10, eval_family="chain_sum",
                  eval_episodes=64, decision_rule="rule", min_effect=min_effect,
                  direction=direction, outcome=outcome)  # fmt: skip


def run(arm: str, seed: int, solved: int, items: int = 64) -> RunResult:
    outcomes = [1.0] * solved + [0.0] * (items - solved)
    return RunResult(arm=arm, seed=seed, run=f"{arm}-s{seed}", eval_outcomes=outcomes,
                     curve=[(s, 0.5) for s in range(1, 11)])  # fmt: skip


def test_a_control_near_the_ceiling_is_said_beside_the_verdict_and_in_the_answer():
    results = [run("lr-2e-05", s, 62) for s in (0, 1)] + [run("lr-4e-05", s, 64) for s in (0, 1)]
    a = analyse(design(), results)
    assert "Ceiling: the control (lr-2e-05) already scores 0.969 held-out, so a treatment can gain at most 0.031, less than the smallest effect that counts (0.05)" in a.summary  # fmt: skip
    (caveat,) = a.caveats
    framing = Framing(question="q", family="learning_rate", summary="lr", model="tiny",
                      planner="template")  # fmt: skip
    assert caveat in plain_answer(framing, design(), a)


def test_room_enough_a_two_sided_question_or_another_outcome_says_nothing():
    assert ceiling_words(design(), "c", 0.80, [run("c", 0, 51)]) == ""  # room 0.2 ≥ 2 x 0.05
    assert "little more than" in ceiling_words(design(), "c", 0.92, [run("c", 0, 59)])
    assert ceiling_words(design("two_sided"), "c", 0.99, [run("c", 0, 63)]) == ""
    assert ceiling_words(design(outcome="learning_speed"), "c", 0.99, [run("c", 0, 63)]) == ""
    graded = RunResult(arm="c", seed=0, run="c", eval_outcomes=[0.97, 1.0, 0.99])  # a rubric
    assert ceiling_words(design(), "c", 0.99, [graded]) == ""
    # "does it hurt?" with a control near 0: the floor
    assert ceiling_words(design("less"), "c", 0.02, [run("c", 0, 1)]).startswith("Floor:")


def test_the_pilot_stops_only_when_its_interval_leaves_too_little_room():
    assert no_room(design(), [run("c", s, 64) for s in (0, 1)]) is not None  # 128 of 128
    assert no_room(design(), [run("c", 0, 54, items=54)]) is None  # 54 items: too few to tell
    assert no_room(design(), [run("c", s, 60) for s in (0, 1)]) is None  # 0.94: room left
    assert no_room(design("less"), [run("c", s, 0) for s in (0, 1)]) is not None  # the floor
    assert no_room(design(min_effect=0.0), [run("c", s, 64) for s in (0, 1)]) is None


def test_with_exactly_the_effect_left_the_pilot_stops_at_most_2_5_percent_of_studies():
    """True control accuracy 0.95 leaves exactly the smallest effect (0.05): a treatment at
    1.0 could still show it, so stopping is an error. Its rate is bounded by the one-sided
    interval (2.5%), over pilots of 2 seeds x 64 and 2 x 256 items."""
    rng = np.random.default_rng(0)
    for items in (64, 256):
        stops = 0
        for _ in range(STUDIES):
            runs = [run("c", s, int(rng.binomial(items, 0.95)), items) for s in (0, 1)]
            stops += no_room(design(), runs) is not None
        slack = 3 * math.sqrt(0.025 * 0.975 / STUDIES)
        assert stops / STUDIES <= 0.025 + slack, (items, stops / STUDIES)


def test_with_no_room_at_all_the_pilot_mostly_stops_once_it_has_enough_items():
    rng = np.random.default_rng(1)
    stops = sum(
        no_room(design(), [run("c", s, int(rng.binomial(256, 0.995)), 256) for s in (0, 1)])
        is not None
        for _ in range(500)
    )
    assert stops / 500 > 0.9


def test_a_pilot_whose_runs_have_no_held_out_items_says_nothing():
    empty = RunResult(arm="c", seed=0, run="c-s0", eval_outcomes=[])
    assert no_room(design(), [empty]) is None
