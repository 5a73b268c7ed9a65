"""A difficulty level named beside a task is trained and judged at, end to end: `researcher
start` with its embedded gateway serving the `tiny` model (2 arms × 1 seed, a 2-minute
budget) on "… tiny countdown?", checked on what the real components wrote — the generated
workflows, the episodes the gateway recorded, the study's evaluate events and its report.
The study is the session's `finished_tiny_study` (tests/integration/conftest.py: QUESTION
and ARGS below), which test_researcher.py's end-to-end test and the rerun test read too.

The question's factor is zero_variance_groups, not the group size: the random `tiny` model
never solves a countdown task, so every group's rewards are equal, and only the arm that
keeps such groups makes training steps, is evaluated on the held-out split, and so has the
untrained baseline evaluated beside it (with "drop" no arm is evaluated at all).

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher_task_levels.py
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sqlite3
from pathlib import Path

import pytest

from tests.integration.conftest import FinishedStudy
from tests.integration.test_researcher import (
    CHECK_RUN,
    assert_nothing_left_running,
    engine_of,
    recorded,
    researcher,
    tail,
)

pytestmark = pytest.mark.slow

QUESTION = "does keeping zero variance groups help on tiny countdown?"
LEVEL = {"countdown": {"level": "tiny"}}
WORDS = "countdown (level tiny)"
ARGS = ("--budget", "2m", "--model", "tiny", "--seeds", "1")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _episodes(study_dir: Path) -> dict[str, list[tuple[str, str | None]]]:
    """Training run -> (task_id, task_family) of each episode the embedded gateway recorded
    (validate's dry-run runs left out)."""
    with sqlite3.connect(study_dir / "gateway" / "gateway.sqlite") as db:
        rows = db.execute("SELECT run, task_id, task_family FROM episode").fetchall()
    runs: dict[str, list[tuple[str, str | None]]] = {}
    for run, task_id, family in rows:
        if not CHECK_RUN.search(run):
            runs.setdefault(run, []).append((task_id, family))
    return runs


def test_a_study_on_tiny_countdown_trains_and_judges_at_the_tiny_level(
    tmp_path: Path, finished_tiny_study: FinishedStudy
):
    planned = researcher(tmp_path, "plan", QUESTION, *ARGS, "--json")  # a fresh home, as before
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["reading"]["task_levels"] == {"countdown": "tiny"}, plan["reading"]
    assert plan["task_params"] == LEVEL
    assert WORDS in plan["summary"] and WORDS in plan["decision_rule"]

    # `researcher start QUESTION *ARGS`, run once per session (tests/integration/conftest.py)
    home = finished_tiny_study.home
    assert (finished_tiny_study.question, finished_tiny_study.args) == (QUESTION, ARGS)
    code = finished_tiny_study.code
    log = tail(home / "researcher.log", 200)
    assert code == 0, log
    engine = engine_of(home)
    # one study, counted the moment `researcher start` ended (before a rerun adds its own)
    assert len(finished_tiny_study.study_ids) == 1, finished_tiny_study.study_ids
    (study_id,) = finished_tiny_study.study_ids
    study, report, experiments, processes, events = recorded(engine, study_id)
    assert study.status == "finished", (study, log)
    study_dir = Path(study.directory)
    assert len(experiments) == 2, experiments

    # every arm's generated workflow draws its training tasks at the tiny level (2 numbers)
    tiny_ids: dict[str, list[int]] = {}
    for i, experiment in enumerate(experiments):
        source = Path(experiment.workflow_path).read_text()
        assert 'TASK_PARAMS = {"countdown": {"level": "tiny"}}' in source, experiment.arm
        workflow = _load(Path(experiment.workflow_path), f"lvl_workflow_{i}")
        drawn = list(itertools.islice(workflow.tasks("train"), 1000))
        assert {len(task["metadata"]["numbers"]) for task in drawn} == {2}, experiment.arm
        tiny_ids.update((task["id"], task["metadata"]["numbers"]) for task in drawn)

    # ... and the clients trained on those tasks: every episode the gateway recorded is one
    episodes = _episodes(study_dir)
    assert set(episodes) == {e.run_name for e in experiments if e.run_name}, episodes.keys()
    for run, rows in episodes.items():
        assert rows and {family for _, family in rows} == {"countdown"}, run
        strangers = {task_id for task_id, _ in rows} - set(tiny_ids)
        assert not strangers, f"{run} trained on tasks of another level: {sorted(strangers)[:5]}"

    # the held-out evaluation (the trained policy's and the untrained baseline's) ran at tiny
    evaluated = [e for e in events if e.phase == "evaluate" and e.kind == "result"]
    assert evaluated, [e.message for e in events if e.phase == "evaluate"]
    assert all(f"held-out {WORDS} accuracy" in e.message for e in evaluated), evaluated
    [baseline] = [e for e in events if e.phase == "evaluate" and e.kind == "baseline"]
    key = baseline.data["key"]
    assert (key["family"], key.get("task_params")) == ("countdown", {"level": "tiny"}), key
    assert len(baseline.data["outcomes"]) == key["n"] > 0, baseline.data
    assert f"held-out {WORDS}" in baseline.message
    results = [e.result for e in experiments if e.result and e.result.get("eval_outcomes")]
    assert results and all(len(r["eval_outcomes"]) == key["n"] for r in results), results

    # the report and the status name the level
    assert report is not None
    markdown = Path(report.markdown_path).read_text()
    assert f"tasks of `{WORDS}` per run" in markdown  # the design section's held-out line
    assert f"{WORDS} 1" in markdown  # each arm's training tasks
    assert WORDS in Path(report.html_path).read_text()
    status = researcher(home, "status", study_id)
    assert status.returncode == 0, status.stderr
    assert WORDS in status.stdout, status.stdout
    assert not [e for e in events if e.kind == "error"], [e.message for e in events]
    assert_nothing_left_running(study_dir)
