# ruff: noqa: F811 - the harness fixture is imported from test_graph
"""What the report says about a run's health beyond its scores: checkpoints deleted only
for runs that ran."""

from __future__ import annotations

from pathlib import Path

from researcher.disk import DELETED
from tests.unit.researcher.fakes import BROKEN_WORKFLOW
from tests.unit.researcher.test_graph import harness  # noqa: F401 - fixture


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
