"""`researcher plan` as a user types it: the reading and the design of a question, without
running anything or starting a gateway; `--json` keeps the contract other tools read; a
question it cannot read is refused with exit 2."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

import researcher.local_gateway
import researcher.study
from researcher.cli import app
from swarm.protocol import RunCreate

KL = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"
GROUPS = "does a larger GRPO group size (8 vs 2) help on arithmetic?"
LORA = "is LoRA as good as full fine-tuning on the easy task?"
CONTRACT = {"question", "planner", "reading", "model", "model_requested", "substitution", "arms",
            "seeds", "steps", "eval_task", "eval_episodes", "decision_rule"}  # fmt: skip
READING = {"factor", "levels", "control", "task", "outcome", "direction", "margin"}
ARM = {"name", "role", "tasks", "run", "workflow_params"}


@pytest.fixture(autouse=True)
def no_gateway_starts(monkeypatch, tmp_path):
    """Planning must start no gateway (a probe of the user's workflow file may run)."""
    popen = subprocess.Popen

    def refuse(*args, **kwargs):
        raise AssertionError(f"researcher plan started a gateway: {args!r}")

    def no_gateway(command, *args, **kwargs):
        if "gateway" in " ".join(map(str, command if isinstance(command, list) else [command])):
            refuse(command)
        return popen(command, *args, **kwargs)

    monkeypatch.setattr(researcher.local_gateway, "start_local_gateway", refuse)
    monkeypatch.setattr(researcher.study, "start_local_gateway", refuse)
    monkeypatch.setattr(subprocess, "Popen", no_gateway)
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_API_KEY", raising=False)


def plan(*args: str):
    return CliRunner().invoke(app, ["plan", *args])


def plan_json(*args: str) -> dict:
    result = plan(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_kl_penalty_of_0_5_slowing_learning_is_read_as_kl_coef_0_vs_0_5_less():
    out = plan_json(KL)

    reading = out["reading"]
    assert reading["factor"] == "kl_coef" and reading["levels"] == [0, 0.5]
    assert reading["control"] == 0
    assert (reading["task"], reading["outcome"], reading["direction"]) == (
        "learnable", "learning_speed", "less")  # fmt: skip
    assert [arm["run"]["kl_coef"] for arm in out["arms"]] == [0, 0.5]
    assert out["eval_task"] == "learnable"


def test_8_vs_2_gives_groups_of_2_and_8():
    out = plan_json(GROUPS)

    assert out["reading"]["factor"] == "group_size"
    assert sorted(arm["run"]["group_size"] for arm in out["arms"]) == [2, 8]
    assert out["reading"]["task"] == "arithmetic"


def test_as_good_as_gives_an_equivalence_test_with_its_margin():
    out = plan_json(LORA)

    assert out["reading"]["direction"] == "equivalent"
    assert out["reading"]["margin"] and out["reading"]["margin"] > 0
    assert f"±{out['reading']['margin']:g}" in out["decision_rule"]
    assert any("lora" in arm["run"] for arm in out["arms"])
    assert any("lora" not in arm["run"] for arm in out["arms"])


@pytest.mark.parametrize("question", [KL, GROUPS, LORA])
def test_every_key_of_the_contract_is_there_and_every_run_is_a_valid_post_runs_body(question):
    out = plan_json(question, "--budget", "30m", "--seeds", "3")

    assert CONTRACT <= set(out)
    assert READING <= set(out["reading"])
    assert out["question"] == question and out["planner"] == "template"
    assert out["model"] == "smollm2-135m" and out["substitution"] is None
    assert len(out["seeds"]) == 3 and out["steps"] >= 2 and out["eval_episodes"] >= 1
    assert [arm["role"] for arm in out["arms"]][0] == "control"
    for arm in out["arms"]:
        assert ARM <= set(arm)
        run = arm["run"]
        assert run["max_steps"] == out["steps"]
        body = {k: v for k, v in run.items() if k not in ("lora", "base_model")}
        policy = {"base_model": run.get("base_model"), "lora": run.get("lora")}
        RunCreate(name="x", policies={"policy": policy}, **body)


def test_a_question_it_cannot_read_is_refused_with_exit_2_and_the_reason():
    result = plan("what is the meaning of life?", "--json")

    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert set(out) == {"question", "refused"}
    assert out["question"] == "what is the meaning of life?" and out["refused"]


def test_without_json_a_refusal_is_a_plain_message_on_stderr():
    result = plan("what is the meaning of life?")

    assert result.exit_code == 2
    assert result.stdout == "" and "researcher:" in result.stderr


def test_the_human_output_shows_the_reading_the_arms_and_the_rule():
    result = plan(KL)

    assert result.exit_code == 0, result.output
    text = result.stdout
    for shown in ("factor", "kl_coef", "levels", "control", "learnable", "outcome", "direction",
                  "less", "margin", "kl_coef-0.5", "decision rule"):  # fmt: skip
        assert shown in text, shown


def test_a_model_not_served_is_substituted_and_said_so():
    out = plan_json(KL, "--model", "Qwen-7B", "--gateway", _fake_gateway(["m-135M"]))

    assert out["model"] == "m-135M" and "Qwen-7B" in out["model_requested"]
    assert "Qwen-7B" in out["substitution"]


def test_with_a_gateway_the_served_models_are_its_own():
    out = plan_json(GROUPS, "--gateway", _fake_gateway(["a-1B", "b-7B"]), "--model", "b-7B")
    assert out["model"] == "b-7B" and out["substitution"] is None


@pytest.mark.slow
def test_an_unreachable_gateway_is_a_plain_error():
    result = plan(GROUPS, "--gateway", "http://127.0.0.1:9", "--json")
    assert result.exit_code == 2 and "127.0.0.1:9" in result.stderr


def test_a_bad_budget_is_refused():
    result = plan(GROUPS, "--budget", "forever")
    assert result.exit_code == 2 and "budget 'forever'" in " ".join(result.stderr.split())


def _agent(tmp_path, params: dict, tasks: int):
    """A workflow file with `params` and `tasks` tasks in each split."""
    path = tmp_path / "agent.py"
    path.write_text(
        f"PARAMS = {params!r}\n"
        f"def tasks(split='train'):\n    return [{{'id': f'{{split}}-{{i}}'}} for i in range({tasks})]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    return path


def test_a_users_workflow_is_read_for_its_params(tmp_path):
    path = _agent(tmp_path, {"system_prompt": "Answer."}, 8)
    out = plan_json("does a step-by-step system prompt help my agent?", "--workflow", str(path))

    assert out["reading"]["factor"] == "workflow:system_prompt"
    assert out["reading"]["task"] == "workflow" and out["eval_task"] == "workflow"
    assert all("system_prompt" in arm["workflow_params"] for arm in out["arms"])


def test_a_workflow_plan_says_how_many_of_its_test_tasks_a_run_is_judged_on(tmp_path):
    path = _agent(tmp_path, {"k": 3}, 200)
    out = plan_json("does k 5 help my agent?", "--workflow", str(path))
    assert out["workflow_test_size"] == 200 and out["eval_episodes"] < 200
    said = " ".join(plan("does k 5 help my agent?", "--workflow", str(path)).stdout.split())
    assert f"the first {out['eval_episodes']} of the 200 tasks your tasks('test') holds" in said
    assert plan_json(KL)["workflow_test_size"] is None


def test_a_workflow_that_cannot_be_studied_is_refused_with_its_own_reason(tmp_path):
    # `plan` refuses as `start` does: tasks("test")'s own error, not a generic "no test
    # split", and as JSON under --json
    path = tmp_path / "agent.py"
    path.write_text(
        "PARAMS = {'k': 3}\n"
        "def tasks(split='train'):\n"
        "    if split == 'test':\n        raise FileNotFoundError('data/test.jsonl')\n"
        "    return [{'id': 1}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    result = plan("does k 5 help my agent?", "--workflow", str(path), "--json")

    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert set(out) == {"question", "refused"}
    first = out["refused"].splitlines()[0]
    assert "FileNotFoundError: data/test.jsonl" in first and 'split == "test"' in first
    broken = tmp_path / "broken.py"
    broken.write_text("import module_nobody_installed\n")
    result = plan("does k 5 help my agent?", "--workflow", str(broken), "--json")
    assert (
        result.exit_code == 2 and "module_nobody_installed" in json.loads(result.stdout)["refused"]
    )


def _fake_gateway(models: list[str]) -> str:
    """A gateway that answers /healthz and /v1/models only (the rest of the tests never
    reach it): served in a daemon thread for the rest of the session."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server spelling
            body = {"/healthz": {"status": "ok"},
                    "/v1/models": {"data": [{"id": m} for m in models]}}.get(self.path)  # fmt: skip
            self.send_response(200 if body else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_a_study_of_training_length_shows_each_arms_own_steps():
    """The design's `steps` is the longest arm's; saying "40 steps per run" of a 10-step
    control would misstate what it trains."""
    question = (
        "does training for 40 steps instead of 10 improve held-out accuracy on the easy task?"
    )
    result = CliRunner().invoke(app, ["plan", question], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "steps per run: 10 (max_steps-10), 40 (max_steps-40)" in result.output
    result = CliRunner().invoke(app, ["plan", KL], env={"COLUMNS": "200"})
    assert "steps per run:" not in result.output and " steps per run, judged on" in result.output
