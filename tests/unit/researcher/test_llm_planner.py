"""The LLM planner parses what a chat endpoint says into plan records, re-asks with the
problem when the answer is unusable, and gives up with PlannerOutputError — on a scripted
fake client with the OpenAI SDK's `chat.completions.create` shape, and on the real SDK
pointed at an httpx.MockTransport."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import openai
import pytest

from researcher.errors import PlannerOutputError, ResearcherError, UnmappableQuestion
from researcher.plan import Analysis, Comparison, Hypothesis
from researcher.planner import make_planner
from researcher.planner.llm import LLMPlanner
from researcher.planner.template import TemplatePlanner

SERVED = ["HuggingFaceTB/SmolLM2-135M-Instruct"]
FRAME = {
    "family": "task_mixing",
    "summary": "arithmetic alone vs mixed with calculator, judged on held-out arithmetic",
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


def test_a_valid_json_answer_becomes_a_framing_signed_by_the_planner():
    planner, client = _planner(json.dumps(FRAME))
    framing = planner.frame("does multi-task mixing help?", served_models=SERVED)
    assert framing.family == "task_mixing" and framing.model == SERVED[0]
    assert framing.planner == "llm:planner-model@http://planner.test/v1" == planner.name
    prompt = client.asked[0][-1]["content"]
    assert "does multi-task mixing help?" in prompt
    assert "calculator" in prompt and "async def rollout" in prompt  # catalogue + contract


def test_garbage_then_valid_json_is_retried_with_the_problem():
    planner, client = _planner("I think mixing helps!", "```json\n" + json.dumps(FRAME) + "\n```")
    assert planner.frame("does mixing help?", served_models=SERVED).family == "task_mixing"
    assert len(client.asked) == 2
    assert "no JSON object" in client.asked[1][-1]["content"]
    assert client.asked[1][-2] == {"role": "assistant", "content": "I think mixing helps!"}


def test_always_garbage_raises_planner_output_error_with_the_last_problem():
    planner, client = _planner("nope", "{not json", '{"family": 3}', max_attempts=3)
    with pytest.raises(PlannerOutputError, match="3 attempt.*validation error"):
        planner.frame("does mixing help?", served_models=SERVED)
    assert len(client.asked) == 3


def test_an_unserved_model_is_sent_back():
    wrong = {**FRAME, "model": "Qwen/Qwen2.5-7B-Instruct"}
    planner, client = _planner(json.dumps(wrong), json.dumps(FRAME))
    assert planner.frame("does mixing help 7B?", served_models=SERVED).model == SERVED[0]
    assert "not served" in client.asked[1][-1]["content"]


def test_an_unmappable_answer_is_the_clear_refusal():
    planner, _ = _planner(json.dumps({"unmappable": "not an RL question"}))
    with pytest.raises(
        UnmappableQuestion, match="(?s)llm:planner-model.*task_mixing.*not an RL question"
    ):
        planner.frame("what is love?", served_models=SERVED)


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
    assert planner.frame("does mixing help?", served_models=SERVED).family == "task_mixing"
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
