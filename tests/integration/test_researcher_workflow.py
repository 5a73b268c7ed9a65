"""Bring your own agent, end to end: `researcher start "<question>" --workflow my_agent.py`
with its embedded gateway serving the `tiny` model, on a workflow written here (not
shipped) whose reward is its own and whose `PARAMS = {"system_prompt": ...}` the question
varies. The study trains it through generated wrappers (the user's file never changes),
judges each run with the workflow's own reward on its test split, and reports; a workflow
without a test split is refused before anything starts.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher_workflow.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_researcher import (  # noqa: F401  (`home`: a fixture)
    assert_nothing_left_running,
    engine_of,
    finish,
    home,
    only_study,
    recorded,
    researcher,
    start_researcher,
    tail,
)

pytestmark = pytest.mark.slow

STEP_BY_STEP = "Think step by step, then answer with one word."
QUESTION = f'does the system prompt "{STEP_BY_STEP}" help my agent?'
DEFAULT_PROMPT = "Answer with one word."
# the user's own agent: its reward is 0.25 plus half the share of the word's letters in the
# reply — never 0 or 1, so held-out outcomes thresholded as a shipped task's would be all 0
MY_AGENT = f'''
"""My agent: asked to say a word, rewarded by how much of it the reply has."""

PARAMS = {{"system_prompt": {DEFAULT_PROMPT!r}}}
WORDS = ["banana", "orange", "purple", "rocket", "garden", "silver", "winter", "candle"]


def tasks(split="train"):
    if split not in ("train", "test"):
        raise ValueError(f"no split {{split!r}}")
    start = 0 if split == "train" else 4
    return [{{"id": f"{{split}}-{{i}}", "word": WORDS[(start + i) % 8]}} for i in range(40)]


async def rollout(task, episode):
    reply = await episode.openai().chat.completions.create(
        model=episode.model,
        max_tokens=8,
        messages=[
            {{"role": "system", "content": PARAMS["system_prompt"]}},
            {{"role": "user", "content": "Say " + task["word"] + "."}},
        ],
    )
    text = (reply.choices[0].message.content or "").lower()
    letters = set(task["word"])
    return 0.25 + 0.5 * len(letters & set(text)) / len(letters)
'''


def test_a_study_of_the_users_own_workflow_varies_its_params_and_judges_by_its_reward(
    home: Path,  # noqa: F811
):
    agent = home / "work" / "my_agent.py"
    agent.parent.mkdir()
    agent.write_text(MY_AGENT)
    original = agent.read_bytes()

    process = start_researcher(home, "start", QUESTION, "--workflow", str(agent),
                               "--budget", "2m", "--model", "tiny", "--seeds", "1")  # fmt: skip
    code = finish(process, home, timeout=300)
    log = tail(home / "researcher.log", 200)
    assert code == 0, log
    assert "workflow:system_prompt" in log  # the reading, printed before anything ran

    engine = engine_of(home)
    study_id = only_study(engine)
    study, report, experiments, processes, events = recorded(engine, study_id)
    assert study.status == "finished", (study, log)
    assert not [e for e in events if e.kind == "error"], [e.message for e in events]
    study_dir = Path(study.directory)
    settings = json.loads((study_dir / "settings.json").read_text())
    assert settings["workflow"] == str(agent)
    assert (study_dir / "user_workflow" / "my_agent.py").read_bytes() == original  # the record
    assert agent.read_bytes() == original  # never edited

    # runs of both levels of system_prompt (one seed each per look; a later look, when the
    # budget leaves room for one, adds seeds), each through a wrapper importing the user's file
    assert {e.role for e in experiments} == {"control", "treatment"}, experiments
    prompts_by_arm: dict[str, set[str]] = {}
    for experiment in experiments:
        wrapper = Path(str(experiment.workflow_path)).read_text()
        assert f"USER_WORKFLOW = {str(agent)!r}" in wrapper
        shipped = Path(str(experiment.workflow_path)).parent / "user" / "my_agent.py"
        assert shipped.read_bytes() == original  # what a Ray job runs, beside the wrapper
        overrides = json.loads(eval(wrapper.split("OVERRIDES = json.loads(")[1].split(")\n")[0]))  # noqa: S307
        prompt = overrides.get("system_prompt", DEFAULT_PROMPT)
        prompts_by_arm.setdefault(experiment.role, set()).add(prompt)
    assert prompts_by_arm == {"control": {DEFAULT_PROMPT}, "treatment": {STEP_BY_STEP}}

    # judged by the workflow's own reward on its test split: raw rewards, never thresholded
    evaluated = [e for e in experiments if (e.result or {}).get("eval_outcomes")]
    assert evaluated, [(e.id, e.status, e.result) for e in experiments]
    for experiment in evaluated:
        outcomes = experiment.result["eval_outcomes"]
        assert all(0.25 <= r <= 0.75 for r in outcomes), outcomes
    # the untrained model once per prompt: what a prompt alone does is not credited to training
    baselines = [e for e in events if e.phase == "evaluate" and e.kind == "baseline"]
    prompts = {
        (e.data or {}).get("key", {}).get("params", {}).get("system_prompt") for e in baselines
    }
    assert prompts == {DEFAULT_PROMPT, STEP_BY_STEP}, [e.message for e in baselines]
    assert any(STEP_BY_STEP in e.message for e in baselines), [e.message for e in baselines]
    assert report is not None and Path(report.html_path).is_file()
    assert QUESTION in Path(report.markdown_path).read_text()
    assert_nothing_left_running(study_dir)


def test_a_workflow_without_a_test_split_is_refused_before_anything_starts(home: Path):  # noqa: F811
    agent = home / "train_only.py"
    agent.write_text(MY_AGENT.replace('("train", "test")', '("train",)'))
    refused = researcher(home, "start", QUESTION, "--workflow", str(agent), "--model", "tiny")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = " ".join(refused.stderr.split())
    assert "test" in said and "no split 'test'" in said, said
    assert not (home / "studies").exists() and not (home / "researcher.db").exists()
