"""`researcher rerun STUDY` end to end: a real tiny-model study (embedded gateway, 2 arms ×
1 seed), then its final design replayed into a new study by the CLI as a user types it. The
study is the session's `finished_tiny_study` (tests/integration/conftest.py), the one
test_researcher.py's end-to-end test reads: run once, read by both.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher_rerun.py
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.graph import build_graph
from tests.integration.conftest import FinishedStudy
from tests.integration.test_researcher import (
    engine_of,
    finish,
    recorded,
    start_researcher,
    tail,
)

pytestmark = pytest.mark.slow


def designs_of(study_dir: Path, study_id: str) -> list[dict]:
    with sqlite3.connect(study_dir / "graph.sqlite", check_same_thread=False) as connection:
        graph = build_graph().compile(checkpointer=SqliteSaver(connection))
        return graph.get_state({"configurable": {"thread_id": study_id}}).values["designs"]


def test_rerun_replays_a_finished_tiny_study_into_a_new_study(finished_tiny_study: FinishedStudy):
    # `researcher start QUESTION --budget 2m --model tiny --seeds 1`, run once per session
    home = finished_tiny_study.home
    assert finished_tiny_study.code == 0, tail(home / "researcher.log")
    engine = engine_of(home)
    (original_id,) = finished_tiny_study.study_ids  # the one study it made
    with session_scope(engine) as session:
        original = crud.get_study(session, study_id=original_id)
    original_design = designs_of(Path(original.directory), original.id)[-1]
    all_seeds = sorted({s for d in designs_of(Path(original.directory), original.id)
                        for s in d["seeds"]})  # fmt: skip

    process = start_researcher(
        home, "rerun", original.id, "--budget", "2m", "--yes", log="rerun.log", own_models=True
    )  # own_models: the home's, where the original's gateway put the tokenizer, as before
    assert finish(process, home, timeout=600, log="rerun.log") == 0, tail(home / "rerun.log")

    with session_scope(engine) as session:
        studies = {s.id: s for s in crud.list_studies(session)}
    (new_id,) = set(studies) - {original.id}
    study, report, experiments, _, events = recorded(engine, new_id)
    assert study.status == "finished" and study.planner == f"replay:{original.id}"
    (replayed,) = designs_of(Path(study.directory), new_id)  # judged once: one design
    assert [a["name"] for a in replayed["arms"]] == [a["name"] for a in original_design["arms"]]
    assert [a["run"] for a in replayed["arms"]] == [a["run"] for a in original_design["arms"]]
    assert replayed["seeds"] == all_seeds and replayed["steps"] == original_design["steps"]
    assert (replayed["look"], replayed["max_looks"]) == (1, 1)
    assert sorted((e.arm, e.seed) for e in experiments) == sorted(
        (a["name"], s) for a in original_design["arms"] for s in all_seeds
    )
    assert any(e.kind == "replays" and original.id in e.message for e in events)
    md = Path(report.markdown_path).read_text()
    assert f"This study replays study `{original.id}`'s final design" in md
    assert md.split("## The question, as read")[0].count("**") >= 2  # the answer on top
    assert f"researcher rerun {new_id}" in md
