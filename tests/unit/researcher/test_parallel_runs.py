"""`parallel_runs`: what `researcher start --parallel-runs` and settings.json accept, and how
"auto" is resolved from a gateway's `GET /capacity` answer (the HTTP side is in
tests/integration/test_parallel_runs.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from researcher.concurrency import resolve_parallel_runs, with_resolved_parallel_runs
from researcher.settings import BadParallelRuns, StudySettings, parse_parallel_runs


class AnsweringGateway:
    """Answers `capacity()` with a fixed body (None: a gateway without the endpoint)."""

    url = "http://gateway.example"

    def __init__(self, body: dict | None):
        self.body = body
        self.asked = 0

    def capacity(self) -> dict | None:
        self.asked += 1
        return self.body


CPU_2 = {"device": "cpu", "cpus": 2, "suggested_concurrent_runs": 2, "active_runs": 0}


def test_auto_is_the_default_and_numbers_are_kept():
    assert StudySettings(question="q", budget_s=60).parallel_runs == "auto"
    assert StudySettings(question="q", budget_s=60, parallel_runs=3).parallel_runs == 3


@pytest.mark.parametrize("bad", [0, -1, "many", "", 1.5])
def test_a_parallel_runs_that_is_neither_a_count_nor_auto_is_refused(bad):
    with pytest.raises(ValidationError):
        StudySettings(question="q", budget_s=60, parallel_runs=bad)


def test_a_settings_json_of_an_older_study_with_a_number_still_loads():
    old = '{"question": "q", "budget_s": 60, "parallel_runs": 1}'
    assert StudySettings.model_validate_json(old).parallel_runs == 1
    saved = StudySettings(question="q", budget_s=60).public_json()
    assert StudySettings.model_validate_json(saved).parallel_runs == "auto"


@pytest.mark.parametrize(("text", "value"), [("auto", "auto"), (" Auto ", "auto"), ("2", 2)])
def test_the_flag_takes_a_count_or_auto(text, value):
    assert parse_parallel_runs(text) == value


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", ""])
def test_the_flag_refuses_anything_else_with_an_actionable_message(text):
    with pytest.raises(BadParallelRuns, match="auto"):
        parse_parallel_runs(text)


def test_auto_takes_the_gateways_suggestion_and_says_why():
    resolved = resolve_parallel_runs("auto", AnsweringGateway(CPU_2))
    assert resolved.runs == 2
    assert resolved.message == "parallel runs: 2 (the gateway suggests 2 on 2 CPUs)"


def test_auto_on_a_gpu_gateway_names_the_device():
    body = {"device": "cuda", "cpus": 16, "suggested_concurrent_runs": 4}
    assert resolve_parallel_runs("auto", AnsweringGateway(body)).reason.endswith("on cuda")


@pytest.mark.parametrize("body", [None, {"unexpected": True}])
def test_auto_falls_back_to_one_run_without_a_readable_capacity(body):
    resolved = resolve_parallel_runs("auto", AnsweringGateway(body))
    assert resolved.runs == 1
    assert "gateway" in resolved.reason


def test_a_number_is_kept_without_asking_the_gateway():
    gateway = AnsweringGateway(CPU_2)
    settings, resolved = with_resolved_parallel_runs(
        StudySettings(question="q", budget_s=60, parallel_runs=3), gateway
    )
    assert settings.parallel_runs == resolved.runs == 3
    assert gateway.asked == 0


def test_resolved_settings_hold_a_number_and_the_original_is_untouched():
    original = StudySettings(question="q", budget_s=60)
    settings, _ = with_resolved_parallel_runs(original, AnsweringGateway(CPU_2))
    assert settings.parallel_runs == 2 and isinstance(settings.parallel_runs, int)
    assert original.parallel_runs == "auto"


@pytest.mark.parametrize("value", ["0", "many"])
def test_start_with_a_bad_parallel_runs_exits_2_and_creates_no_study(value, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from researcher.cli import app

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    result = CliRunner().invoke(
        app, ["start", "does multi-task mixing help?", "--parallel-runs", value,
              "--gateway", "http://127.0.0.1:9"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert f"--parallel-runs {value!r}" in " ".join(result.output.split())
    assert not (tmp_path / "studies").exists()
