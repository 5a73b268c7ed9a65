"""`researcher rerun`: a study's final design replayed into a new study (ReplayPlanner), on
the graph's fakes (scripted planner, fake gateway and launcher) as in test_graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from experiments_db import crud
from experiments_db.db import session_scope
from researcher import study as study_module
from researcher.cli import app
from researcher.errors import ResearcherError
from researcher.plan import Analysis, Decision, Framing, Hypothesis
from researcher.planner.replay import (
    ReplayPlanner,
    load_replay,
    pinned_design,
    replay_record,
)
from researcher.settings import StudySettings
from tests.unit.researcher.fakes import GOOD_WORKFLOW, ScriptedPlanner, small_design
from tests.unit.researcher.test_graph import Harness, _blank_figure


class TwoLookPlanner(ScriptedPlanner):
    """Refines once: H1 on seed 0 (look 1 of 3), then H2 on seeds 0 and 1 (look 2 of 3)."""

    def __init__(self):
        super().__init__(small_design().model_copy(update={"look": 1, "max_looks": 3}))

    def design(self, framing, hypothesis, **kwargs):
        super().design(framing, hypothesis, **kwargs)
        if hypothesis.key == "H1":
            return self.plan
        return self.plan.model_copy(update={"hypothesis": "H2", "seeds": [0, 1], "look": 2})

    def write_workflow(self, framing, design, arm, *, seed, feedback=None):
        super().write_workflow(framing, design, arm, seed=seed, feedback=feedback)
        return GOOD_WORKFLOW + f"# {arm.name} seed {seed} look {design.look}\n"

    def decide(self, framing, hypothesis, analysis, *, notes, budget_left_s, round):
        if round == 1:
            follow = Hypothesis(key="H2", statement="mixing helps", prediction="mixed > control",
                                refuted_if="mixed <= control (retested)", parent="H1")  # fmt: skip
            return Decision(action="refine", reason="inconclusive", follow_up=follow)
        return super().decide(framing, hypothesis, analysis, notes=notes,
                              budget_left_s=budget_left_s, round=round)  # fmt: skip


@pytest.fixture
def harness(tmp_path, monkeypatch) -> Harness:
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    for figure in ("reward_curves", "heldout_accuracy", "seed_curves"):
        monkeypatch.setattr(f"researcher.report.figures.{figure}", _blank_figure)
    return Harness(tmp_path, monkeypatch)


def finished_original(harness: Harness) -> str:
    harness.planner = TwoLookPlanner()
    ctx = harness.create()
    assert harness.drive() == 0
    return ctx.study_id


@pytest.mark.slow
def test_a_rerun_replays_the_final_design_with_every_seed_judged_once(harness):
    original = finished_original(harness)
    first = harness.graph_state(harness.ctx).values["designs"][-1]

    record, settings = study_module.prepare_replay(harness.engine, original)
    new = study_module.create_replay(harness.engine, record, settings)
    harness.planner = ReplayPlanner(load_replay(new.directory))
    created_before = len(harness.gateway.created)
    ctx = harness.context(new.id)
    harness.ctx = ctx
    assert harness.drive() == 0

    state = harness.graph_state(ctx).values
    assert len(state["designs"]) == 1  # judged once: no second look
    replayed = state["designs"][0]
    assert [a["name"] for a in replayed["arms"]] == [a["name"] for a in first["arms"]]
    assert [a["run"] for a in replayed["arms"]] == [a["run"] for a in first["arms"]]
    assert replayed["seeds"] == [0, 1] and replayed["steps"] == first["steps"]
    assert (replayed["look"], replayed["max_looks"]) == (1, 1)
    assert (
        f"Replayed from study {original}'s final design (look 2 of up to 3"
        in replayed["decision_rule"]
    )
    assert [h["key"] for h in state["hypotheses"]] == ["H1"]
    assert state["hypotheses"][0]["refuted_if"] == "mixed <= control"  # the root's words
    new_runs = harness.gateway.created[created_before:]
    assert len(new_runs) == 4 and all(r.startswith(new.id) for r in new_runs)
    with session_scope(harness.engine) as session:
        events = crud.events(session, study_id=new.id)
        rows = crud.experiments(session, study_id=new.id)
    replays = [e for e in events if e.kind == "replays"]
    assert replays and f"replays study {original}'s final design" in replays[0].message
    assert sorted((r.arm, r.seed) for r in rows) == [("control", 0), ("control", 1),
                                                     ("mixed", 0), ("mixed", 1)]  # fmt: skip
    code = {(r.arm, r.seed): open(r.workflow_path).read() for r in rows}
    assert code[("mixed", 1)].endswith("# mixed seed 1 look 2\n")  # the code the original ran
    assert harness.study().planner == f"replay:{original}"
    md = (ctx.directory / "report" / "report.md").read_text()
    assert f"This study replays study `{original}`'s final design ([its report](" in md
    assert f"researcher rerun {new.id}" in md
    assert "/fake-gateway/runs/" in md  # each finished run's export, as the gateway reports it


def test_pinned_design_takes_every_seed_and_states_the_single_look_rule():
    one = small_design().model_copy(update={"look": 1, "max_looks": 3, "seeds": [0]})
    two = one.model_copy(update={"hypothesis": "H2", "look": 2, "seeds": [0, 1]})
    pinned = pinned_design([one, two], original="st-x")
    assert pinned.seeds == [0, 1] and pinned.hypothesis == "H1" and pinned.max_looks == 1
    assert "Sequential seeds" not in pinned.decision_rule
    with pytest.raises(ResearcherError, match="no design to replay"):
        pinned_design([], original="st-x")


def test_the_replay_planner_refuses_a_gateway_without_the_model_and_concludes_once():
    framing = Framing(question="q", family="f", summary="s", model="tiny", planner="template")
    h = Hypothesis(key="H1", statement="s", prediction="p", refuted_if="r")
    planner = ReplayPlanner(replay_record("st-x", framing, [h], [small_design()]))
    assert planner.frame("q", served_models=["tiny"]).planner.startswith("replay of study st-x")
    with pytest.raises(ResearcherError, match="does not serve"):
        planner.frame("q", served_models=["other"])
    analysis = Analysis(arm_means={}, arm_ci={}, comparisons=[], verdict="inconclusive",
                        summary="s", answer="Can't tell: stored.")  # fmt: skip
    decision = planner.decide(framing, h, analysis, notes=[], budget_left_s=1e6, round=1)
    assert decision.action == "conclude" and decision.conclusion == "Can't tell: stored."


def test_rerun_of_an_unknown_study_exits_2_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["rerun", "st-nope", "--yes",
                                      "--db", f"sqlite:///{tmp_path / 'r.db'}"])  # fmt: skip
    assert result.exit_code == 2
    assert "no study 'st-nope'" in result.output


def test_rerun_help_explains_the_replay():
    result = CliRunner().invoke(app, ["rerun", "--help"], env={"COLUMNS": "300"})
    text = " ".join(result.output.split())
    assert result.exit_code == 0
    assert "Replay a study's final design into a NEW study" in text
    assert "every seed the original used over its looks" in text and "--budget" in text


@pytest.mark.slow
def test_a_rerun_of_an_embedded_gateway_study_gets_its_own_embedded_gateway(harness):
    original = finished_original(harness)
    row = study_module.get_study(harness.engine, original)
    settings_file = Path(row.directory) / "settings.json"
    kept = StudySettings.model_validate_json(settings_file.read_text())
    settings_file.write_text(kept.model_copy(update={"gateway": None}).public_json())
    # the embedded gateway's URL is recorded on the study row, and is gone with it
    with session_scope(harness.engine) as session:
        crud.update_study(session, study_id=original, gateway_url="http://127.0.0.1:50877")

    _, settings = study_module.prepare_replay(harness.engine, original, budget_s=90)

    assert settings.gateway is None and settings.budget_s == 90
    assert settings.planner == f"replay:{original}" and settings.question == kept.question
    _, given = study_module.prepare_replay(harness.engine, original, gateway="http://gw:8400")
    assert given.gateway == "http://gw:8400" and given.budget_s == row.budget_s
