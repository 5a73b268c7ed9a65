# ruff: noqa: F811 - the harness fixture is imported from test_graph
"""F10: a study respects its disk budget — runs keep one checkpoint (plus the best),
checkpoint periodically only under a large budget, monitor turns periodic checkpoints off
once the study folder is over budget, and the report says disk used vs budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.settings import BadSize, parse_size
from tests.unit.researcher.test_graph import harness  # noqa: F401 - fixture


def test_sizes_parse_in_decimal_and_binary_units_and_nonsense_is_refused():
    assert parse_size("2GB") == 2 * 10**9
    assert parse_size("500 mb") == 500 * 10**6
    assert parse_size("1.5GiB") == int(1.5 * 2**30)
    for bad in ("", "lots", "2 parsecs", "-1GB"):
        with pytest.raises(BadSize):
            parse_size(bad)


def test_under_the_default_budget_runs_keep_one_checkpoint_and_only_the_final_one(harness):
    ctx = harness.create()
    assert ctx.settings.disk_budget_bytes == 2 * 10**9
    harness.drive()
    assert harness.gateway.runs
    for run in harness.gateway.runs.values():
        if "-check" in run.name:
            continue  # dry runs: checkpoint_every is never sent
        assert run.settings["keep_checkpoints"] == 1
        assert "checkpoint_every" not in run.settings
    report = harness.report_row()
    assert "**Disk:**" in Path(report.markdown_path).read_text()
    assert "of 2.00 GB" in Path(report.markdown_path).read_text()
    assert "<dt>Disk</dt>" in Path(report.html_path).read_text()


def test_a_large_budget_checkpoints_periodically_and_monitor_stops_that_over_budget(
    harness, monkeypatch
):
    harness.create(disk_budget_bytes=20 * 10**9)
    monkeypatch.setattr("researcher.nodes.monitor.directory_size", lambda path: 21 * 10**9)
    harness.drive()
    created = [r for r in harness.gateway.runs.values() if "-check" not in r.name]
    assert created and all(r.settings.get("keep_checkpoints") == 1 for r in created)
    patched = [
        name for name, fields in harness.gateway.patches if fields == {"checkpoint_every": None}
    ]
    assert sorted(patched) == sorted(r.name for r in created)
    messages = [e.message for e in harness.events() if "periodic checkpoints off" in e.message]
    assert messages and any("over its disk budget" in (e.reason or "") for e in harness.events())


def test_over_half_its_budget_a_study_deletes_scored_runs_weights_and_the_report_says_so(
    harness, monkeypatch
):
    harness.create()
    monkeypatch.setattr("researcher.disk.directory_size", lambda path: 3 * 10**9)
    harness.drive()
    with session_scope(harness.engine) as session:
        rows = crud.experiments(session, study_id=harness.ctx.study_id)
    scored = {r.run_name for r in rows if r.result and r.result["eval_outcomes"]}
    assert scored and sorted(harness.gateway.deleted_checkpoints) == sorted(scored)
    assert any("disk budget" in e.message and e.kind == "action" for e in harness.events())
    markdown = Path(harness.report_row().markdown_path).read_text()
    assert "deleted to keep the study within its disk budget" in markdown
