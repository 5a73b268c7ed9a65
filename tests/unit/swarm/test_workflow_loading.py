"""Loading workflow files: every way a file can be unusable gives a clear `WorkflowError`,
and `swarm run` on such a file exits 2 at once."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from swarm.errors import WorkflowError
from swarm.workflow import TaskCycle, code_version, load_workflow

REPO = Path(__file__).resolve().parents[3]

GOOD = """
def tasks(split="train"):
    return [{"id": "a"}]

async def rollout(task, episode):
    return 1.0
"""
BROKEN = {
    "syntax_error": ("def tasks(split):\n    return [\n", "line 2", "syntax error"),
    "raises_at_import": (
        "import json\nraise RuntimeError('no config found')\n" + GOOD,
        "RuntimeError: no config found",
        "raised while being imported",
    ),
    "missing_rollout": (
        "def tasks(split='train'):\n    return []\n",
        "no `rollout`",
        "async def rollout",
    ),
    "missing_both": ("x = 1\n", "no `tasks` and no `rollout`", "def tasks"),
    "sync_rollout": (
        "def tasks(split='train'):\n    return []\ndef rollout(task, episode):\n    return 1.0\n",
        "a synchronous function",
        "async def rollout",
    ),
    "tasks_not_callable": (
        "tasks = [1]\nasync def rollout(t, e):\n    return 1.0\n",
        "`tasks` is a list",
        "",
    ),
    "exits_at_import": ("import sys\nsys.exit(3)\n", "SystemExit: 3", ""),
}


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def test_a_good_workflow_loads_with_the_hash_of_its_bytes_as_code_version(tmp_path):
    path = write(tmp_path, "good", GOOD)
    workflow = load_workflow(path)
    assert workflow.code_version == hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert list(workflow.tasks("train")) == [{"id": "a"}]


@pytest.mark.slow
def test_a_workflow_may_import_a_module_beside_it(tmp_path):
    write(tmp_path, "my_rewards", "def score(text):\n    return 1.0\n")
    path = write(tmp_path, "uses_sibling", "from my_rewards import score\n" + GOOD)
    assert load_workflow(path).module.score("x") == 1.0


PARAMS_WORKFLOW = """
PARAMS = {{"system_prompt": "Answer."}}
import {helper}

def tasks(split="train"):
    return [{{"id": "a"}}]

async def rollout(task, episode):
    return {helper}.system_prompt()
"""
PARAMS_HELPER = """
import {agent}
from {agent} import PARAMS

def system_prompt():
    return PARAMS["system_prompt"], {agent}.PARAMS["system_prompt"]
"""


def test_a_module_beside_the_workflow_that_imports_it_gets_the_module_swarm_runs(tmp_path):
    # the study's wrapper sets an arm's values into the loaded module's PARAMS: a helper's
    # `from my_agent import PARAMS` must be that dict, not a second copy's defaults
    agent, helper = (f"{kind}_{uuid.uuid4().hex[:8]}" for kind in ("agent", "prompts"))
    write(tmp_path, helper, PARAMS_HELPER.format(agent=agent))
    path = write(tmp_path, agent, PARAMS_WORKFLOW.format(helper=helper))
    workflow = load_workflow(path)
    workflow.module.PARAMS.update({"system_prompt": "Think step by step."})
    assert asyncio.run(workflow.rollout({"id": "a"}, None)) == ("Think step by step.",) * 2
    assert sys.modules[agent] is workflow.module
    assert workflow.helper_files == ((tmp_path / f"{helper}.py").resolve(),)  # not itself
    assert workflow.code_version == code_version(
        path.read_bytes(), {f"{helper}.py": (tmp_path / f"{helper}.py").read_bytes()}
    )


@pytest.mark.parametrize("name", ["json", "swarm", "tabnanny"])
def test_a_workflow_named_like_a_module_loads_and_leaves_that_module_alone(tmp_path, name):
    # json: the standard library's, imported; swarm: ours, imported; tabnanny: the standard
    # library's, not imported yet. An import of the name keeps meaning what it meant
    before = sys.modules.get(name)
    path = write(tmp_path, name, GOOD)
    assert list(load_workflow(path).tasks("train")) == [{"id": "a"}]
    assert sys.modules.get(name) is before
    if before is not None:
        assert Path(before.__file__).resolve() != path.resolve()


def test_a_workflow_that_raises_at_import_leaves_no_module_under_its_name(tmp_path):
    name = f"broken_{uuid.uuid4().hex[:8]}"
    path = write(tmp_path, name, "import json\nraise RuntimeError('no config found')\n")
    with pytest.raises(WorkflowError) as raised:
        load_workflow(path)
    assert name not in sys.modules
    shown = str(raised.value)
    assert "swarm/workflow.py" not in shown and f'"{path}", line 2' in shown  # its frames only


def test_an_async_callable_object_is_an_async_rollout(tmp_path):
    source = "class R:\n    async def __call__(self, task, episode):\n        return 1.0\nrollout = R()\ndef tasks(split='train'):\n    return []\n"
    assert load_workflow(write(tmp_path, "callable", source)).rollout is not None


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_an_unusable_workflow_raises_a_workflow_error_that_says_why(tmp_path, kind):
    source, *expected = BROKEN[kind]
    path = write(tmp_path, kind, source)
    with pytest.raises(WorkflowError) as raised:
        load_workflow(path)
    message = str(raised.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message


def test_a_missing_file_is_a_workflow_error(tmp_path):
    with pytest.raises(WorkflowError, match="no such workflow file"):
        load_workflow(tmp_path / "nope.py")


def test_the_task_cycle_starts_over_when_the_tasks_run_out():
    calls = []

    def tasks(split):
        calls.append(split)
        yield from ({"id": i} for i in range(2))

    cycle = TaskCycle(tasks, "test")
    assert [next(cycle)["id"] for _ in range(5)] == [0, 1, 0, 1, 0]
    assert calls == ["test"] * 3 and cycle.passes == 3


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        (lambda split: [], "yielded no tasks"),
        (lambda split: [{"prompt": "hi"}], "without an 'id'"),
        (lambda split: [3], "yielded a int"),
        (lambda split: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_tasks_that_break_the_contract_are_workflow_errors(tasks, message):
    with pytest.raises(WorkflowError, match=message):
        next(TaskCycle(tasks))


def swarm_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarm.cli", "run", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "kind", ["syntax_error", "raises_at_import", "missing_rollout", "sync_rollout"]
)
def test_swarm_run_on_an_unusable_workflow_exits_2_quickly(tmp_path, kind):
    source, *expected = BROKEN[kind]
    path = write(tmp_path, kind, source)
    started = time.monotonic()
    result = swarm_run(str(path), "--gateway", "http://127.0.0.1:9", "--run", "r", timeout=30)
    assert result.returncode == 2, result.stderr
    assert time.monotonic() - started < 20
    assert "workflow error" in result.stderr
    for fragment in expected:
        assert fragment in result.stderr


def test_swarm_run_help_explains_every_flag():
    result = subprocess.run(
        [sys.executable, "-m", "swarm.cli", "run", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0
    for flag in (
        "--gateway",
        "--run",
        "--concurrency",
        "--group-size",
        "--max-episodes",
        "--split",
        "--api-key",
        "--name",
        "SWARMRL_API_KEY",
        "Exit codes",
    ):
        assert flag in result.stdout
