# ruff: noqa: F811 - the harness fixture is imported from test_graph
"""What the report says about a run's health beyond its scores: the share of training
episodes the rollout failed on, with the cause and its place, beside the verdict too; the
reward the clients saw when every group's rewards were equal; what a one-seed interval is
over; checkpoints deleted only for runs that ran."""

from __future__ import annotations

from pathlib import Path

from researcher.disk import DELETED
from researcher.report import write_report
from researcher.report.context import ReportContext, RunEpisodes
from tests.unit.researcher.fakes import BROKEN_WORKFLOW
from tests.unit.researcher.test_graph import harness  # noqa: F401 - fixture
from tests.unit.researcher.test_report import full_context


def test_runs_that_never_ran_are_not_said_to_have_had_their_checkpoints_deleted(harness):
    harness.planner.workflows = {"control": [BROKEN_WORKFLOW], "mixed": [BROKEN_WORKFLOW]}
    harness.create(max_repairs=1)  # every arm fails its dry run: no run is ever launched

    harness.drive()

    rows = harness.experiments().values()
    assert rows and all(row.run_name is None for row in rows)
    assert any(e.data and "deleted_weights" not in e.data for e in harness.events())
    markdown = Path(harness.report_row().markdown_path).read_text()
    assert all(f"| `{row.id}` |" in markdown for row in rows)  # the reproducibility table
    assert DELETED not in markdown


TRACEBACK_FIRST = """\
episode ep-0001 (task train1): rollout raised
Traceback (most recent call last):
  File "/home/me/wf.py", line 20, in rollout
    number = int(re.findall(r"-?\\d+", text)[0])
IndexError: list index out of range
"""


def failing_on_a_third(ctx):
    """on_get_run: a third of the run's episodes abort, as the client prints them."""

    def hook(gateway, run) -> None:
        if "-check" in run.name or run.status != "running":
            return
        run.aborted = run.step + 1  # finished is 2 per step: a third of them abort
        [log] = (ctx.directory / "logs").glob(f"{run.name}-a*.log")
        with log.open("a") as out:
            if run.aborted == 1:
                out.write(TRACEBACK_FIRST)
            else:
                out.write(f"episode ep-{run.aborted:04d} (task train{run.aborted}): rollout raised "
                          f"IndexError: list index out of range (again at /home/me/wf.py:20, "
                          f"{run.aborted} times)\n")  # fmt: skip
            out.write(f"episodes: {run.step * 3 + 1} done · 5.00 ep/s · reward 0.250 (last "
                      f"{run.step * 2}) · policy v{run.step} · {run.aborted} aborted\n")  # fmt: skip

    return hook


def test_a_run_whose_rollout_fails_on_a_third_of_its_episodes_is_reported_with_cause_and_place(
    harness,
):
    ctx = harness.create()
    harness.gateway.on_get_run = failing_on_a_third(ctx)

    harness.drive()

    rows = harness.experiments()
    # kept while the runs were live (the last live look: step 2, 4 finished, 2 aborted), for a report written after the gateway is gone
    assert {row.config["episodes"]["aborted"] for row in rows.values()} == {2}
    markdown = Path(harness.report_row().markdown_path).read_text()
    conclusion = markdown.split("## Conclusion")[1].split("## Hypotheses")[0]
    went_wrong = markdown.split("## What went wrong along the way")[1].split("## Timeline")[0]
    for row in rows.values():
        line = (f"run `{row.id}` ({row.arm}, seed 0): 2 of 6 training episodes aborted (33%) "
                f"— most often: rollout raised IndexError: list index out of range at wf.py:20 "
                f"(task train1): 3")  # fmt: skip
        assert line in went_wrong
        assert line in conclusion
    assert "Caveat: the rollout failed on many training episodes" in conclusion
    assert "Caveat" in Path(harness.report_row().html_path).read_text()


def test_a_clean_study_says_nothing_about_aborted_episodes(harness):
    harness.create()

    harness.drive()

    assert {row.config["episodes"]["aborted"] for row in harness.experiments().values()} == {0}
    markdown = Path(harness.report_row().markdown_path).read_text()
    assert "aborted" not in markdown.split("## Timeline")[0] and "Caveat" not in markdown


def conclusion_of(ctx: ReportContext, out: Path) -> str:
    markdown = write_report(ctx, out).markdown.read_text()
    return markdown.split("## Conclusion")[1].split("## Hypotheses")[0]


def test_runs_stopped_for_equal_rewards_show_the_reward_their_clients_saw(tmp_path):
    stop = "no learning signal: 20 consecutive batches trained nothing (zero_variance 20)"
    ctx = full_context()
    ctx = ctx.model_copy(update={
        "framing": ctx.framing.model_copy(update={"workflow": "/home/me/wf.py"}),
        "episodes": [RunEpisodes(run=f"r-{arm}", arm=arm, seed=0, finished=321, stop_reason=stop,
                                 recent_reward=0.5, recent_n=50) for arm in ("a", "b")],
    })  # fmt: skip

    markdown = write_report(ctx, tmp_path).markdown.read_text()

    assert ("run `r-a` (a, seed 0) stopped: every group's rewards were equal; the mean reward "
            "of its client's last 50 episodes was 0.500; check what rollout returns") in markdown  # fmt: skip
    assert ("the mean reward their clients saw: run `r-a` (a, seed 0) 0.500, run `r-b` (b, "
            "seed 0) 0.500") in conclusion_of(ctx, tmp_path / "again")  # fmt: skip
    assert "aborted" not in markdown.split("## Timeline")[0]


def test_a_one_seed_interval_is_said_to_be_over_items_not_seeds(tmp_path):
    ctx = full_context()
    [analysis] = ctx.analyses
    one_seed = [c.model_copy(update={"n_seeds": 1}) for c in analysis.comparisons]
    ctx = ctx.model_copy(
        update={"analyses": [analysis.model_copy(update={"comparisons": one_seed})]}
    )

    conclusion = conclusion_of(ctx, tmp_path)

    assert "1 seed per arm): this interval is over the held-out items of one seed per arm, " \
           "not over seeds" in conclusion  # fmt: skip
    assert "no evidence of no effect" in conclusion
    assert "over the held-out items" not in conclusion_of(full_context(), tmp_path / "two")
