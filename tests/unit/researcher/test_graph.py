"""The study graph on a scripted planner, a fake gateway and a fake launcher: node order,
the repair loop, the budget stop, interventions, crashed clients, resume and --ask.

The graph is driven as `researcher start/resume` drives it (`researcher.study._drive`,
checkpointed in the study's graph.sqlite), with the dry run and the held-out evaluation
replaced by scripted functions, so a whole study takes well under a second of fake time.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from rich.console import Console

import researcher.nodes.launch
from experiments_db import crud
from experiments_db.db import make_engine, session_scope
from experiments_db.migrate import upgrade
from researcher import study as study_module
from researcher.context import StudyContext
from researcher.graph import build_graph
from researcher.nodes.evaluate import baselines
from researcher.nodes.validate import dry_run
from researcher.plan import Framing
from researcher.settings import StudySettings
from tests.unit.researcher.fakes import (
    BROKEN_WORKFLOW,
    GOOD_WORKFLOW,
    TRACEBACK,
    FakeGateway,
    FakeLauncher,
    ScriptedPlanner,
    scripted_dry_run,
    small_design,
)

QUESTION = "does mixing tool use into arithmetic help?"
CLEAN_PHASES = ["start", "frame", "hypotheses", "design", "write_code", "validate",
                "launch", "monitor", "launch", "monitor", "evaluate", "analyse", "decide",
                "report"]  # fmt: skip


class Harness:
    """One study in tmp_path with fakes behind it, and what the tests ask of it."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        url = f"sqlite:///{tmp_path / 'researcher.db'}"
        upgrade(url)
        self.engine = make_engine(url)
        self.gateway = FakeGateway()
        self.launcher = FakeLauncher()
        self.planner = ScriptedPlanner()
        self.dry_runs: list[tuple[str, str]] = []
        self.dry_run_timeouts: list[float | None] = []
        self.evaluated: list[str] = []
        monkeypatch.setattr("researcher.nodes.validate.dry_run",
                            scripted_dry_run(self.dry_runs, self.dry_run_timeouts))  # fmt: skip
        monkeypatch.setattr("researcher.nodes.evaluate.evaluate_policy", self._evaluate)
        self.ctx: StudyContext | None = None

    def _evaluate(self, url, model, *, family, n, api_key=None):
        self.evaluated.append(model)
        return [1.0, 0.0] * (n // 2) if "control" in model else [1.0] * n

    def create(self, **settings) -> StudyContext:
        # the pilot round has its own tests (test_pilot_graph.py); these follow one round
        settings = {"question": QUESTION, "budget_s": 3600.0, "gateway": self.gateway.url,
                    "seeds": 1, "pilot": False, **settings}  # fmt: skip
        row = study_module.create_study(self.engine, StudySettings(**settings))
        self.ctx = self.context(row.id)
        return self.ctx

    def context(self, study_id: str) -> StudyContext:
        row = study_module.get_study(self.engine, study_id)
        return StudyContext(
            study_id=row.id, settings=study_module.load_settings(row),
            directory=Path(row.directory), db=self.engine, gateway=self.gateway,
            planner=self.planner, launcher=self.launcher, console=Console(file=io.StringIO()),
            step_seconds=1.0, poll_s=0.001,
        )  # fmt: skip

    def drive(self, ctx: StudyContext | None = None) -> int:
        ctx = ctx or self.ctx
        return study_module._drive(ctx, ctx.console)

    def stream(self, ctx: StudyContext, *, until) -> dict | None:
        """Run the graph as _drive does until `until(update)` says stop; the last update."""
        path = ctx.directory / "graph.sqlite"
        with sqlite3.connect(path, check_same_thread=False) as connection:
            graph = build_graph().compile(checkpointer=SqliteSaver(connection))
            config = {"configurable": {"thread_id": ctx.study_id}, "recursion_limit": 10_000}
            for update in graph.stream({"study_id": ctx.study_id, "notes": []}, config,
                                       context=ctx, durability="sync", stream_mode="updates"):  # fmt: skip
                if until(update):
                    return update
            return None

    def graph_state(self, ctx: StudyContext):
        with sqlite3.connect(ctx.directory / "graph.sqlite", check_same_thread=False) as connection:
            graph = build_graph().compile(checkpointer=SqliteSaver(connection))
            return graph.get_state({"configurable": {"thread_id": ctx.study_id}})

    def study(self):
        return study_module.get_study(self.engine, self.ctx.study_id)

    def events(self):
        with session_scope(self.engine) as session:
            return crud.events(session, study_id=self.ctx.study_id)

    def experiments(self):
        with session_scope(self.engine) as session:
            return {e.arm: e for e in crud.experiments(session, study_id=self.ctx.study_id)}

    def interventions(self, **filters):
        with session_scope(self.engine) as session:
            return crud.interventions(session, study_id=self.ctx.study_id, **filters)

    def report_row(self):
        with session_scope(self.engine) as session:
            return crud.latest_report(session, study_id=self.ctx.study_id)

    def intervene(self, kind: str, payload: dict | None = None, **fields) -> None:
        with session_scope(self.engine) as session:
            crud.add_intervention(session, study_id=self.ctx.study_id, kind=kind,
                                  payload=payload, actor=fields.pop("actor", "human"), **fields)  # fmt: skip


def phases(events) -> list[str]:
    """The events' phases with consecutive repeats folded."""
    folded: list[str] = []
    for event in events:
        if not folded or folded[-1] != event.phase:
            folded.append(event.phase)
    return folded


def _blank_figure(ctx, path: Path) -> Path:
    path.write_bytes(b"\x89PNG\r\n\x1a\n")
    return path


@pytest.fixture
def real_figures() -> None:
    """Ask for it to have the report draw its figures with matplotlib."""


@pytest.fixture
def harness(tmp_path, monkeypatch, request) -> Harness:
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    if "real_figures" not in request.fixturenames:  # matplotlib costs a second a report
        monkeypatch.setattr("researcher.report.figures.reward_curves", _blank_figure)
        monkeypatch.setattr("researcher.report.figures.heldout_accuracy", _blank_figure)
        monkeypatch.setattr("researcher.report.figures.seed_curves", _blank_figure)
    return Harness(tmp_path, monkeypatch)


# -- a clean study ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_clean_study_runs_every_node_in_order_and_finishes_with_a_report(harness, real_figures):
    ctx = harness.create()

    assert harness.drive() == 0

    assert phases(harness.events()) == CLEAN_PHASES
    assert harness.study().status == "finished"
    report = harness.report_row()
    assert report is not None and report.conclusion.startswith("the scripted conclusion")
    assert Path(report.html_path) == ctx.directory / "report" / "report.html"
    assert Path(report.html_path).exists() and Path(report.markdown_path).exists()
    runs = [e.id for e in harness.experiments().values()]
    assert sorted(harness.gateway.create_calls) == sorted(runs)  # one create_run each
    assert all(harness.gateway.runs[r].status == "finished" for r in runs)
    untrained = [harness.study().model]  # the baseline: the base model, once
    assert sorted(harness.evaluated) == sorted([*(f"{r}/policy" for r in runs), *untrained])
    assert {e.status for e in harness.experiments().values()} == {"finished"}
    analysis = harness.graph_state(ctx).values["analyses"][-1]
    assert analysis["baseline"] is not None and set(analysis["learned"]) == {"control", "mixed"}


def test_the_untrained_baseline_is_evaluated_once_and_reused_when_evaluate_runs_again(harness):
    ctx = harness.create()
    harness.drive()
    framing = Framing.model_validate(harness.graph_state(ctx).values["framing"])
    before = len(harness.evaluated)

    again = baselines(ctx, small_design(), framing, [])

    assert len(harness.evaluated) == before  # read back from its event, not evaluated again
    assert [b.status for b in again] == ["baseline"] and again[0].run == framing.model
    assert again[0].eval_outcomes


def test_each_arm_is_dry_run_once_and_its_client_started_once_in_a_clean_study(harness):
    harness.create()

    harness.drive()

    assert len(harness.dry_runs) == 2
    assert [c["arm"] for c in harness.planner.called("write_workflow")] == ["control", "mixed"]
    for row in harness.experiments().values():
        assert len(harness.launcher.starts_for(row.id)) == 1


# -- the repair loop --------------------------------------------------------------------------


def test_a_broken_workflow_is_rewritten_with_its_traceback_and_then_runs(harness):
    harness.planner.workflows = {"mixed": [BROKEN_WORKFLOW, GOOD_WORKFLOW]}
    harness.create()

    assert harness.drive() == 0

    mixed = [c for c in harness.planner.called("write_workflow") if c["arm"] == "mixed"]
    assert [c["feedback"] for c in mixed] == [None, TRACEBACK]
    control = [c for c in harness.planner.called("write_workflow") if c["arm"] == "control"]
    assert len(control) == 1  # a passing arm is not rewritten
    assert [source for _, source in harness.dry_runs].count(BROKEN_WORKFLOW) == 1
    assert any(e.kind == "problem" and e.phase == "validate" for e in harness.events())
    rows = harness.experiments()
    assert Path(rows["mixed"].workflow_path).read_text() == GOOD_WORKFLOW
    assert {e.status for e in rows.values()} == {"finished"}
    assert harness.study().status == "finished"


def test_an_always_broken_arm_is_dropped_after_max_repairs_and_the_other_still_runs(harness):
    harness.planner.workflows = {"mixed": [BROKEN_WORKFLOW]}
    harness.create(max_repairs=2)

    assert harness.drive() == 0

    mixed = [c for c in harness.planner.called("write_workflow") if c["arm"] == "mixed"]
    assert len(mixed) == 3  # the first try and 2 repairs
    errors = [e for e in harness.events() if e.kind == "error"]
    assert len(errors) == 1 and "mixed" in errors[0].message and "dropped" in errors[0].message
    rows = harness.experiments()
    assert rows["mixed"].status == "failed" and "BROKEN" in rows["mixed"].error
    assert rows["control"].status == "finished"
    assert harness.gateway.created == [rows["control"].id]
    assert harness.report_row() is not None


def test_when_every_arm_stays_broken_the_report_says_no_valid_workflow_and_nothing_runs(harness):
    harness.planner.workflows = {"control": [BROKEN_WORKFLOW], "mixed": [BROKEN_WORKFLOW]}
    harness.create(max_repairs=1)

    assert harness.drive() == 1  # nothing could run: the study failed

    assert harness.study().status == "failed"
    assert "no arm's workflow passed its dry run" in harness.study().error
    assert harness.gateway.create_calls == []
    assert harness.launcher.started == []
    assert harness.graph_state(harness.ctx).values["outcome"] == "no valid workflow"
    report = harness.report_row()
    assert report is not None and "no arm's workflow passed its dry run" in report.conclusion
    # each arm's error is named: the first line of what its dry run printed
    assert "control: Traceback (most recent call last):" in report.conclusion
    assert harness.planner.called("decide") == []
    assert phases(harness.events())[-2:] == ["validate", "report"]


# -- the budget -------------------------------------------------------------------------------


def test_a_spent_budget_stops_the_live_run_and_the_study_still_reports(harness):
    harness.planner.plan = small_design(steps=1000)
    ctx = harness.create(budget_s=60.0)

    def spend_budget(gateway, run):
        if run.step == 2:  # two steps in, the budget is gone
            with ctx.session() as session:
                crud.update_study(session, study_id=ctx.study_id, budget_used_s=60.0)

    harness.gateway.on_get_run = spend_budget

    assert harness.drive() == 0

    rows = harness.experiments()
    first, second = rows["control"], rows["mixed"]
    assert harness.gateway.stopped[0] == first.id
    assert first.status == "stopped" and "budget" in first.error
    assert second.status == "stopped" and "budget" in second.error
    assert harness.gateway.created == [first.id]  # the second run never started
    stops = harness.interventions(kinds=["stop_run"])
    assert [i.actor for i in stops] == ["researcher"] and "budget" in stops[0].reason
    assert harness.study().status == "finished" and harness.report_row() is not None
    md = Path(harness.report_row().html_path).with_suffix(".md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| `{first.id}` |"))
    assert f"| stopped ({first.error}) |" in row and " of 1000 |" in row, row


def test_a_run_that_trains_more_gets_a_larger_share_of_the_training_time(harness):
    """A steps study, its 40-step arm first: the training time left is shared over the runs
    not yet done in proportion to their steps, so the 40-step run gets 4/5 of it — an equal
    share (1/2) would stop it near step 20 and compare two runs of about the same length."""
    design = small_design(steps=40, arms=("long", "short"))
    design.arms[0].run["max_steps"], design.arms[1].run["max_steps"] = 40, 10
    harness.planner.plan = design
    ctx = harness.create(budget_s=1000.0)

    update = harness.stream(ctx, until=lambda update: "monitor" in update)
    progress = update["monitor"]["progress"]
    rows = harness.experiments()
    training_s = 1000.0 * 0.8  # before a pilot prices runs: 15% evaluation, 5% report
    share = progress[rows["long"].id][3]
    assert share == pytest.approx(0.8 * training_s, rel=0.02)  # 40 of 50 steps
    assert rows["short"].id not in progress  # shared when it starts, over what is left then


def test_the_reports_reproduction_table_gives_each_arm_its_own_steps(harness):
    design = small_design(steps=3, arms=("long", "short"))
    design.arms[0].run["max_steps"], design.arms[1].run["max_steps"] = 3, 1
    harness.planner.plan = design
    harness.create()

    assert harness.drive() == 0

    md = Path(harness.report_row().html_path).with_suffix(".md").read_text()
    rows = {arm: next(line for line in md.splitlines() if f"-{arm}-s0` |" in line)
            for arm in ("long", "short")}  # fmt: skip
    assert '"max_steps": 3' in rows["long"] and '"max_steps": 1' in rows["short"], rows


def test_runs_that_each_have_a_slot_may_each_take_all_the_training_time_left(harness):
    # two runs in two slots train at once: a 1:4 share of the slots' time would hold the
    # short run to 2/5 of the time its slot has, and give the long one more than is left
    design = small_design(steps=40, arms=("long", "short"))
    design.arms[0].run["max_steps"], design.arms[1].run["max_steps"] = 40, 10
    harness.planner.plan = design
    ctx = harness.create(budget_s=1000.0, parallel_runs=2)

    update = harness.stream(ctx, until=lambda update: "monitor" in update)
    progress = update["monitor"]["progress"]
    shares = {arm: progress[row.id][3] for arm, row in harness.experiments().items()}
    assert shares["long"] == pytest.approx(800.0, rel=0.02)
    assert shares["short"] == pytest.approx(800.0, rel=0.02)


def spend(ctx: StudyContext, seconds: float) -> None:
    with ctx.session() as session:
        crud.update_study(session, study_id=ctx.study_id, budget_used_s=seconds)


def test_each_dry_run_may_take_its_share_of_the_budget_left_not_validate_timeout_s(
    harness, monkeypatch
):
    # a slow rollout timed out at validate_timeout_s (300 s) per arm spent a 4-minute budget
    # twice over before anything trained
    ctx = harness.create(budget_s=1200.0)
    spend(ctx, 899.0)
    left: list[float] = []  # the budget left as each dry run starts (the study's clock runs)
    scripted = scripted_dry_run(harness.dry_runs, harness.dry_run_timeouts)

    def dry_run_(ctx, *args, **kwargs):
        left.append(ctx.budget_left())
        return scripted(ctx, *args, **kwargs)

    monkeypatch.setattr("researcher.nodes.validate.dry_run", dry_run_)

    assert harness.drive() == 0

    # about 300 s left less the 60 s reserve (`budget.reserve_s`): 120 s each for two arms, and the
    # second gets what the first left (a scripted dry run takes no time)
    assert harness.dry_run_timeouts == [(left[0] - 60) // 2, (left[1] - 60) // 1]
    assert 115 <= harness.dry_run_timeouts[0] <= 120


def test_a_mostly_spent_budget_still_gives_each_dry_run_the_least_one_needs(harness):
    # 41 s left of 240, 24 s of them the report's: each arm is still checked, with 60 s
    # (a loaded two-core box needs that much for swarm run to start and run four episodes)
    ctx = harness.create(budget_s=240.0)
    spend(ctx, 199.0)

    assert harness.drive() == 0

    assert harness.dry_run_timeouts == [60.0, 60.0]
    assert harness.study().status == "finished" and harness.report_row() is not None


def test_a_dry_run_cut_by_its_share_of_the_budget_says_which_bound_applied(harness, monkeypatch):
    ctx = harness.create()
    given: list[float] = []

    def never_ends(command, *, timeout_s, **_):
        given.append(timeout_s)
        return None, "episodes: 0/4 done"

    monkeypatch.setattr("researcher.nodes.validate.run_contained", never_ends)
    workflow = ctx.directory / "workflow.py"
    workflow.write_text(GOOD_WORKFLOW)

    share = dry_run(ctx, str(workflow), "dry-share", {}, timeout_s=75)
    capped = dry_run(ctx, str(workflow), "dry-capped", {}, timeout_s=1620)

    assert given == [75, 300]
    assert share.splitlines()[0] == (
        "the dry run did not end within 75 s (the share of the budget left for this arm's dry "
        "run; validate_timeout_s is 300): does rollout() ever return, or block the event loop? "
        "A larger --budget gives each dry run longer"
    )
    assert capped.splitlines()[0] == (
        "the dry run did not end within 300 s (does rollout() ever return, or block the event "
        "loop?)"
    )
    assert harness.gateway.stopped == ["dry-share", "dry-capped"]


# -- interventions ----------------------------------------------------------------------------


def test_a_human_note_is_read_at_monitoring_and_reaches_the_decision_and_the_report(harness):
    harness.create()
    harness.intervene("note", {"text": "watch the KL of the mixed arm"})

    assert harness.drive() == 0

    [note] = harness.interventions(kinds=["note"])
    assert note.status == "applied"
    [decide] = harness.planner.called("decide")
    assert decide["notes"] == ["watch the KL of the mixed arm"]
    markdown = Path(harness.report_row().markdown_path).read_text()
    assert "watch the KL of the mixed arm" in markdown
    assert any(e.kind == "note" and e.phase == "monitor" for e in harness.events())


def test_a_note_added_while_a_run_trains_is_read_at_the_next_look(harness):
    harness.planner.plan = small_design(steps=4)
    harness.create()

    def note_at_step_two(gateway, run):
        if run.step == 2 and not harness.interventions(kinds=["note"]):
            harness.intervene("note", {"text": "late note"})

    harness.gateway.on_get_run = note_at_step_two

    assert harness.drive() == 0

    assert harness.planner.called("decide")[0]["notes"] == ["late note"]
    assert harness.planner.called("design")[0]["notes"] == []


def test_a_patch_run_intervention_edits_the_run_at_the_gateway(harness):
    harness.planner.plan = small_design(steps=4)
    harness.create()
    run = f"{harness.ctx.study_id}-r1-control-s0"
    harness.intervene("patch_run", {"run": run, "fields": {"lr": 3e-6}}, reason="too fast")

    assert harness.drive() == 0

    assert harness.gateway.patches == [(run, {"lr": 3e-6})]
    [patch] = harness.interventions(kinds=["patch_run"])
    assert patch.status == "applied"


def test_a_nan_loss_halves_the_learning_rate_once(harness):
    harness.planner.plan = small_design(steps=6)
    harness.create()
    run = f"{harness.ctx.study_id}-r1-control-s0"
    harness.gateway.nan_loss_at[run] = {2}

    assert harness.drive() == 0

    assert harness.gateway.patches == [(run, {"lr": 5e-6})]
    assert run not in harness.gateway.stopped
    assert harness.experiments()["control"].status == "finished"
    [lowered] = harness.interventions(kinds=["patch_run"])
    assert lowered.actor == "researcher" and "loss is nan at step 2" in lowered.reason


def test_a_nan_loss_that_comes_back_after_the_lower_learning_rate_stops_the_run(harness):
    harness.planner.plan = small_design(steps=10)
    harness.create()
    run = f"{harness.ctx.study_id}-r1-control-s0"
    harness.gateway.nan_loss_at[run] = {2, 5}

    assert harness.drive() == 0

    assert harness.gateway.patches == [(run, {"lr": 5e-6})]
    assert run in harness.gateway.stopped
    control = harness.experiments()["control"]
    assert control.status == "stopped" and "loss is nan at step 5" in control.error
    assert harness.study().status == "finished"


# -- crashed clients --------------------------------------------------------------------------


def test_a_crashed_client_is_restarted_with_the_next_attempt_and_the_restart_recorded(harness):
    harness.planner.plan = small_design(steps=5)
    harness.create()
    original_start = harness.launcher.start

    def start_then_crash_the_first(command, **kwargs):
        info = original_start(command, **kwargs)
        if len(harness.launcher.started) == 1:
            harness.launcher.crashed.add(info.pid)
        return info

    harness.launcher.start = start_then_crash_the_first

    assert harness.drive() == 0

    control = harness.experiments()["control"]
    assert control.attempt == 1 and control.status == "finished"
    assert len(harness.launcher.starts_for(control.id)) == 2
    [restart] = harness.interventions(kinds=["restart_client"])
    assert restart.actor == "researcher" and restart.status == "applied"
    assert restart.payload["attempt"] == 1 and "exited with 1" in restart.reason
    with session_scope(harness.engine) as session:
        processes = crud.client_processes(session, experiment_id=control.id)
    assert [(p.attempt, p.exit_status) for p in processes] == [(0, 1), (1, -15)]


def test_a_client_that_keeps_crashing_fails_its_experiment_after_max_client_restarts(harness):
    harness.planner.plan = small_design(steps=50)
    harness.launcher.crash_every_start = True
    harness.create(max_client_restarts=2)

    assert harness.drive() == 0

    rows = harness.experiments()
    for row in rows.values():
        assert row.status == "failed" and "client kept dying" in row.error
        assert len(harness.launcher.starts_for(row.id)) == 3  # attempts 0, 1, 2
        assert row.id in harness.gateway.stopped
    assert len(harness.interventions(kinds=["restart_client"])) == 4
    assert sum(e.kind == "error" and e.phase == "act" for e in harness.events()) == 2
    assert harness.study().status == "finished"


# -- live code edits --------------------------------------------------------------------------


def test_a_workflow_whose_episodes_keep_aborting_is_rewritten_live_and_its_client_restarted(
    harness,
):
    harness.planner.plan = small_design(steps=6)
    fixed = GOOD_WORKFLOW + "# fixed after the log\n"
    harness.planner.workflows["control"] = [GOOD_WORKFLOW, fixed]
    harness.create()

    def abort_early_episodes(gateway, run):
        if run.name.endswith("control-s0") and run.step == 2 and run.aborted == 0:
            run.aborted = 9  # the first code's rollouts fail

    harness.gateway.on_get_run = abort_early_episodes
    assert harness.drive() == 0

    control = harness.experiments()["control"]
    assert control.status == "finished" and control.attempt == 1
    assert Path(control.workflow_path).read_text() == fixed
    rewrites = [
        c
        for c in harness.planner.calls
        if c[0] == "write_workflow" and c[1]["arm"] == "control" and c[1]["feedback"]
    ]
    assert len(rewrites) == 1 and "9 episodes aborted" in rewrites[0][1]["feedback"]
    [edit] = harness.interventions(kinds=["edit_code"])
    assert edit.actor == "researcher" and edit.payload["from"] != edit.payload["to"]
    assert edit.payload["to"] == control.code_version
    assert len(harness.launcher.starts_for(control.id)) == 2
    assert any("edited the workflow live" in e.message for e in harness.events())
    assert harness.experiments()["mixed"].attempt == 0  # the healthy arm was left alone


def control_keeps_aborting(gateway, run):
    """The control's rollouts fail at every look: 5 more aborted episodes each time."""
    if run.name.endswith("control-s0"):
        run.aborted += 5


@pytest.mark.slow
def test_a_workflow_that_keeps_failing_after_max_repairs_live_edits_fails_its_run(harness):
    harness.planner.plan = small_design(steps=60)
    harness.planner.workflows["control"] = [GOOD_WORKFLOW, GOOD_WORKFLOW + "# edit 1\n"]
    harness.create(max_repairs=1)

    harness.gateway.on_get_run = control_keeps_aborting
    assert harness.drive() == 0

    control = harness.experiments()["control"]
    assert control.status == "failed" and "workflow kept failing" in control.error
    assert len(harness.interventions(kinds=["edit_code"])) == 1
    assert control.id in harness.gateway.stopped
    assert harness.experiments()["mixed"].status == "finished"


@pytest.mark.slow
def test_a_failing_workflow_the_planner_would_write_again_unchanged_is_stopped_at_once(harness):
    # a user's own workflow (never edited) or a template: the same code fails the same way
    harness.planner.plan = small_design(steps=60)
    harness.create(max_repairs=2)

    harness.gateway.on_get_run = control_keeps_aborting
    assert harness.drive() == 0

    control = harness.experiments()["control"]
    assert control.status == "failed" and "workflow kept failing" in control.error
    assert harness.interventions(kinds=["edit_code"]) == []  # no edit that changes nothing
    assert len(harness.launcher.starts_for(control.id)) == 1  # never restarted on it
    assert any("cannot be edited" in e.message for e in harness.events())
    assert harness.experiments()["mixed"].status == "finished"


# -- resume -----------------------------------------------------------------------------------


def test_a_study_interrupted_while_monitoring_resumes_without_creating_or_starting_twice(harness):
    harness.planner.plan = small_design(steps=4)
    ctx = harness.create()

    last = harness.stream(ctx, until=lambda update: "monitor" in update)
    assert last is not None
    running = harness.experiments()["control"]
    assert running.status == "running" and harness.gateway.created == [running.id]

    resumed = harness.context(ctx.study_id)
    assert harness.drive(resumed) == 0

    assert harness.study().status == "finished"
    assert sorted(harness.gateway.created) == sorted(harness.gateway.create_calls)
    for row in harness.experiments().values():
        assert harness.gateway.create_calls.count(row.id) == 1
        assert len(harness.launcher.starts_for(row.id)) == 1
    assert any(e.phase == "resume" for e in harness.events())
    assert len(harness.planner.called("frame")) == 1  # finished nodes are not run again
    assert harness.report_row() is not None


def test_a_researcher_killed_after_starting_a_client_adopts_it_on_resume(harness, monkeypatch):
    ctx = harness.create()
    real_update = researcher.nodes.launch.update_experiment

    def killed_before_running(ctx_, experiment, **fields):
        if fields.get("status") == "running":
            raise KeyboardInterrupt  # kill -9 between starting the client and recording it ran
        return real_update(ctx_, experiment, **fields)

    monkeypatch.setattr(researcher.nodes.launch, "update_experiment", killed_before_running)
    with pytest.raises(KeyboardInterrupt):
        harness.stream(ctx, until=lambda update: False)
    monkeypatch.setattr(researcher.nodes.launch, "update_experiment", real_update)
    control = harness.experiments()["control"]
    assert control.status == "launching" and len(harness.launcher.starts_for(control.id)) == 1

    harness.launcher.always_alive = True  # the orphaned client still runs
    assert harness.drive(harness.context(ctx.study_id)) == 0

    assert len(harness.launcher.starts_for(control.id)) == 1
    adopted = [e for e in harness.events() if "adopted client" in e.message]
    assert len(adopted) == 1 and control.id in adopted[0].message
    assert harness.gateway.created.count(control.id) == 1
    assert harness.study().status == "finished"


# -- --ask ------------------------------------------------------------------------------------


def test_with_ask_the_study_waits_at_approve_and_an_approve_intervention_resumes_it(harness):
    ctx = harness.create(ask=True)

    harness.stream(ctx, until=lambda update: False)
    waiting = harness.graph_state(ctx)
    assert waiting.next == ("approve",) and waiting.interrupts
    assert harness.planner.called("write_workflow") == []
    assert harness.gateway.create_calls == []

    harness.intervene("approve", reason="looks fine")
    assert harness.drive(harness.context(ctx.study_id)) == 0

    assert [i.status for i in harness.interventions(kinds=["approve"])] == ["applied"]
    assert any(e.message == "design approved" for e in harness.events())
    assert len(harness.gateway.created) == 2
    assert harness.study().status == "finished"


def test_with_ask_a_rejected_design_ends_with_a_report_and_no_runs(harness):
    harness.create(ask=True)
    harness.intervene("reject", reason="too few seeds")

    assert harness.drive() == 0

    assert harness.gateway.create_calls == [] and harness.launcher.started == []
    assert harness.dry_runs == []
    assert {e.status for e in harness.experiments().values()} == {"rejected"}
    report = harness.report_row()
    assert report is not None and "rejected" in report.conclusion
    rejected = [e for e in harness.events() if e.message == "design rejected"]
    assert len(rejected) == 1 and rejected[0].reason == "too few seeds"
    assert harness.study().status == "finished"


@pytest.mark.slow
def test_a_paused_study_pauses_its_live_runs_and_resumes_them_when_set_running(harness):
    import threading
    import time as clock

    ctx = harness.create()
    resumer: list[threading.Thread] = []

    def pause_once(gateway, run):
        if resumer or run.step < 1:
            return
        with session_scope(harness.engine) as session:
            crud.update_study(session, study_id=ctx.study_id, status="paused")

        def resume_later():
            # resume once the monitor has paused the run (a fixed delay raced it under load)
            deadline = clock.monotonic() + 120
            while not harness.gateway.paused and clock.monotonic() < deadline:
                clock.sleep(0.05)
            with session_scope(harness.engine) as session:
                crud.update_study(session, study_id=ctx.study_id, status="running")

        resumer.append(threading.Thread(target=resume_later))
        resumer[0].start()

    harness.gateway.on_get_run = pause_once
    assert harness.drive() == 0
    resumer[0].join()
    assert len(harness.gateway.paused) == 1 and harness.gateway.resumed == harness.gateway.paused
    messages = [e.message for e in harness.events() if e.phase == "pause"]
    assert (
        messages[0].startswith("study paused; 1 run(s) paused") and messages[1] == "study resumed"
    )
    assert harness.study().status == "finished"
