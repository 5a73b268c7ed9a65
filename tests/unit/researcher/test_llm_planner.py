"""The LLM planner parses what a chat endpoint says into plan records — the question's
reading (factor, levels, control, task, outcome, direction, margin) checked like the
template planner's, and designs with one arm per level — re-asks with the problem when the
answer is unusable, and gives up with PlannerOutputError; on a scripted fake client with the
OpenAI SDK's `chat.completions.create` shape, and on the real SDK pointed at an
httpx.MockTransport."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import openai
import pytest

from researcher.errors import (
    PlannerOutputError,
    ResearcherError,
    UnmappableQuestion,
    UnreadableQuestion,
)
from researcher.plan import Analysis, Comparison, Design, Framing, Hypothesis, Reading
from researcher.planner import make_planner
from researcher.planner.llm import LLMPlanner
from researcher.planner.template import TemplatePlanner

SERVED = ["HuggingFaceTB/SmolLM2-135M-Instruct"]
KL_QUESTION = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"
READING = {
    "factor": "kl_coef",
    "levels": [0.0, 0.5],
    "control": 0.0,
    "task": "learnable",
    "tasks": ["learnable"],
    "outcome": "learning_speed",
    "direction": "less",
    "margin": None,
    "steps": None,
    "threshold": None,
    "assumptions": ["kl_coef 0 is the control: only 0.5 is named"],
    "summary": "kl_coef 0 vs 0.5 on learnable, judged by learning speed: does 0.5 slow it?",
}
FRAME = {
    "reading": READING,
    "summary": READING["summary"],
    "model_requested": None,
    "model": SERVED[0],
    "substitution": None,
}
WORKFLOW = """```python
import itertools

from swarm.tasks import arithmetic


def tasks(split="train"):
    for task in arithmetic.tasks(split, seed=0):
        yield {**task, "family": "arithmetic"}


async def rollout(task, episode):
    return await arithmetic.rollout(task, episode)
```"""


class ScriptedClient:
    """Answers chat calls with the scripted replies in turn, and keeps what it was asked."""

    def __init__(self, *replies: str):
        self.replies = list(replies)
        self.asked: list[list[dict]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, *, model, messages, **options):
        self.asked.append(list(messages))
        message = SimpleNamespace(content=self.replies.pop(0))
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def _planner(*replies: str, max_attempts: int = 3) -> tuple[LLMPlanner, ScriptedClient]:
    client = ScriptedClient(*replies)
    planner = LLMPlanner(
        "http://planner.test/v1", "key", "planner-model", client=client, max_attempts=max_attempts
    )
    return planner, client


def _framing():
    return TemplatePlanner().frame("does multi-task mixing help?", served_models=SERVED)


def _frame_with(reading: dict) -> str:
    return json.dumps({**FRAME, "reading": reading, "summary": reading.get("summary", "")})


def test_a_valid_reading_becomes_a_framing_of_its_factor_signed_by_the_planner():
    planner, client = _planner(json.dumps(FRAME))
    framing = planner.frame(KL_QUESTION, served_models=SERVED)
    assert framing.reading == Reading.model_validate(READING)
    assert framing.family == "kl_coef" and framing.model == SERVED[0]
    assert framing.summary == READING["summary"]
    assert framing.planner == "llm:planner-model@http://planner.test/v1" == planner.name
    assert framing.workflow is None and framing.workflow_params == {}
    prompt = client.asked[0][-1]["content"]
    assert KL_QUESTION in prompt
    assert "calculator" in prompt and "async def rollout" in prompt  # catalogue + contract
    for name in ("kl_coef", "lora", "task_mix", "base_model", "temperature", "max_turns"):
        assert f"{name}" in prompt  # the factor names
    for name in ("heldout_accuracy", "learning_speed", "final_train_reward", "cost"):
        assert name in prompt  # the outcomes
    for name in ("greater", "less", "two_sided", "equivalent"):
        assert name in prompt  # the directions
    assert "workflow:<PARAM>" not in prompt  # only offered when a workflow is studied
    assert "the easy single-turn task" in prompt  # the catalogue's task descriptions
    assert '"lr": the learning rate; default 2e-05; > 0' in prompt  # factors with their defaults


def test_garbage_then_valid_json_is_retried_with_the_problem():
    planner, client = _planner("I think KL slows it!", "```json\n" + json.dumps(FRAME) + "\n```")
    assert planner.frame(KL_QUESTION, served_models=SERVED).family == "kl_coef"
    assert len(client.asked) == 2
    assert "no JSON object" in client.asked[1][-1]["content"]
    assert client.asked[1][-2] == {"role": "assistant", "content": "I think KL slows it!"}


def test_an_old_style_framing_without_a_reading_is_sent_back_asking_for_one():
    old = {"family": "task_mixing", "summary": "s", "model": SERVED[0]}
    planner, client = _planner(json.dumps(old), json.dumps(FRAME))
    assert planner.frame(KL_QUESTION, served_models=SERVED).reading is not None
    assert '{"reading"' in client.asked[1][-1]["content"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"outcome": "accuracy"}, "outcome"),
        ({"direction": "bigger"}, "direction"),
        ({"levels": [0.5]}, "levels"),
    ],
)
def test_a_reading_that_breaks_the_schema_is_sent_back_with_the_problem(change, problem):
    planner, client = _planner(_frame_with({**READING, **change}), json.dumps(FRAME))
    assert planner.frame(KL_QUESTION, served_models=SERVED).reading.factor == "kl_coef"
    assert "validation error" in client.asked[1][-1]["content"]
    assert problem in client.asked[1][-1]["content"]


def test_an_unknown_factor_is_sent_back_naming_it():
    wrong = {**READING, "factor": "kl_penalty_strength"}
    planner, client = _planner(_frame_with(wrong), json.dumps(FRAME))
    assert planner.frame(KL_QUESTION, served_models=SERVED).family == "kl_coef"
    assert "kl_penalty_strength" in client.asked[1][-1]["content"]


def test_levels_out_of_bounds_are_sent_back():
    wrong = {**READING, "factor": "lr", "levels": [2e-5, 50.0], "control": 2e-5}
    planner, client = _planner(_frame_with(wrong), json.dumps(FRAME))
    assert planner.frame(KL_QUESTION, served_models=SERVED).reading.levels == [0.0, 0.5]
    assert "50" in client.asked[1][-1]["content"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"direction": "equivalent", "margin": None}, "margin"),
        ({"factor": "max_turns", "levels": [2, 8], "control": 2}, "guessing game"),
        ({"task": "minesweeper"}, "minesweeper"),
        ({"factor": "base_model", "levels": ["smollm2-135m", "gpt-9"], "control": "smollm2-135m"},
         "not served"),
    ],
)  # fmt: skip
def test_a_reading_the_catalogue_refuses_is_sent_back_with_the_reason(change, problem):
    planner, client = _planner(_frame_with({**READING, **change}), json.dumps(FRAME))
    assert planner.frame(KL_QUESTION, served_models=SERVED).reading.factor == "kl_coef"
    assert problem in client.asked[1][-1]["content"]


def test_the_catalogue_normalises_the_reading_control_first():
    reading = {**READING, "factor": "group_size", "levels": [8.0, 2.0], "control": 2}
    planner, _ = _planner(_frame_with(reading))
    got = planner.frame(KL_QUESTION, served_models=SERVED).reading
    assert got.levels == [2, 8] and all(type(level) is int for level in got.levels)


def test_always_garbage_raises_planner_output_error_with_the_last_problem():
    bad = _frame_with({**READING, "outcome": "vibes"})
    planner, client = _planner("nope", "{not json", bad, max_attempts=3)
    with pytest.raises(PlannerOutputError, match="3 attempt.*validation error"):
        planner.frame(KL_QUESTION, served_models=SERVED)
    assert len(client.asked) == 3


def test_an_unserved_model_is_sent_back():
    wrong = {**FRAME, "model": "Qwen/Qwen2.5-7B-Instruct"}
    planner, client = _planner(json.dumps(wrong), json.dumps(FRAME))
    assert planner.frame("does KL 0.5 slow a 7B?", served_models=SERVED).model == SERVED[0]
    assert "not served" in client.asked[1][-1]["content"]


def test_a_workflow_without_a_test_split_is_refused_before_the_model_is_asked():
    planner, client = _planner()
    with pytest.raises(UnreadableQuestion, match="no test split"):
        planner.frame(
            "does lr 1e-4 help my agent?",
            served_models=SERVED,
            workflow="/home/me/my_agent.py",
            workflow_params={},
            workflow_has_test=False,
        )
    assert client.asked == []


def test_a_base_model_study_is_framed_on_its_control_model():
    served = ["smollm2-135m", "Qwen/Qwen2.5-0.5B-Instruct"]
    reading = {**READING, "factor": "base_model", "levels": served, "control": served[0],
               "outcome": "heldout_accuracy", "direction": "greater"}  # fmt: skip
    answer = json.dumps({**FRAME, "reading": reading, "model": served[1]})
    planner, _ = _planner(answer)
    framing = planner.frame("does a bigger model learn the easy task better?", served_models=served)
    assert framing.model == served[0] and framing.family == "base_model"


def test_an_unmappable_answer_is_the_clear_refusal_with_how_to_ask():
    planner, _ = _planner(json.dumps({"unmappable": "not about training a model"}))
    with pytest.raises(
        UnmappableQuestion, match="(?s)llm:planner-model.*not about training.*Ask about.*KL"
    ):
        planner.frame("what is love?", served_models=SERVED)


def test_a_workflow_study_shows_its_params_and_may_vary_one():
    reading = {
        **READING,
        "factor": "workflow:system_prompt",
        "levels": ["Answer.", "Think step by step, then answer."],
        "control": "Answer.",
        "task": "workflow",
        "tasks": ["workflow"],
        "outcome": "heldout_accuracy",
        "direction": "greater",
    }
    params = {"system_prompt": "Answer.", "max_tools": 3}
    planner, client = _planner(_frame_with(reading))
    framing = planner.frame(
        "does a step-by-step system prompt help my agent?",
        served_models=SERVED,
        workflow="/home/me/my_agent.py",
        workflow_params=params,
    )
    assert framing.family == "workflow:system_prompt" and framing.reading.task == "workflow"
    assert framing.workflow == "/home/me/my_agent.py" and framing.workflow_params == params
    prompt = client.asked[0][-1]["content"]
    assert "/home/me/my_agent.py" in prompt and '"system_prompt": "Answer."' in prompt
    assert "workflow:system_prompt" in prompt


def test_hypotheses_design_and_decision_parse_into_plan_records():
    framing = _framing()
    template = TemplatePlanner()
    [h1] = template.hypotheses(framing, notes=[])
    design = template.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    analysis = Analysis(
        arm_means={"a": 0.3, "b": 0.4}, arm_ci={"a": (0.2, 0.4), "b": (0.3, 0.5)},
        comparisons=[Comparison(treatment="b", control="a", difference=0.1, ci_low=0.02,
                                ci_high=0.18, effect_size=0.2, n_seeds=2)],
        verdict="supported", summary="b beats a",
    )  # fmt: skip
    decision = {"action": "conclude", "reason": "supported", "conclusion": "b beats a by 0.1"}
    planner, client = _planner(
        json.dumps({"hypotheses": [h1.model_dump()]}),
        design.model_dump_json(),
        json.dumps(decision),
    )
    assert planner.hypotheses(framing, notes=["use 3 seeds"]) == [h1]
    assert "use 3 seeds" in client.asked[0][-1]["content"]
    assert planner.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[]) == design
    assert "17 steps" in client.asked[1][-1]["content"]
    got = planner.decide(framing, h1, analysis, notes=[], budget_left_s=100, round=1)
    assert got.action == "conclude" and got.conclusion == "b beats a by 0.1"


H1 = Hypothesis(key="H1", statement="KL 0.5 slows learning", prediction="p", refuted_if="r")


def _read_framing(**changes) -> Framing:
    reading = Reading.model_validate({**READING, **changes})
    return Framing(question=KL_QUESTION, family=reading.factor, summary=reading.summary,
                   model=SERVED[0], planner="llm:x", served_models=SERVED, reading=reading)  # fmt: skip


def _arm(name: str, level, role: str = "treatment", **run) -> dict:
    return {"name": name, "role": role, "description": name, "tasks": {"learnable": 1.0},
            "run": {"algorithm": "grpo", "lr": 2e-5, **run}, "level": level}  # fmt: skip


def _design_answer(*arms: dict) -> str:
    return json.dumps({
        "hypothesis": "H1", "arms": list(arms), "seeds": [0, 1], "steps": 12,
        "eval_family": "arithmetic", "eval_episodes": 16, "decision_rule": "rule",
        "outcome": "heldout_accuracy", "direction": "greater", "margin": 0.3,
    })  # fmt: skip


def _design(planner: LLMPlanner, framing: Framing) -> Design:
    return planner.design(framing, H1, budget_s=1200, seeds=2, step_seconds=12, notes=[])


def test_a_design_follows_the_reading_whatever_the_model_says_of_outcome_and_roles():
    # arms in the wrong order, both "treatment", kl_coef missing from one run, the wrong
    # outcome, direction, margin and judged task: the reading decides all of them
    answer = _design_answer(_arm("kl-0.5", 0.5), _arm("no-kl", 0, kl_coef=0.3))
    planner, client = _planner(answer)
    design = _design(planner, _read_framing())
    assert [arm.name for arm in design.arms] == ["no-kl", "kl-0.5"]
    assert [arm.role for arm in design.arms] == ["control", "treatment"]
    assert [arm.run["kl_coef"] for arm in design.arms] == [0, 0.5]
    assert [arm.level for arm in design.arms] == [0, 0.5]
    assert all(arm.run["max_steps"] == 12 and arm.run["task_mix"] == {"learnable": 1.0}
               for arm in design.arms)  # fmt: skip
    assert (design.outcome, design.direction, design.margin) == ("learning_speed", "less", None)
    assert design.eval_family == "learnable"
    prompt = client.asked[0][-1]["content"]
    assert "one arm per level" in prompt and "[0.0, 0.5]" in prompt and "learning_speed" in prompt


def test_a_smallest_effect_the_question_named_is_the_designs_whatever_the_model_says():
    # "... by at least 10 points": the reading's 0.1, not the model's 0.05 (nor its default)
    answer = json.loads(_design_answer(_arm("no-kl", 0, "control"), _arm("kl-0.5", 0.5)))
    planner, _ = _planner(json.dumps({**answer, "min_effect": 0.05}))
    design = _design(planner, _read_framing(outcome="heldout_accuracy", direction="greater",
                                            min_effect=0.1))  # fmt: skip
    assert design.min_effect == 0.1 and design.min_effect_named
    assert "at least 0.1" in design.decision_rule


def test_arms_that_miss_a_level_are_sent_back_with_the_levels():
    planner, client = _planner(
        _design_answer(_arm("no-kl", 0.0, "control"), _arm("kl-0.1", 0.1)),
        _design_answer(_arm("no-kl", 0.0, "control"), _arm("kl-0.5", 0.5)),
    )
    assert [arm.level for arm in _design(planner, _read_framing()).arms] == [0.0, 0.5]
    assert "[0.0, 0.5]" in client.asked[1][-1]["content"]
    assert "one arm per level" in client.asked[1][-1]["content"]


def test_three_levels_need_three_arms():
    framing = _read_framing(levels=[0.0, 0.1, 0.5], outcome="heldout_accuracy")
    two = _design_answer(_arm("kl-0", 0.0, "control"), _arm("kl-0.5", 0.5))
    three = _design_answer(_arm("kl-0", 0.0), _arm("kl-0.1", 0.1), _arm("kl-0.5", 0.5))
    planner, client = _planner(two, three)
    design = _design(planner, framing)
    assert [arm.run["kl_coef"] for arm in design.arms] == [0.0, 0.1, 0.5]
    assert [arm.role for arm in design.arms] == ["control", "treatment", "treatment"]
    assert "3 arms" in client.asked[0][-1]["content"]
    assert "one arm per level" in client.asked[1][-1]["content"]


def test_an_equivalence_reading_on_lora_sets_the_rank_where_lora_lives_and_keeps_the_margin():
    framing = _read_framing(factor="lora", levels=["full", 16], control="full",
                            direction="equivalent", margin=0.05, outcome="heldout_accuracy")  # fmt: skip
    answer = _design_answer(
        _arm("full", "full", lora={"r": 8, "alpha": 8}), _arm("lora-r16", 16, lr=1e-4)
    )
    planner, _ = _planner(answer)
    design = _design(planner, framing)
    full, lora = design.arms
    assert "lora" not in full.run and lora.run["lora"] == {"r": 16, "alpha": 32}
    assert lora.run["lr"] == 1e-4  # what else the model set for an arm stays
    assert (design.direction, design.margin) == ("equivalent", 0.05)


def test_an_arm_without_a_level_is_read_from_where_the_factor_lives():
    framing = _read_framing(factor="temperature", levels=[1.0, 1.2], control=1.0)
    arms = [_arm("t-1.0", None), _arm("t-1.2", None)]
    arms[0]["workflow_params"], arms[1]["workflow_params"] = (
        {"temperature": 1.0},
        {"temperature": 1.2},
    )
    planner, _ = _planner(_design_answer(*arms))
    design = _design(planner, framing)
    assert [arm.workflow_params["temperature"] for arm in design.arms] == [1.0, 1.2]
    assert [arm.level for arm in design.arms] == [1.0, 1.2]
    assert all("temperature" not in arm.run for arm in design.arms)


def test_a_task_mix_level_becomes_the_arms_tasks_and_run_task_mix():
    mixed = {"arithmetic": 0.5, "calculator": 0.5}
    framing = _read_framing(factor="task_mix", levels=[{"arithmetic": 1}, mixed],
                            control={"arithmetic": 1}, task="arithmetic",
                            tasks=["arithmetic", "calculator"], outcome="heldout_accuracy")  # fmt: skip
    planner, _ = _planner(_design_answer(_arm("only", {"arithmetic": 1.0}), _arm("mix", mixed)))
    only, mix = _design(planner, framing).arms
    assert only.tasks == only.run["task_mix"] == {"arithmetic": 1.0}
    assert mix.tasks == mix.run["task_mix"] == mixed


def test_the_steps_a_question_fixes_win():
    planner, _ = _planner(_design_answer(_arm("no-kl", 0.0), _arm("kl-0.5", 0.5)))
    design = _design(planner, _read_framing(steps=20))
    assert design.steps == 20 and all(arm.run["max_steps"] == 20 for arm in design.arms)


def test_a_workflow_design_is_judged_on_the_workflow():
    framing = _read_framing(factor="workflow:system_prompt", levels=["a", "b"], control="a",
                            task="workflow", tasks=["workflow"], outcome="heldout_accuracy")  # fmt: skip
    framing = framing.model_copy(
        update={"workflow": "/home/me/agent.py", "workflow_params": {"system_prompt": "a"}}
    )
    arms = [{**_arm(name, name), "tasks": {"workflow": 1.0}} for name in ("a", "b")]
    planner, _ = _planner(_design_answer(*arms))
    design = _design(planner, framing)
    assert design.eval_family == "workflow"
    assert [arm.workflow_params for arm in design.arms] == [
        {"system_prompt": "a"},
        {"system_prompt": "b"},
    ]
    assert all("task_mix" not in arm.run for arm in design.arms)  # no task families to weigh


def test_a_none_level_leaves_the_setting_at_its_own_default():
    framing = _read_framing(factor="max_turns", levels=[None, 4], control=None,
                            task="guess_number", tasks=["guess_number"],
                            outcome="heldout_accuracy")  # fmt: skip
    own, four = _arm("turns-own", None), _arm("turns-4", 4)
    own["workflow_params"], four["workflow_params"] = {"max_turns": 9}, {"max_turns": 4}
    own["level"] = None  # read from where max_turns lives: 9 is no level of the reading
    planner, client = _planner(_design_answer(own, four), _design_answer(
        {**own, "workflow_params": {}}, four))  # fmt: skip
    design = _design(planner, framing)
    assert [arm.workflow_params for arm in design.arms] == [{}, {"max_turns": 4}]
    assert "[None, 4]" in client.asked[1][-1]["content"]


def test_a_refine_without_a_follow_up_is_sent_back():
    framing = _framing()
    h1 = Hypothesis(key="H1", statement="s", prediction="p", refuted_if="r")
    analysis = Analysis(arm_means={}, arm_ci={}, comparisons=[], verdict="inconclusive",
                        summary="")  # fmt: skip
    planner, client = _planner(
        json.dumps({"action": "refine", "reason": "more data"}),
        json.dumps({"action": "conclude", "reason": "done", "conclusion": "inconclusive"}),
    )
    decision = planner.decide(framing, h1, analysis, notes=[], budget_left_s=1e4, round=1)
    assert decision.action == "conclude"
    assert "follow_up" in client.asked[1][-1]["content"]


def _workflow_args():
    framing = _framing()
    template = TemplatePlanner()
    h1 = template.hypotheses(framing, notes=[])[0]
    design = template.design(framing, h1, budget_s=1200, seeds=2, step_seconds=12, notes=[])
    return framing, design, design.arms[0]


def test_valid_workflow_code_is_returned():
    framing, design, arm = _workflow_args()
    planner, client = _planner(WORKFLOW)
    source = planner.write_workflow(framing, design, arm, seed=0, feedback="KeyError: 'x'")
    assert "async def rollout" in source and "```" not in source
    assert "KeyError: 'x'" in client.asked[0][-1]["content"]


def test_code_importing_a_missing_module_is_sent_back_then_refused():
    framing, design, arm = _workflow_args()
    missing = WORKFLOW.replace("import itertools", "import numpy_that_is_not_here")
    planner, client = _planner(missing, missing, max_attempts=2)
    with pytest.raises(PlannerOutputError, match="numpy_that_is_not_here"):
        planner.write_workflow(framing, design, arm, seed=0)
    assert "not installed" in client.asked[1][-1]["content"]


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("```python\ndef tasks(:\n```", "does not parse"),
        ("```python\ndef tasks(split='train'):\n    return []\n```", "async def rollout"),
        ("```python\ndef tasks(s='train'): return []\ndef rollout(t, e): return 1.0\n```",
         "async def rollout"),
        ("just prose", "python block"),
    ],
)  # fmt: skip
def test_unusable_code_is_sent_back_with_its_problem(code, problem):
    framing, design, arm = _workflow_args()
    planner, client = _planner(code, WORKFLOW)
    planner.write_workflow(framing, design, arm, seed=0)
    assert problem in client.asked[1][-1]["content"]


def test_the_openai_sdk_over_a_mock_transport_is_driven_the_same_way():
    answers = iter(["garbage", json.dumps(FRAME)])
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": next(answers)}}],
        }  # fmt: skip
        return httpx.Response(200, json=body)

    client = openai.OpenAI(
        base_url="http://planner.test/v1", api_key="k",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )  # fmt: skip
    planner = LLMPlanner("http://planner.test/v1", "k", "m", client=client)
    assert planner.frame(KL_QUESTION, served_models=SERVED).family == "kl_coef"
    assert len(seen) == 2 and seen[1]["model"] == "m"


def test_an_unreachable_endpoint_is_a_planner_output_error():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = openai.OpenAI(
        base_url="http://planner.test/v1", api_key="k", max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )  # fmt: skip
    planner = LLMPlanner("http://planner.test/v1", "k", "m", client=client)
    with pytest.raises(PlannerOutputError, match="could not be asked"):
        planner.frame("does mixing help?", served_models=SERVED)


def test_make_planner_accepts_template_or_a_url_and_names_both_otherwise(monkeypatch):
    assert make_planner(None).name == "template"
    assert make_planner("template").name == "template"
    monkeypatch.setenv("SWARMRL_PLANNER_MODEL", "gpt-x")
    monkeypatch.setenv("SWARMRL_PLANNER_API_KEY", "k")
    assert make_planner("http://localhost:9/v1").name == "llm:gpt-x@http://localhost:9/v1"
    assert make_planner("https://h/v1", model="other").name == "llm:other@https://h/v1"
    with pytest.raises(ResearcherError, match="'template'.*URL"):
        make_planner("gpt-4")
    monkeypatch.delenv("SWARMRL_PLANNER_MODEL")
    with pytest.raises(ResearcherError, match="SWARMRL_PLANNER_MODEL"):
        make_planner("http://localhost:9/v1")
