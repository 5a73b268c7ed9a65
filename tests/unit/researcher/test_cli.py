"""`researcher` on bad input, as a user types it: a clear message, exit 2 (or 1 when a study
exists and failed, with an event saying why), never a hang and never a lost study."""

from __future__ import annotations

import time

import pytest
from tenacity import stop_after_attempt
from typer.testing import CliRunner

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.cli import app
from researcher.gateway_api import GatewayAPI
from researcher.study import open_db

UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    for name in ("SWARMRL_DB_URL", "SWARMRL_API_KEY", "SWARMRL_PLANNER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def said(result) -> str:
    """What the command printed, with rich's line wrapping undone."""
    return " ".join(result.output.split())


def studies():
    with session_scope(open_db()) as session:
        return crud.list_studies(session)


@pytest.mark.parametrize("question", ["", "   ", " ?! "])
def test_an_empty_question_exits_2_and_creates_no_study(home, question):
    result = invoke("start", question, "--gateway", UNREACHABLE)

    assert result.exit_code == 2
    assert "the question is empty" in said(result)
    assert not (home / "studies").exists() or not any((home / "studies").iterdir())
    assert studies() == []


@pytest.mark.parametrize("budget", ["0", "0m", "forever", "-5m", "31d"])
def test_a_budget_that_is_no_positive_duration_exits_2_naming_the_format(home, budget):
    result = invoke("start", "does multi-task mixing help?", "--budget", budget,
                    "--gateway", UNREACHABLE)  # fmt: skip

    assert result.exit_code == 2
    text = said(result)
    assert f"budget {budget!r}" in text
    assert any(hint in text for hint in ("20m", "3d", "30 days"))
    assert studies() == []


@pytest.mark.slow
def test_a_question_the_template_planner_cannot_read_exits_2_saying_why(home):
    result = invoke("start", "what is the meaning of life", "--gateway", UNREACHABLE)

    assert result.exit_code == 2
    assert said(result).startswith("researcher: ") and len(said(result)) > 40
    assert studies() == []


@pytest.mark.parametrize("command", ["status", "resume", "report", "stop"])
def test_a_study_id_that_does_not_exist_exits_2_saying_no_study(home, command):
    result = invoke(command, "st-00000000")

    assert result.exit_code == 2
    assert "no study 'st-00000000'" in said(result)


@pytest.mark.slow
def test_an_unreachable_gateway_fails_the_study_quickly_with_the_url_and_an_event(
    home, monkeypatch
):
    started = time.monotonic()

    result = invoke("start", "does multi-task mixing help?", "--gateway", UNREACHABLE)

    assert time.monotonic() - started < 20  # the first health check does not retry for long
    assert result.exit_code == 1
    assert "factor" in said(result) and "task_mix" in said(result)  # the reading, shown first
    assert UNREACHABLE in said(result) and "did not answer" in said(result)
    [study] = studies()
    assert study.status == "failed" and UNREACHABLE in study.error
    with session_scope(open_db()) as session:
        events = crud.events(session, study_id=study.id)
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1 and UNREACHABLE in errors[0].message


def test_list_with_no_studies_says_so(home):
    result = invoke("list")

    assert result.exit_code == 0
    assert "no studies yet" in said(result)


@pytest.mark.slow
def test_a_failed_study_can_be_listed_and_its_status_shown_but_not_resumed(home, monkeypatch):
    monkeypatch.setattr(GatewayAPI._send.retry, "stop", stop_after_attempt(1))
    invoke("start", "does multi-task mixing help?", "--gateway", UNREACHABLE)
    [study] = studies()

    listed, status, resumed = invoke("list"), invoke("status", study.id), invoke("resume", study.id)

    assert listed.exit_code == 0 and study.id in said(listed) and "failed" in said(listed)
    assert status.exit_code == 0 and "status failed" in said(status)
    assert resumed.exit_code == 1 and "is failed" in said(resumed)


def test_status_shows_each_runs_aborted_episodes_as_the_monitor_counted_them():
    from researcher.cli import _aborted

    assert _aborted({"episodes": {"finished": 317, "aborted": 160}}) == "160 of 477 (34%)"
    assert _aborted({"episodes": {"finished": 40, "aborted": 0}}) == "0 of 40 (0%)"
    assert _aborted({}) == "-"  # not counted yet (planned, or a study from before the count)
