"""A difficulty level named beside a task ("tiny countdown", "parallel function calling") is
read into `Reading.task_levels`, carried into the design's `task_params`, and used where the
study draws tasks: the generated workflow's training split and the held-out evaluation (the
trained policies' and the untrained baseline's). A level the task does not have is refused
with the task's levels; none named says the default."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import pytest

from researcher import evaluate
from researcher.errors import ResearcherError
from researcher.plan import Reading
from researcher.planner.catalogue import check_reading
from researcher.planner.reader import UnreadableQuestion, read_question
from tests.unit.researcher.template_workflows import designed, load_workflow

SERVED = ["m-135M"]


@pytest.mark.parametrize(
    ("question", "task", "levels"),
    [
        ("does KL help on tiny countdown?", "countdown", {"countdown": "tiny"}),
        ("does a larger group help on countdown at the tiny level?", "countdown", {"countdown": "tiny"}),
        ("does a larger group help on countdown (tiny)?", "countdown", {"countdown": "tiny"}),
        ("does lr 1e-4 help on countdown at level standard?", "countdown", {"countdown": "standard"}),
        ("does a KL penalty help on the medium level of chain_sum?", "chain_sum", {"chain_sum": "medium"}),
        ("does a larger group help on medium-level basic arithmetic?", "basic_arithmetic",
         {"basic_arithmetic": "medium"}),
        ("does a larger group help on mastermind at level hard?", "mastermind", {"mastermind": "hard"}),
        ("does lr 1e-4 help on parallel function calling?", "bfcl", {"bfcl": "parallel"}),
        ("does a larger group help on parallel multiple function calling?", "bfcl",
         {"bfcl": "parallel_multiple"}),
        ("does a larger group help on multi-turn function calling?", "bfcl", {"bfcl": "multi_turn_base"}),
        ("does KL help on countdown with 2 numbers?", "countdown", {"countdown": "tiny"}),
        ("does the KL penalty matter for function calling with multiple functions?", "bfcl",
         {"bfcl": "multiple"}),
        ("does KL help on chain_sum at medium?", "chain_sum", {"chain_sum": "medium"}),
        ("does KL help on countdown?", "countdown", {}),
        ("does KL help on the easy task?", "learnable", {}),
        ("does mixing easy chain_sum into basic_arithmetic training help on basic_arithmetic?",
         "basic_arithmetic", {"chain_sum": "easy"}),
    ],
)  # fmt: skip
def test_a_level_beside_a_task_is_read_as_its_level(question, task, levels):
    reading = read_question(question, served_models=SERVED)
    assert (reading.task, reading.task_levels) == (task, levels)


def test_a_task_size_is_its_level_not_a_level_of_the_factor():
    reading = read_question(
        "does GRPO with a group size of 16 outperform group size 4 on 3-number countdown?",
        served_models=SERVED,
    )
    assert (reading.levels, reading.task_levels) == ([4, 16], {"countdown": "easy"})


def test_a_task_with_levels_and_none_named_says_its_default_in_the_assumptions():
    reading = read_question("does KL help on countdown?", served_models=SERVED)
    assert any("default level, easy" in a and "tiny" in a for a in reading.assumptions)
    named = read_question("does KL help on tiny countdown?", served_models=SERVED)
    assert any("countdown at level tiny" in a for a in named.assumptions)
    assert "held-out countdown (level tiny) accuracy" in named.summary


def test_a_level_the_task_does_not_have_is_refused_with_its_levels():
    with pytest.raises(UnreadableQuestion, match="no level 'hard'.*tiny, easy, standard"):
        read_question("does KL help on hard countdown?", served_models=SERVED)


def test_a_difficulty_word_on_a_task_of_one_difficulty_is_said_not_refused():
    reading = read_question("does KL help on easy arithmetic?", served_models=SERVED)
    assert reading.task_levels == {}
    assert any("arithmetic is served at one difficulty here" in a for a in reading.assumptions)


def test_two_levels_of_one_task_are_refused():
    with pytest.raises(UnreadableQuestion, match="two levels of countdown"):
        read_question(
            "does a larger group on tiny countdown help on standard countdown?",
            served_models=SERVED,
        )


def _reading(**update) -> Reading:
    base = read_question("does KL help on countdown?", served_models=SERVED)
    return base.model_copy(update=update)


def test_check_reading_refuses_a_level_an_llm_made_up_or_one_of_an_unnamed_task():
    with pytest.raises(ResearcherError, match="no level 'impossible'"):
        check_reading(_reading(task_levels={"countdown": "impossible"}), served_models=SERVED)
    with pytest.raises(ResearcherError, match="not among the tasks"):
        check_reading(_reading(task_levels={"chain_sum": "easy"}), served_models=SERVED)
    with pytest.raises(ResearcherError, match="no difficulty levels"):
        check_reading(
            _reading(task="arithmetic", tasks=["arithmetic"], task_levels={"arithmetic": "easy"}),
            served_models=SERVED,
        )


def _numbers(task: dict) -> list[int]:
    return task["metadata"]["numbers"]


def test_every_arm_trains_on_the_named_level_and_the_design_says_so(tmp_path):
    planner, framing, design = designed("does a larger group help on tiny countdown?")
    assert design.task_params == {"countdown": {"level": "tiny"}}
    assert design.eval_task == "countdown (level tiny)"
    assert "countdown (level tiny)" in design.decision_rule
    for i, arm in enumerate(design.arms):
        workflow = load_workflow(
            planner.write_workflow(framing, design, arm, seed=0), tmp_path, f"w{i}"
        )
        drawn = list(itertools.islice(workflow.tasks("train"), 30))
        assert {len(_numbers(task)) for task in drawn} == {2}  # tiny: 2 numbers


@pytest.mark.slow
def test_without_a_level_the_arms_train_on_the_default_level(tmp_path):
    planner, framing, design = designed("does a larger group help on countdown?")
    assert design.task_params == {}
    workflow = load_workflow(
        planner.write_workflow(framing, design, design.arms[0], seed=0), tmp_path, "w"
    )
    drawn = list(itertools.islice(workflow.tasks("train"), 30))
    assert {len(_numbers(task)) for task in drawn} == {3}  # easy: 3 numbers


def test_the_held_out_evaluation_draws_the_named_level(monkeypatch):
    scored = []

    async def fake_evaluation(tasks, rollout, **_):
        scored.extend(tasks)
        return SimpleNamespace(errors={}, scored=[1.0] * len(tasks))

    monkeypatch.setattr(evaluate, "run_evaluation", fake_evaluation)
    outcomes = evaluate.evaluate_policy(
        "http://gw", "m", family="countdown", n=6, params={"level": "tiny"}
    )
    assert outcomes == [1.0] * 6
    assert {len(_numbers(task)) for task in scored} == {2}
    assert evaluate.held_out_available("bfcl", 10_000, {"category": "parallel"}) < 10_000


def test_the_baseline_is_evaluated_at_the_level_and_keyed_by_it(monkeypatch):
    from researcher.nodes import evaluate as node

    calls = []

    def fake_policy(url, model, **kwargs):
        calls.append(kwargs)
        return [1.0, 0.0]

    events = []
    ctx = SimpleNamespace(
        study_id="s",
        gateway=SimpleNamespace(url="http://gw", api_key=None),
        session=lambda: _NoSession(),
        event=lambda *args, **kwargs: events.append(kwargs.get("data")),
    )
    monkeypatch.setattr(node, "evaluate_policy", fake_policy)
    monkeypatch.setattr(node.crud, "events", lambda session, study_id: [])
    _, framing, design = designed("does a larger group help on tiny countdown?")
    node.baselines(ctx, design, framing, [])
    assert calls[0]["params"] == {"level": "tiny"}
    assert json.loads(json.dumps(events[0]["key"]))["task_params"] == {"level": "tiny"}


class _NoSession:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_the_rendered_llm_prompts_name_each_tasks_levels():
    import prompts
    from researcher.planner.catalogue import TASKS

    text = prompts.render(
        "planner/frame.j2", tasks=list(TASKS.values()), question="q", served_models=SERVED,
        model=None, factors={}, outcomes=[], directions=[], default_margin=0.05,
        workflow=None, workflow_params=None,
    )  # fmt: skip
    assert "levels, easiest first: tiny, easy, standard; default easy" in text
    assert '"task_levels"' in text


@pytest.mark.slow
def test_the_decision_rule_and_the_reports_design_section_name_the_level(tmp_path):
    """The pre-registered rule's "answers N held-out … tasks", the report's "Held-out
    evaluation" line and its arms' tasks name the level the runs were drawn at."""
    from researcher.report import write_report
    from tests.unit.researcher.test_report import empty_context

    _, _, design = designed("does a larger group help on tiny countdown?")
    assert "48 held-out countdown (level tiny) tasks" in design.decision_rule.replace("\n", " ")
    files = write_report(empty_context().model_copy(update={"designs": [design]}), tmp_path)
    for text in (files.markdown.read_text(), files.html.read_text()):
        assert "tasks of <code>countdown (level tiny)</code> per run" in text or (
            "tasks of `countdown (level tiny)` per run" in text
        )
        assert "countdown (level tiny) 1" in text  # the arms' training tasks
