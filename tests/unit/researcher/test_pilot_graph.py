"""The pilot round in the study graph (scripted planner, fake gateway and launcher, as in
test_graph.py): the control's first seeds train first; when they learned they are the
comparison's control seeds (never trained twice) and the comparison is sized and its
minimum detectable effect stated before a treatment run starts; when they did not learn the
learning rate is retuned and the control trains again at the new setting."""

from __future__ import annotations

import pytest

from experiments_db import crud
from researcher.plan import Design
from tests.unit.researcher.fakes import small_design
from tests.unit.researcher.test_graph import Harness, _blank_figure


def _two_seed_design() -> Design:
    return small_design().model_copy(update={"seeds": [0, 1], "eval_episodes": 16})


@pytest.fixture
def harness(tmp_path, monkeypatch) -> Harness:
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    monkeypatch.setattr("researcher.report.figures.reward_curves", _blank_figure)
    monkeypatch.setattr("researcher.report.figures.heldout_accuracy", _blank_figure)
    h = Harness(tmp_path, monkeypatch)
    h.planner.plan = _two_seed_design()
    return h


def _scores(harness: Harness, *, trained: list[float], untrained: list[float]) -> None:
    """Every trained policy scores `trained` on the held-out items, the base model `untrained`."""

    def evaluate(url, model, *, family, n, api_key=None):
        harness.evaluated.append(model)
        return list(trained if "/" in model else untrained)[:n]

    harness.monkeypatch.setattr("researcher.nodes.evaluate.evaluate_policy", evaluate)


def _events(harness: Harness, phase: str) -> list[str]:
    return [e.message for e in harness.events() if e.phase == phase]


@pytest.mark.slow
def test_a_control_that_learns_in_the_pilot_becomes_the_comparisons_control(harness):
    _scores(harness, trained=[1.0, 1.0, 1.0, 0.0] * 4, untrained=[0.0] * 16)
    harness.create(pilot=True, seeds=2)
    assert harness.drive() == 0

    created = harness.gateway.created
    pilot, comparison = created[:2], created[2:]
    assert all("-r1-control-" in name for name in pilot)  # the pilot: the control alone
    assert sorted(n.rsplit("-", 1)[-1] for n in comparison) == ["s0", "s1"]
    assert all("-r2-mixed-" in name for name in comparison)  # only the treatment trains next
    designs = _events(harness, "design")
    assert "(pilot)" in designs[0] and "look 1 of" in designs[1]
    assert "2 run(s) reused from earlier rounds" in designs[1]
    assert "Pilot: the control learned" in designs[1]
    assert "detects" in designs[1] or "confirm" in designs[1]  # the minimum detectable effect
    assert any(m.startswith("pilot: the control learned") for m in _events(harness, "analyse"))
    state = harness.graph_state(harness.ctx).values
    final = Design.model_validate(state["design"])
    assert final.pilot is not None and final.pilot.kept and final.mde is not None
    # the analysis compares both arms over both seeds, the pilot's runs included
    results = state["results"][-1]
    assert sorted((r["arm"], r["seed"]) for r in results if r["status"] != "baseline") == [
        ("control", 0),
        ("control", 1),
        ("mixed", 0),
        ("mixed", 1),
    ]


@pytest.mark.slow
def test_a_control_that_does_not_learn_is_retuned_and_trains_again(harness):
    _scores(harness, trained=[0.0] * 16, untrained=[1.0] * 16)  # worse than untrained
    harness.create(pilot=True, seeds=2)
    assert harness.drive() == 0

    created = harness.gateway.created
    assert all("-r1-control-" in name for name in created[:2])
    later = created[2:]
    assert sum("-r2-control-" in n for n in later) == 2  # the control again, retuned
    assert sum("-r2-mixed-" in n for n in later) == 2
    lrs = {harness.gateway.runs[n].settings["lr"] for n in later}
    assert lrs == {3e-5}  # 1e-5 × 3 for both arms: the factor (the task mix) is untouched
    assert {harness.gateway.runs[n].settings["lr"] for n in created[:2]} == {1e-5}
    designs = _events(harness, "design")
    assert "Pilot: the control did not learn (retuned: lr 1e-05 → 3e-05)" in designs[1]


@pytest.mark.slow
def test_without_a_pilot_the_planners_design_runs_as_it_is(harness):
    _scores(harness, trained=[1.0] * 16, untrained=[0.0] * 16)
    harness.create(pilot=False, seeds=2)
    assert harness.drive() == 0
    assert len(harness.gateway.created) == 4
    assert "(look 1 of" in _events(harness, "design")[0]


@pytest.mark.slow
def test_rewards_beyond_0_to_1_in_the_pilot_set_the_comparisons_smallest_effect(harness):
    # a workflow scoring 0-100: trained policies around 60, the untrained model around 20
    _scores(harness, trained=[60.0, 70.0, 50.0, 65.0] * 4, untrained=[20.0, 10.0, 30.0, 0.0] * 4)
    harness.create(pilot=True, seeds=2)
    assert harness.drive() == 0
    final = Design.model_validate(harness.graph_state(harness.ctx).values["design"])
    assert final.reward_scale == pytest.approx(70.0)  # the rewards seen ran 0 to 70
    assert final.min_effect == pytest.approx(0.05 * 70.0)
    assert final.pilot is not None and final.pilot.reward_range == (0.0, 70.0)
    assert (
        "beyond 0-1" in final.decision_rule
        and "3.5 in the workflow's own units" in final.decision_rule
    )
    assert "the difference is at least 3.5; refuted if the interval's upper end is below 3.5" in (
        final.decision_rule
    )


@pytest.mark.slow
def test_a_comparison_that_ends_inside_the_reports_reserve_still_runs(harness):
    """The pilot's runs cost 480 of 1000 s; the comparison's first look costs 480 more: it
    ends inside the reserve kept for the report (60 s), and its runs answer (they are priced
    with their evaluation). A loaded box made the old rule, which kept the reserve out, end
    such a study 'not tested' by a few seconds."""
    _scores(harness, trained=[1.0, 1.0, 1.0, 0.0] * 4, untrained=[0.0] * 16)
    ctx = harness.create(pilot=True, seeds=2, budget_s=1000.0)

    def spend_480(gateway, run):  # 2 pilot runs: 240 s each; 2 treatment seeds: 480 s
        with ctx.session() as session:
            crud.update_study(session, study_id=ctx.study_id, budget_used_s=480.0)

    harness.gateway.on_get_run = spend_480
    assert harness.drive() == 0
    decisions = _events(harness, "decide")
    assert not any("cannot pay for the comparison" in d for d in decisions), decisions
    assert any("-r2-" in name for name in harness.gateway.created)  # the comparison ran


def test_a_pilot_that_leaves_too_little_budget_for_the_comparison_concludes_without_it(harness):
    """A loaded box: the pilot's runs cost most of the budget. What is left cannot pay for
    one treatment seed, so no comparison run starts (it would be stopped before a step and
    answer nothing); the study concludes at once, saying what the pilot found and what the
    comparison would cost."""
    _scores(harness, trained=[1.0, 1.0, 1.0, 0.0] * 4, untrained=[0.0] * 16)
    ctx = harness.create(pilot=True, seeds=2, budget_s=1000.0)

    def spend_most(gateway, run):  # the pilot's runs eat 900 of the 1000 s
        with ctx.session() as session:
            crud.update_study(session, study_id=ctx.study_id, budget_used_s=900.0)

    harness.gateway.on_get_run = spend_most
    assert harness.drive() == 0

    created = harness.gateway.created
    assert created and all("-r1-control-" in name for name in created)  # the pilot alone
    decisions = _events(harness, "decide")
    assert any("the budget left cannot pay for the comparison" in d for d in decisions)
    assert harness.study().status == "finished" and harness.report_row() is not None


@pytest.mark.slow
def test_a_pilot_control_at_the_ceiling_concludes_that_no_treatment_could_show_the_effect(harness):
    """The pilot's control solves every one of its 128 held-out items: even the low end of
    its interval (0.971) leaves less room than the smallest effect that counts (0.05), so
    no treatment could be "supported" — the study says so instead of training one."""
    harness.planner.plan = _two_seed_design().model_copy(update={"eval_episodes": 64})
    _scores(harness, trained=[1.0] * 64, untrained=[0.0] * 64)
    harness.create(pilot=True, seeds=2)
    assert harness.drive() == 0

    assert all("-r1-control-" in name for name in harness.gateway.created)  # the pilot alone
    decisions = _events(harness, "decide")
    assert any("already score 1.000 held-out (128 items" in d for d in decisions), decisions
    assert any("could not support the hypothesis on this task (its ceiling)" in d
               for d in decisions)  # fmt: skip
    report = harness.report_row()
    assert harness.study().status == "finished" and report is not None


@pytest.mark.slow
def test_a_pilot_control_with_room_left_goes_on_to_the_comparison(harness):
    harness.planner.plan = _two_seed_design().model_copy(update={"eval_episodes": 64})
    _scores(harness, trained=[1.0] * 58 + [0.0] * 6, untrained=[0.0] * 64)  # 0.906
    harness.create(pilot=True, seeds=2)
    assert harness.drive() == 0
    assert any("-r2-mixed-" in name for name in harness.gateway.created)


@pytest.mark.slow
def test_an_unclear_pilot_keeps_its_runs_so_the_comparison_is_priced_for_the_treatment_alone(
    harness,
):
    """A pilot whose control is "unclear" is not retuned: its runs are the control's seeds,
    so the first look trains only the treatment. Pricing the control again (as before)
    doubled the cost and concluded "not tested" with budget to spare for the comparison."""
    _scores(harness, trained=[1.0] * 9 + [0.0] * 7, untrained=[1.0] * 8 + [0.0] * 8)
    ctx = harness.create(pilot=True, seeds=2, budget_s=1000.0)

    def spend(gateway, run):  # the pilot's two runs cost 450 s: 225 s a run, 550 s left
        if "-r1-" in run.name:
            with ctx.session() as session:
                crud.update_study(session, study_id=ctx.study_id, budget_used_s=450.0)

    harness.gateway.on_get_run = spend
    assert harness.drive() == 0

    assert any(m.startswith("pilot: unclear") for m in _events(harness, "analyse"))
    decisions = _events(harness, "decide")
    assert not any("cannot pay for the comparison" in d for d in decisions), decisions
    assert any("-r2-mixed-" in name for name in harness.gateway.created)
    assert not any("-r2-control-" in name for name in harness.gateway.created)
