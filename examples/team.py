"""A two-model team on arithmetic word problems: a planner plans, an executor answers.

    curl -s localhost:8400/runs -H 'content-type: application/json' -d '{"name": "team",
         "policies": {"planner": {"base_model": "smollm2-135m"},
                      "executor": {"base_model": "smollm2-135m"}}}'
    swarm run examples/team.py --gateway http://127.0.0.1:8400 --run team

The run trains two policies with non-shared parameters, each with its own optimizer and
weights version. One episode calls both: the planner (`episode.models["planner"]`) writes
a one-line plan (which operation, on which numbers) without solving the problem; the
executor (`episode.models["executor"]`) reads the question and the plan and answers. Each
policy trains only on its own calls.

Reward per policy (`{policy_name: reward}`):
- executor: the task's reward, 1.0 when the last integer of its reply is the answer.
- planner: the team's result (the executor's reward), but 0.0 when the plan already
  states the answer. Without that rule the cheapest "plan" is the solution itself, and
  the executor would learn to copy rather than to compute.
"""

import swarm
from swarm.tasks import arithmetic
from swarm.tasks.answers import integers_in

PLANNER_PROMPT = (
    "Write a one-line plan for solving the problem: which operation to apply to which "
    "numbers. Do not compute the result."
)
PLAN_TOKENS = 32


def tasks(split: str = "train"):
    return arithmetic.tasks(split, seed=0)  # {"id", "question", "answer", "operation"}


def rewards(plan: str | None, reply: str | None, task: dict) -> dict[str, float]:
    """The executor's task reward; the planner's is the same unless the plan gives the answer."""
    solved = arithmetic.reward(reply, task)
    answer, operands = task["answer"], integers_in(task["question"])
    gives_answer = answer in integers_in(plan) and answer not in operands  # "10 - 5" names 5
    return {"executor": solved, "planner": 0.0 if gives_answer else solved}


async def rollout(task: dict, episode: swarm.Episode) -> dict[str, float]:
    llm = episode.openai()  # one client: calls to either policy are recorded in this episode
    plan = await llm.chat.completions.create(
        model=episode.models["planner"],
        messages=[
            {"role": "system", "content": PLANNER_PROMPT},
            {"role": "user", "content": task["question"]},
        ],
        max_tokens=PLAN_TOKENS,
    )
    plan_text = plan.choices[0].message.content
    answer = await llm.chat.completions.create(
        model=episode.models["executor"],
        messages=[
            {"role": "system", "content": arithmetic.SYSTEM_PROMPT},
            {"role": "user", "content": f"{task['question']}\nPlan: {plan_text}"},
        ],
        max_tokens=arithmetic.MAX_TOKENS,
    )
    return rewards(plan_text, answer.choices[0].message.content, task)
