"""The user's own workflow: PARAMS read without running the file, a workflow without a
held-out split refused with the reason, and the per-arm wrapper — it imports the user's file
as it is, applies the arm's PARAMS, and never changes a byte of it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from researcher.errors import ResearcherError
from researcher.plan import Arm, Framing
from researcher.user_workflow import (
    PARAMS_ENV,
    WorkflowFileError,
    inspect_workflow,
    render_wrapper,
    require_test_split,
)
from swarm.workflow import load_workflow

MY_AGENT = """
import json, os
from helper import suffix  # a module beside the workflow

PARAMS = {"system_prompt": "Answer.", "max_tokens": 8}
CALLS = []

def tasks(split="train"):
    if split not in ("train", "test"):
        raise ValueError(f"no split {split}")
    return [{"id": f"{split}-{i}"} for i in range(3)]

async def rollout(task, episode):
    CALLS.append(dict(PARAMS))
    env = json.loads(os.environ.get("SWARMRL_WORKFLOW_PARAMS", "{}"))
    seen = {"prompt": PARAMS["system_prompt"] + suffix(), "env": env}
    return seen  # what the tests read back: no reward a run trains on
"""


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "helper.py").write_text("def suffix():\n    return '!'\n")
    path = folder / "my_agent.py"
    path.write_text(MY_AGENT)
    return path


def framing(path: Path, params: dict) -> Framing:
    return Framing(question="does a step-by-step prompt help my agent?", family="workflow",
                   summary="s", model="tiny", planner="template", workflow=str(path),
                   workflow_params=params)  # fmt: skip


def arm(name: str, params: dict) -> Arm:
    return Arm(name=name, role="treatment", description=f"{name} prompt",
               tasks={"workflow": 1.0}, workflow_params=params)  # fmt: skip


def test_params_are_read_as_a_literal_without_running_the_file(agent: Path, tmp_path: Path):
    found = inspect_workflow(agent)
    params, has_test = found.params, found.has_test
    assert params == {"system_prompt": "Answer.", "max_tokens": 8} and has_test
    silent = tmp_path / "no_params.py"
    marker = tmp_path / "ran"
    silent.write_text(
        f"open({str(marker)!r}, 'w')\n"
        "def tasks(split='train'):\n    return [{'id': 1}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    from researcher.user_workflow import read_params

    assert read_params(silent) == {} and not marker.exists()  # ast only: nothing ran
    annotated = tmp_path / "annotated.py"
    annotated.write_text("PARAMS: dict = {'k': (1, 2)}\nPARAMS = {'k': [3]}\n")
    assert read_params(annotated) == {"k": [3]}  # the last assignment


def test_a_params_that_is_not_a_literal_dict_is_refused_naming_its_line(tmp_path: Path):
    computed = tmp_path / "computed.py"
    computed.write_text("import os\n\nPARAMS = dict(prompt=os.environ['P'])\n")
    with pytest.raises(WorkflowFileError, match=r"computed.py, line 3: PARAMS must be a literal"):
        inspect_workflow(computed)
    listed = tmp_path / "listed.py"
    listed.write_text("PARAMS = ['a', 'b']\n")
    with pytest.raises(WorkflowFileError, match="line 1"):
        inspect_workflow(listed)
    broken = tmp_path / "broken.py"
    broken.write_text("PARAMS = {\n")
    with pytest.raises(WorkflowFileError, match="syntax error"):
        inspect_workflow(broken)


@pytest.mark.slow
def test_a_workflow_without_a_test_split_is_refused_with_the_reason(tmp_path: Path):
    train_only = tmp_path / "train_only.py"
    train_only.write_text(
        "def tasks(split='train'):\n"
        "    if split != 'train':\n        raise KeyError(f'only train data, not {split}')\n"
        "    return [{'id': 'a'}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    found = inspect_workflow(train_only)
    assert not found.has_test and "only train data, not test" in found.test_problem
    found = inspect_workflow(train_only)
    assert (found.params, found.has_test) == ({}, False)
    with pytest.raises(
        WorkflowFileError, match=r'held-out evaluation runs its rollout on tasks\("test"\)'
    ):
        require_test_split(train_only)
    empty = tmp_path / "empty_test.py"
    empty.write_text(
        train_only.read_text().replace(
            "raise KeyError(f'only train data, not {split}')", "return []"
        )
    )
    with pytest.raises(WorkflowFileError, match="yielded no tasks"):
        require_test_split(empty)


def test_a_workflow_that_cannot_be_studied_says_why_and_the_fix_in_its_first_line(
    tmp_path: Path,
):
    # tasks("test") raising: its own message (not a generic "no test split"), then the fix,
    # then its traceback below
    raising = tmp_path / "raising.py"
    raising.write_text(
        "def tasks(split='train'):\n"
        "    if split == 'test':\n        raise ValueError('set TEST_PATH to the held-out file')\n"
        "    return [{'id': 1}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    with pytest.raises(WorkflowFileError) as raised:
        require_test_split(raising)
    first, *rest = str(raised.value).splitlines()
    assert "ValueError: set TEST_PATH to the held-out file" in first
    assert 'make tasks(split) work for split == "test"' in first
    assert rest and "Traceback" in rest[0] and "raising.py" in "\n".join(rest)
    # tasks without an "id" are no missing split: the fix names the id, in either split
    for split in ("test", "train"):
        no_id = tmp_path / f"no_id_{split}.py"
        no_id.write_text(
            "def tasks(split='train'):\n"
            f"    return [{{'q': 1}}] if split == {split!r} else [{{'id': 1}}]\n"
            "async def rollout(task, episode):\n    return 1.0\n"
        )
        with pytest.raises(WorkflowFileError) as raised:
            require_test_split(no_id)
        message = str(raised.value)
        assert "\n" not in message and f"tasks('{split}') yielded a task without an 'id'" in message
        assert 'make every task a dict with an "id"' in message
        assert "split == " not in message  # not "return held-out tasks for the split"
    # a train split that yields nothing: nothing could train, refused before any run starts
    no_train = tmp_path / "no_train.py"
    no_train.write_text(
        "def tasks(split='train'):\n    return [{'id': 1}] if split == 'test' else []\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    with pytest.raises(WorkflowFileError, match=r'tasks\("train"\) yielded no tasks.*every run '
                       r'trains on tasks\("train"\)'):  # fmt: skip
        inspect_workflow(no_train)
    # a module not installed: the first line names it and where to install it
    missing = tmp_path / "needs_langchain.py"
    missing.write_text("import langchain_not_here_at_all\n")
    with pytest.raises(WorkflowFileError) as raised:
        inspect_workflow(missing)
    first = str(raised.value).splitlines()[0]
    assert "'langchain_not_here_at_all'" in first and "pip install" in first


@pytest.mark.slow
def test_the_test_split_is_counted_up_to_a_cap(agent: Path, tmp_path: Path):
    assert inspect_workflow(agent).test_size == 3
    endless = tmp_path / "endless.py"
    endless.write_text(
        "import itertools\n"
        "def tasks(split='train'):\n"
        "    return ({'id': f'{split}-{i}'} for i in itertools.count())\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    from researcher.user_workflow import TEST_SIZE_CAP

    assert inspect_workflow(endless).test_size == TEST_SIZE_CAP
    from researcher.nodes.frame import workflow_frame_args

    assert workflow_frame_args(agent)["workflow_test_size"] == 3


@pytest.mark.slow
def test_a_workflow_that_does_not_import_or_hangs_is_refused(tmp_path: Path):
    missing = tmp_path / "missing_import.py"
    missing.write_text("import module_that_is_not_there\n")
    with pytest.raises(WorkflowFileError, match="module_that_is_not_there"):
        inspect_workflow(missing)
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(WorkflowFileError, match="took over 1 s"):
        inspect_workflow(slow, timeout_s=1)
    with pytest.raises(WorkflowFileError, match="no such workflow file"):
        inspect_workflow(tmp_path / "nope.py")


def test_a_slow_import_may_be_given_longer_and_the_refusal_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # a workflow importing a reward model or a dataset can take longer than the default
    from researcher.user_workflow import PROBE_TIMEOUT_ENV

    slow = tmp_path / "slow_import.py"
    slow.write_text(
        "import time\ntime.sleep(2)\n"
        "def tasks(split='train'):\n    return [{'id': 1}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    monkeypatch.setenv(PROBE_TIMEOUT_ENV, "1")
    with pytest.raises(WorkflowFileError, match=f"took over 1 s.*{PROBE_TIMEOUT_ENV}=120"):
        inspect_workflow(slow)
    monkeypatch.setenv(PROBE_TIMEOUT_ENV, "60")
    assert inspect_workflow(slow).has_test
    monkeypatch.setenv(PROBE_TIMEOUT_ENV, "two minutes")
    with pytest.raises(WorkflowFileError, match="not a number of seconds"):
        inspect_workflow(slow)


def test_a_sampling_factor_says_how_it_reaches_the_workflows_model_calls(tmp_path: Path):
    # the arms' temperature goes only through episode.openai(): a rollout calling the model
    # another way would train every arm alike, and the plan must say so before any run
    from researcher.nodes.frame import workflow_frame_args
    from researcher.planning import make_plan

    def assumptions(source: str, question: str, **beside: str) -> str:
        folder = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        for name, text in beside.items():
            (folder / f"{name}.py").write_text(text)
        (folder / "agent.py").write_text(
            "def tasks(split='train'):\n    return [{'id': i} for i in range(20)]\n" + source
        )
        plan = make_plan(question, planner="template", served=["smollm2-135m"], budget_s=1200,
                         seeds=2, workflow_args=workflow_frame_args(folder / "agent.py"))  # fmt: skip
        return " ".join(plan.framing.reading.assumptions)

    raw_http = (
        "import httpx\n"
        "async def rollout(task, episode):\n"
        "    async with httpx.AsyncClient() as http:\n"
        "        await http.post(episode.base_url + '/chat/completions', json={})\n"
        "    return 1.0\n"
    )
    said = assumptions(raw_http, "does temperature 1.2 help my agent?")
    assert "never calls episode.openai()" in said and 'declare "temperature" in PARAMS' in said
    own = (
        "async def rollout(task, episode):\n"
        "    await episode.openai().chat.completions.create(model=episode.model, messages=[],\n"
        "                                                   temperature=0.7)\n"
        "    return 1.0\n"
    )
    said = assumptions(own, "does temperature 1.2 help my agent?")
    assert "in place of the temperature your rollout passes itself" in said
    assert "never calls" not in said
    # the call in a module beside it that the workflow imports counts
    helper = (
        "async def ask(episode):\n    return await episode.openai().chat.completions.create()\n"
    )
    said = assumptions(
        "from helper import ask\nasync def rollout(task, episode):\n    await ask(episode)\n"
        "    return 1.0\n",
        "does temperature 1.2 help my agent?",
        helper=helper,
    )
    assert "through episode.openai() in training" in said and "never calls" not in said
    # nothing said where the factor is no sampling setting, or PARAMS declares it
    assert "episode.openai()" not in assumptions(raw_http, "does lr 1e-4 help my agent?")
    declared = "PARAMS = {'temperature': 0.7}\n" + raw_http
    assert "episode.openai()" not in assumptions(declared, "does temperature 1.2 help my agent?")
    # a PARAM the rollout passes as its temperature samples the held-out answers too
    passed = (
        "PARAMS = {'sampling_temp': 0.7, 'shots': 0}\n"
        "async def rollout(task, episode):\n"
        "    await episode.openai().chat.completions.create(\n"
        "        model=episode.model, messages=[], temperature=PARAMS['sampling_temp'])\n"
        "    return 1.0\n"
    )
    said = assumptions(passed, "does sampling_temp 1.0 help my agent?")
    assert 'passes PARAMS["sampling_temp"] as its temperature' in said and "not greedy" in said
    assert "not greedy" not in assumptions(passed, "does shots 2 help my agent?")


@pytest.mark.slow
def test_a_multi_policy_team_is_refused_before_any_run_naming_its_policies(tmp_path: Path):
    # every run of a study trains one policy: a rollout that calls episode.models["planner"]
    # would fail each dry run with a KeyError, after the gateway had started
    import shutil

    team = tmp_path / "team.py"
    shutil.copy(Path(__file__).resolve().parents[3] / "examples" / "team.py", team)
    with pytest.raises(WorkflowFileError) as raised:
        inspect_workflow(team)
    message = str(raised.value)
    assert "'executor', 'planner'" in message and "multi-policy team" in message
    assert "\n" not in message and "episode.model" in message
    # in a module beside it too; the one policy a study trains, by its name, is no team
    (tmp_path / "agents.py").write_text(
        "async def plan(episode):\n    return episode.models['critic']\n"
    )
    beside = tmp_path / "uses_agents.py"
    beside.write_text(
        "import agents\n"
        "def tasks(split='train'):\n    return [{'id': 1}]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    with pytest.raises(WorkflowFileError, match="'critic'"):
        inspect_workflow(beside)
    (tmp_path / "agents.py").write_text(
        "async def plan(episode):\n    return episode.models['policy']\n"
    )
    assert inspect_workflow(beside).has_test


def test_a_reward_for_a_policy_the_run_lacks_is_refused_at_plan_time_not_at_the_dry_run(
    tmp_path: Path,
):
    # the gateway refuses such a reward at each episode's finish, so every dry run failed with
    # "unknown policy solver; this run's policies are: policy" after the gateway had started
    path = tmp_path / "solver.py"
    source = (
        "def tasks(split='train'):\n    return [{'id': f'{split}-0'}]\n"
        "async def rollout(task, episode):\n"
        "    def judge():\n        return {'judge': 0.0}\n"  # not rollout's own return
        "    if task['id'] == 'x':\n        return {'policy': 1.0}\n"
        "    return {'solver': 1.0, 'critic': 0.0}\n"  # 8
    )
    path.write_text(source)
    with pytest.raises(WorkflowFileError) as raised:
        inspect_workflow(path)
    assert str(raised.value) == (
        f"{path}, line 8: rollout returns a reward for unknown policies critic, solver; this "
        "run's policies are: policy. Every run of a study trains one policy, 'policy': return "
        'the reward as a float (or {"policy": reward})'
    )
    path.write_text(source.replace("{'solver': 1.0, 'critic': 0.0}", "{'policy': 0.0}"))
    assert inspect_workflow(path).has_test


def test_the_wrapper_runs_the_users_file_with_the_arms_params_and_leaves_it_unchanged(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(PARAMS_ENV, "{}")  # restored (unset) after the test: the wrapper sets it
    before = hashlib.sha256(agent.read_bytes()).hexdigest()
    defaults = {"system_prompt": "Answer.", "max_tokens": 8}
    wrappers = {}
    for name, params in (("control", {}), ("step", {"system_prompt": "Think step by step."})):
        source = render_wrapper(framing(agent, defaults), arm(name, params), seed=0)
        path = tmp_path / name / "workflow.py"
        path.parent.mkdir()
        path.write_text(source)
        wrappers[name] = load_workflow(path)  # what `swarm run` does with it
    control, step = wrappers["control"], wrappers["step"]
    assert [t["id"] for t in control.tasks("test")] == ["test-0", "test-1", "test-2"]
    assert asyncio.run(step.rollout({"id": "x"}, None)) == {
        "prompt": "Think step by step.!",
        "env": {"system_prompt": "Think step by step."},
    }
    assert json.loads(os.environ[PARAMS_ENV]) == {"system_prompt": "Think step by step."}
    assert asyncio.run(control.rollout({"id": "x"}, None))["prompt"] == "Answer.!"
    assert control.module.__dict__["_user_workflow"] is not step.module.__dict__["_user_workflow"]
    assert hashlib.sha256(agent.read_bytes()).hexdigest() == before
    written = {p.name for p in agent.parent.iterdir()} - {"__pycache__"}  # helper's, by import
    assert written == {"helper.py", "my_agent.py"}
    assert not [p for p in (agent.parent / "__pycache__").glob("my_agent*")]


def free_module_names(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """`names` not imported, as in a fresh `swarm run` process, and as they were after the
    test (sys.modules is shared by every test)."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # undone: put back, or taken out
        del sys.modules[name]


SPLIT_AGENT = """
PARAMS = {{"system_prompt": "Answer.", "max_tokens": 8}}
import {helper}

def tasks(split="train"):
    return [{{"id": f"{{split}}-0"}}]

async def rollout(task, episode):
    return {helper}.system_prompt()
"""
SPLIT_HELPER = """
import {agent}
from {agent} import PARAMS

def system_prompt():  # read when rollout() calls it, once the arm's PARAMS are set
    return PARAMS["system_prompt"], {agent}.PARAMS["system_prompt"]
"""


@pytest.mark.parametrize("agent", ["my_agent", "workflow"], ids=["its-own-name", "the-wrappers"])
def test_a_module_beside_the_users_file_that_imports_its_params_sees_the_arms_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str
):
    # `from my_agent import PARAMS` in a helper must not import a second copy of the file,
    # whose PARAMS the wrapper never sets: the treatment would silently run the control's
    # values. A user's file named workflow.py, like the wrapper, is the common case
    monkeypatch.setenv(PARAMS_ENV, "{}")
    free_module_names(monkeypatch, agent, "workflow")
    helper = f"prompts_{uuid.uuid4().hex[:8]}"  # sys.modules is shared by every test
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / f"{helper}.py").write_text(SPLIT_HELPER.format(agent=agent))
    path = folder / f"{agent}.py"
    path.write_text(SPLIT_AGENT.format(helper=helper))
    defaults = {"system_prompt": "Answer.", "max_tokens": 8}
    think = arm("step", {"system_prompt": "Think step by step."})
    wrapper = tmp_path / "step" / "workflow.py"
    wrapper.parent.mkdir()
    wrapper.write_text(render_wrapper(framing(path, defaults), think, seed=0))
    wrapped = load_workflow(wrapper)  # what `swarm run` does with it
    assert asyncio.run(wrapped.rollout({"id": "x"}, None)) == ("Think step by step.",) * 2


def test_a_module_beside_the_users_file_named_like_the_wrapper_is_still_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # the wrapper is workflow.py too, and `swarm run` loaded it first: `import workflow` in
    # the user's file still means the user's workflow.py, which the file's folder holds
    monkeypatch.setenv(PARAMS_ENV, "{}")
    free_module_names(monkeypatch, "workflow")
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "workflow.py").write_text("def suffix():\n    return '?'\n")
    path = folder / f"agent_{uuid.uuid4().hex[:8]}.py"
    path.write_text(MY_AGENT.replace("from helper import suffix", "from workflow import suffix"))
    wrapper = tmp_path / "step" / "workflow.py"
    wrapper.parent.mkdir()
    wrapper.write_text(render_wrapper(framing(path, {"system_prompt": "Answer."}),
                                      arm("step", {"system_prompt": "Think."}), seed=0))  # fmt: skip
    wrapped = load_workflow(wrapper)
    assert asyncio.run(wrapped.rollout({"id": "x"}, None))["prompt"] == "Think.?"


CALLER = """
PARAMS = {"system_prompt": "Answer."}

def tasks(split="train"):
    return [{"id": split}]

async def rollout(task, episode):
    return await episode.openai().chat.completions.create(model="m", temperature=0.7)
"""


class RecordingEpisode:
    """What the wrapper's rollout is handed: an episode whose client echoes the request."""

    def __init__(self, evaluation: bool = False):
        self.evaluation = evaluation
        self.model = "m"

    def openai(self):
        async def create(**request):
            return request

        completions = type("Completions", (), {"create": staticmethod(create)})()
        return type("Client", (), {"chat": type("Chat", (), {"completions": completions})()})()


@pytest.mark.slow
def test_a_sampling_setting_params_does_not_declare_goes_with_every_training_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(PARAMS_ENV, "{}")
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    hot = arm("hot", {"temperature": 1.2, "max_tokens": 16})
    path = tmp_path / "hot" / "workflow.py"
    path.parent.mkdir()
    path.write_text(render_wrapper(framing(caller, {"system_prompt": "Answer."}), hot, seed=0))
    wrapped = load_workflow(path)
    training = asyncio.run(wrapped.rollout({"id": "train"}, RecordingEpisode()))
    assert training == {"model": "m", "temperature": 1.2, "max_tokens": 16}
    held_out = asyncio.run(wrapped.rollout({"id": "test"}, RecordingEpisode(evaluation=True)))
    assert held_out == {"model": "m", "temperature": 0.7, "max_tokens": 16}  # the rollout's own


def test_an_arm_setting_a_param_the_workflow_does_not_declare_is_refused(agent: Path):
    with pytest.raises(
        ResearcherError, match="few_shot, which my_agent.py's PARAMS does not declare"
    ):
        render_wrapper(
            framing(agent, {"system_prompt": "Answer."}), arm("more", {"few_shot": 3}), seed=0
        )


def test_a_study_keeps_a_copy_of_the_workflow_and_resume_can_point_it_elsewhere(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from typer.testing import CliRunner

    from researcher.cli import app
    from researcher.settings import StudySettings
    from researcher.study import create_study, load_settings, open_db, set_workflow

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    db = f"sqlite:///{tmp_path / 'researcher.db'}"
    engine = open_db(db)
    settings = StudySettings(question="q", budget_s=60, workflow=str(agent))
    study = create_study(engine, settings)
    copy = Path(study.directory) / "user_workflow" / "my_agent.py"
    assert copy.read_bytes() == agent.read_bytes()

    moved = tmp_path / "moved" / "my_agent.py"
    moved.parent.mkdir()
    moved.write_text(agent.read_text().replace("Answer.", "Reply."))
    set_workflow(study, str(moved))
    assert load_settings(study).workflow == str(moved)
    assert "Reply." in copy.read_text()

    plain = create_study(engine, StudySettings(question="q", budget_s=60))
    refused = CliRunner().invoke(app, ["resume", plain.id, "--workflow", str(moved), "--db", db])
    assert refused.exit_code == 2 and "not started with --workflow" in refused.output


@pytest.mark.slow
def test_where_the_users_file_is_not_the_wrapper_runs_the_copy_shipped_beside_it(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(PARAMS_ENV, "{}")
    defaults = {"system_prompt": "Answer.", "max_tokens": 8}
    source = render_wrapper(framing(agent, defaults), arm("step", {"max_tokens": 4}), seed=0)
    shipped = tmp_path / "job"  # the experiment's folder, as a Ray job gets it
    (shipped / "user").mkdir(parents=True)
    (shipped / "workflow.py").write_text(source)
    (shipped / "user" / "my_agent.py").write_text(agent.read_text().replace("Answer.", "Copy."))
    (shipped / "user" / "helper.py").write_text((agent.parent / "helper.py").read_text())
    agent.rename(tmp_path / "elsewhere.py")  # not on this machine
    wrapped = load_workflow(shipped / "workflow.py")
    assert asyncio.run(wrapped.rollout({"id": "x"}, None))["prompt"] == "Copy.!"

    (shipped / "user" / "my_agent.py").unlink()
    with pytest.raises(Exception, match="is gone"):
        load_workflow(shipped / "workflow.py")


def plan_of(path: Path, question: str, **gate: list[str]):
    """`researcher plan QUESTION --workflow PATH` as the CLI makes it (the gate, then the
    template planner), without a gateway."""
    from researcher.nodes.frame import frame_args_of
    from researcher.planning import make_plan

    args = frame_args_of(require_test_split(path, **gate))
    return make_plan(question, planner="template", served=["smollm2-135m"], budget_s=1200,
                     seeds=2, workflow_args=args)  # fmt: skip


PROMPT_AT_IMPORT = """
PARAMS = {"system_prompt": "Reply with one word.", "max_tokens": 8}
SYSTEM = PARAMS["system_prompt"]
LIMIT = PARAMS["max_tokens"]

def tasks(split="train"):
    for i in range(200 if split == "train" else 40):
        yield {"id": f"{split}{i}"}

async def rollout(task, episode):
    return len(SYSTEM) / 100
"""


@pytest.mark.slow
def test_a_param_the_question_varies_read_at_import_is_refused_naming_the_line(tmp_path: Path):
    # the wrapper sets each arm's PARAMS once the file is imported: a value taken at import
    # is the default in every arm, and the treatment would silently equal the control
    path = tmp_path / "agent.py"
    path.write_text(PROMPT_AT_IMPORT)
    with pytest.raises(WorkflowFileError) as raised:
        plan_of(path, "does a step-by-step system prompt help my agent?")
    message = str(raised.value)
    assert f'{path}, line 3: `SYSTEM = PARAMS["system_prompt"]`' in message
    assert "read PARAMS inside rollout()/tasks()" in message and "'Reply with one word.'" in message
    # one the question leaves alone is harmless, as is a held one read inside rollout()
    plan = plan_of(path, "does lr 1e-4 help my agent?")
    assert plan.framing.reading.factor == "lr"
    with pytest.raises(WorkflowFileError, match=r'line 4: `LIMIT = PARAMS\["max_tokens"\]`'):
        plan_of(path, "does max_tokens 32 help my agent?")


def test_a_param_read_at_import_through_a_helper_is_refused_naming_the_call_and_the_fix(
    tmp_path: Path,
):
    from researcher.plan import Reading
    from researcher.user_workflow import refuse_params_read_at_import

    path = tmp_path / "agent.py"
    path.write_text(
        PROMPT_AT_IMPORT.replace(
            'SYSTEM = PARAMS["system_prompt"]\nLIMIT = PARAMS["max_tokens"]',
            'def _prompt():\n    return PARAMS["system_prompt"]\n\nSYSTEM = _prompt()',
        )
    )
    params = {"system_prompt": "Reply with one word.", "max_tokens": 8}
    reading = Reading(factor="workflow:system_prompt", levels=["Reply with one word.", "Think."],
                      control="Reply with one word.", task="workflow")  # fmt: skip
    with pytest.raises(WorkflowFileError) as raised:
        refuse_params_read_at_import(reading, path, params)
    assert str(raised.value) == (
        f"{path}, line 6: `SYSTEM = _prompt()` calls _prompt(), which reads "
        'PARAMS["system_prompt"] at line 4 (`return PARAMS["system_prompt"]`), when the file '
        "is imported, before the study sets each arm's PARAMS, so every arm would run your "
        "default 'Reply with one word.' and the treatment would equal the control: read "
        "PARAMS inside rollout()/tasks(): call _prompt() in rollout() where you use the value, "
        "not at import"
    )
    path.write_text(PROMPT_AT_IMPORT.replace("SYSTEM = PARAMS", "P = PARAMS\nSYSTEM = P"))
    with pytest.raises(WorkflowFileError, match=r'line 4: `SYSTEM = P\["system_prompt"\]` reads '
                       r'PARAMS\["system_prompt"\] \(P is PARAMS\) when the file is imported'):  # fmt: skip
        refuse_params_read_at_import(reading, path, params)
    # the same helper called only from rollout() reads the arm's value
    path.write_text(
        PROMPT_AT_IMPORT.replace('SYSTEM = PARAMS["system_prompt"]\n', "")
        .replace('LIMIT = PARAMS["max_tokens"]', 'def _prompt():\n    return PARAMS["system_prompt"]')
        .replace("len(SYSTEM)", "len(_prompt())")
    )  # fmt: skip
    refuse_params_read_at_import(reading, path, params)


ANY_SPLIT = """
def tasks(split="train"):
    for i in range(50):
        yield {"id": i}

async def rollout(task, episode):
    return 1.0
"""


@pytest.mark.slow
def test_a_test_split_the_train_split_shares_or_that_repeats_ids_is_said_in_the_plan(
    tmp_path: Path,
):
    # a tasks() that ignores its split scores runs on tasks they trained on; one that draws
    # from a small pool forever judges a run on fewer tasks than the count says
    ignores = tmp_path / "ignores_split.py"
    ignores.write_text(ANY_SPLIT)
    found = require_test_split(ignores)
    assert (found.test_size, found.test_distinct, found.overlap) == (50, 50, (50, 50))
    said = " ".join(plan_of(ignores, "does lr 1e-4 help my agent?").framing.reading.assumptions)
    assert "50 of the first 50 ids your tasks('test') yields also come among the first 50" in said
    assert "held-out scores are then not held out" in said
    repeats = tmp_path / "repeats.py"
    repeats.write_text(
        "import itertools, random\n"
        "def tasks(split='train'):\n"
        "    rng = random.Random(0 if split == 'train' else 1)\n"
        "    pool = range(200) if split == 'train' else range(200, 260)\n"
        "    while True:\n        yield {'id': rng.choice(pool)}\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    found = require_test_split(repeats)
    assert (found.test_size, found.test_distinct, found.overlap[0]) == (1000, 60, 0)
    said = " ".join(plan_of(repeats, "does lr 1e-4 help my agent?").framing.reading.assumptions)
    assert "60 distinct ids among the first 1000 tasks it yields (ids repeat)" in said
    assert "a run is judged on distinct tasks only, so on at most 48" in said
    assert found.judged_distinct == 48
    assert "not held out" not in said
    apart = tmp_path / "apart.py"
    apart.write_text(ANY_SPLIT.replace('{"id": i}', '{"id": f"{split}-{i}"}'))
    said = " ".join(plan_of(apart, "does lr 1e-4 help my agent?").framing.reading.assumptions)
    assert "not held out" not in said and "ids repeat" not in said


@pytest.mark.slow
def test_the_gate_imports_the_workflow_with_the_environment_clients_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # clients get an allow-listed environment: a variable read at import that only the
    # researcher's shell has passes a probe with the full environment and fails every run
    path = tmp_path / "judge.py"
    path.write_text(
        "import os\nAPI = os.environ['ACME_JUDGE_URL']\n"
        "def tasks(split='train'):\n    return [{'id': f'{split}{i}'} for i in range(20)]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    monkeypatch.setenv("ACME_JUDGE_URL", "http://judge.invalid")
    with pytest.raises(WorkflowFileError) as raised:
        require_test_split(path)
    first = str(raised.value).splitlines()[0]
    assert "it reads ACME_JUDGE_URL, set here but not passed to study clients" in first
    assert "--client-env ACME_JUDGE_URL" in first and "PATH" in first
    assert "KeyError: 'ACME_JUDGE_URL'" in str(raised.value)  # the traceback below it
    assert require_test_split(path, client_env_allow=["ACME_JUDGE_URL"]).has_test
    # in tasks() as well, and a variable not set here either gets the general word
    in_tasks = tmp_path / "judge_in_tasks.py"
    in_tasks.write_text(path.read_text().replace("API = os.environ", "KEY = 'ACME_JUDGE_URL'\n#")
                        .replace("return [", "os.environ[KEY]\n    return ["))  # fmt: skip
    with pytest.raises(WorkflowFileError, match=r"tasks\(\"train\"\) raised KeyError.*--client-env "
                       "ACME_JUDGE_URL"):  # fmt: skip
        require_test_split(in_tasks)
    monkeypatch.delenv("ACME_JUDGE_URL")
    with pytest.raises(WorkflowFileError, match=r"it reads ACME_JUDGE_URL, not set here.*"
                       "--client-env ACME_JUDGE_URL .*study clients get only .*PATH"):  # fmt: skip
        require_test_split(path)


def test_client_env_is_a_repeatable_option_of_plan_and_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from typer.testing import CliRunner

    from researcher.cli import app

    path = tmp_path / "judge.py"
    path.write_text(
        "import os\nAPI = os.environ['ACME_JUDGE_URL'] + os.environ['ACME_REGION']\n"
        "def tasks(split='train'):\n    return [{'id': f'{split}{i}'} for i in range(20)]\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )
    monkeypatch.setenv("ACME_JUDGE_URL", "http://judge.invalid")
    monkeypatch.setenv("ACME_REGION", "eu")
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    question = ["does lr 1e-4 help my agent?", "--workflow", str(path), "--json"]
    refused = CliRunner().invoke(app, ["plan", *question])
    assert refused.exit_code == 2 and "--client-env ACME_JUDGE_URL" in refused.output
    passed = CliRunner().invoke(
        app, ["plan", *question, "--client-env", "ACME_JUDGE_URL", "--client-env", "ACME_REGION"]
    )
    assert passed.exit_code == 0, passed.output
    assert json.loads(passed.output)["reading"]["factor"] == "lr"
    never = CliRunner().invoke(app, ["plan", *question, "--client-env", "OPENAI_API_KEY"])
    assert never.exit_code == 2 and "never passed to a client" in never.output
    valued = CliRunner().invoke(app, ["plan", *question, "--client-env", "ACME_REGION=eu"])
    assert valued.exit_code == 2 and "not the name of an" in valued.output
    # start saves the names in the study's settings, where clients and resume read them
    from researcher.settings import StudySettings

    created: list[StudySettings] = []

    def create_study(engine, settings):
        created.append(settings)
        raise SystemExit(0)

    import researcher.study

    monkeypatch.setattr(researcher.study, "create_study", create_study)
    monkeypatch.setattr("researcher.cli._engine", lambda db: None)
    started = CliRunner().invoke(
        app, ["start", question[0], "--workflow", str(path), "--client-env", "ACME_JUDGE_URL",
              "--client-env", "ACME_REGION"],
    )  # fmt: skip
    assert created and created[0].client_env_allow == ["ACME_JUDGE_URL", "ACME_REGION"], (
        started.output
    )


@pytest.mark.slow
def test_a_workflow_that_never_reaches_the_model_is_said_in_the_plan(tmp_path: Path):
    # a rule-based rollout: the gateway records no call, so no run can train
    rules = tmp_path / "rules.py"
    rules.write_text(ANY_SPLIT.replace('{"id": i}', '{"id": f"{split}-{i}"}'))
    said = " ".join(plan_of(rules, "does lr 1e-4 help my agent?").framing.reading.assumptions)
    assert "never reaches the model through the episode" in said
    calls = tmp_path / "calls.py"
    calls.write_text(
        ANY_SPLIT.replace('{"id": i}', '{"id": f"{split}-{i}"}').replace(
            "    return 1.0",
            "    llm = episode.openai()\n"
            "    await llm.chat.completions.create(model=episode.model, messages=[])\n"
            "    return 1.0",
        )
    )
    said = " ".join(plan_of(calls, "does lr 1e-4 help my agent?").framing.reading.assumptions)
    assert "never reaches the model" not in said
