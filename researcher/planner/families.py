"""The experiment families the template planner knows, and the task catalogue they draw on.

Owns: `TASKS` (every shipped task family, what it asks and what it rewards — also shown to
LLM planners), `FAMILIES` (each experiment family: the words that select it, example
questions, and `propose`, which turns a question into arms and a hypothesis), and
`match_family`. A proposal's arms carry only what differs between conditions plus the base
run settings; `template.py` adds steps, seeds, the budget and the decision rule.

Must not know about the gateway, LangGraph or the database.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from researcher.errors import UnmappableQuestion
from researcher.plan import Arm


@dataclass(frozen=True)
class TaskInfo:
    family: str
    asks: str
    rewards: str
    multi_turn: bool


TASKS: dict[str, TaskInfo] = {
    info.family: info
    for info in (
        TaskInfo(
            "learnable",
            '"Reply with the word banana." (a few phrasings x 16 words)',
            "1.0 when the reply contains the word (whole word, any case), else 0.0",
            False,
        ),
        TaskInfo(
            "arithmetic",
            "one-step word problems with integer answers (a + b, a - b, a x b)",
            "1.0 when the last integer of the reply is the answer, else 0.0",
            False,
        ),
        TaskInfo(
            "calculator",
            "compute an expression, with a `calculator` tool offered (at most 3 model calls)",
            "1.0 when the final answer contains the right number, +0.1 for a well-formed tool call",
            True,
        ),
        TaskInfo(
            "guess_number",
            'find a hidden number from "Higher."/"Lower." hints; each task carries its '
            '"max_turns" (enough guesses for a binary search)',
            "1.0 on a hit, else up to 0.5 by how close the best guess came",
            True,
        ),
    )
}

# what the demo trains SmolLM2-135M with on CPU: small groups, short completions
BASE_RUN: dict[str, Any] = {
    "algorithm": "grpo",
    "lr": 2e-5,
    "group_size": 4,
    "batch_groups": 4,
    "kl_coef": 0.0,
}
LEARNABLE_RUN: dict[str, Any] = {**BASE_RUN, "group_size": 8}
DEFAULT_TASK = "arithmetic"

_TASK_WORDS = {  # a task named in a question, by the words people use for it
    "arithmetic": r"arithmetic|\bmath\b|word problems?|\bsums?\b",
    "calculator": r"calculator|tool[- ]?use|\btools?\b",
    "guess_number": r"guess|number game|guessing",
    "learnable": r"learnable|banana|say a word",
}


@dataclass(frozen=True)
class Proposal:
    """What a family proposes for one question: the comparison and its hypothesis."""

    summary: str
    statement: str
    prediction: str
    refuted_if: str
    arms: list[Arm]
    eval_family: str


@dataclass(frozen=True)
class Context:
    question: str  # as asked
    served_models: list[str]
    model: str  # the model the study trains (already substituted if needed)

    @property
    def text(self) -> str:
        return self.question.lower()


@dataclass(frozen=True)
class Family:
    key: str
    pattern: str  # a regex over the lower-cased question
    examples: tuple[str, ...]
    propose: Callable[[Context], Proposal]


def named_tasks(text: str) -> list[str]:
    """The task families a (lower-cased) question names, the one it judges first: the task
    after "into", "for", "on" or "held-out" ("mixing calculator into arithmetic"), else in
    the order they are named."""
    found = []
    for family, words in _TASK_WORDS.items():
        match = re.search(words, text)
        if match:
            judged = re.search(rf"\b(into|for|on|held[- ]out)\s+(the\s+)?({words})", text)
            found.append((0 if judged else 1, match.start(), family))
    return [family for *_, family in sorted(found)]


def run_for(task: str, **changes: Any) -> dict[str, Any]:
    return {**(LEARNABLE_RUN if task == "learnable" else BASE_RUN), **changes}


def _single_task(context: Context) -> str:
    named = named_tasks(context.text)
    return named[0] if named else DEFAULT_TASK


def _one_task_arms(
    task: str,
    *,
    control: tuple[str, str, dict[str, Any]],
    treatment: tuple[str, str, dict[str, Any]],
) -> list[Arm]:
    """Two arms on one task that differ in run settings: (name, description, run) each."""
    return [
        Arm(name=name, role=role, description=description, tasks={task: 1.0}, run=run)
        for role, (name, description, run) in (("control", control), ("treatment", treatment))
    ]


# -- the families -----------------------------------------------------------------------------


def _task_mixing(context: Context) -> Proposal:
    named = named_tasks(context.text)
    primary = named[0] if named else "arithmetic"
    if len(named) > 1:
        secondary = named[1]
    else:
        secondary = "calculator" if primary != "calculator" else "arithmetic"
    if (primary, secondary) == ("arithmetic", "calculator"):
        statement = "Mixing arithmetic with calculator tool use improves held-out arithmetic."
    else:
        statement = f"Mixing {primary} with {secondary} improves held-out {primary}."
    mixed = f"{primary}+{secondary}"
    return Proposal(
        summary=(
            f"Train on {primary} alone vs a 50/50 mix of {primary} and {secondary}, "
            f"judged by accuracy on held-out {primary} tasks."
        ),
        statement=statement,
        prediction=(
            f"The {mixed} arm reaches higher held-out {primary} accuracy than {primary}-only "
            f"after the same number of training steps."
        ),
        refuted_if=(
            f"{mixed} is not better than {primary}-only on held-out {primary} by the minimum "
            f"effect, with the confidence interval excluding such a gain."
        ),
        arms=[
            Arm(
                name=f"{primary}-only",
                role="control",
                description=f"{primary} tasks only",
                tasks={primary: 1.0},
                run=run_for(primary),
            ),
            Arm(
                name=mixed,
                role="treatment",
                description=f"half {primary}, half {secondary} tasks, interleaved",
                tasks={primary: 0.5, secondary: 0.5},
                run=run_for(primary),
            ),
        ],
        eval_family=primary,
    )


def _num_turns(context: Context) -> Proposal:
    # guess_number is the one shipped task whose turn limit is a task field ("max_turns");
    # the calculator's limit is a module constant, so the template cannot vary it
    return Proposal(
        summary=(
            "Train guess_number with only 2 guesses per game vs the task's full turn budget "
            "(enough for a binary search), judged by the hit rate on held-out games played "
            "with the full budget. Turns are varied through each task's max_turns."
        ),
        statement="Training with the full multi-turn budget improves held-out guess_number "
        "over training with 2 turns per game.",
        prediction="The turns-full arm hits the hidden number more often on held-out games.",
        refuted_if="turns-full is not better than turns-2 by the minimum effect.",
        arms=[
            Arm(
                name="turns-2",
                role="control",
                description="guess_number with at most 2 guesses per game",
                tasks={"guess_number": 1.0},
                run=run_for("guess_number"),
                workflow_params={"max_turns": 2},
            ),
            Arm(
                name="turns-full",
                role="treatment",
                description="guess_number with the task's own turn budget (5 to 8 guesses)",
                tasks={"guess_number": 1.0},
                run=run_for("guess_number"),
            ),
        ],
        eval_family="guess_number",
    )


def _lora_vs_full(context: Context) -> Proposal:
    task = _single_task(context)
    return Proposal(
        summary=f"Full fine-tuning (lr 2e-5) vs LoRA r=16 (lr 1e-4) on {task}, judged by "
        f"held-out {task} accuracy after the same number of steps.",
        statement=f"LoRA (r=16) matches full fine-tuning on held-out {task}.",
        prediction=f"lora-r16 is within the minimum effect of full on held-out {task}.",
        refuted_if="lora-r16 is worse than full by more than the minimum effect.",
        arms=_one_task_arms(
            task,
            control=("full", "all parameters trained", run_for(task)),
            treatment=(
                "lora-r16",
                "LoRA adapters r=16, alpha=32; higher lr as usual for LoRA",
                run_for(task, lr=1e-4, lora={"r": 16, "alpha": 32}),
            ),
        ),
        eval_family=task,
    )


def _kl(context: Context) -> Proposal:
    task = _single_task(context)
    return Proposal(
        summary=f"GRPO without a KL penalty vs with kl_coef 0.05 on {task}, judged by "
        f"held-out {task} accuracy.",
        statement=f"A KL penalty (kl_coef 0.05) improves held-out {task}.",
        prediction=f"kl-0.05 reaches higher held-out {task} accuracy than no-kl.",
        refuted_if="kl-0.05 is not better than no-kl by the minimum effect.",
        arms=_one_task_arms(
            task,
            control=("no-kl", "kl_coef 0", run_for(task, kl_coef=0.0)),
            treatment=(
                "kl-0.05",
                "kl_coef 0.05 towards the initial policy",
                run_for(task, kl_coef=0.05),
            ),
        ),
        eval_family=task,
    )


_LR = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?e-?\d+|0\.0\d*[1-9]\d*)(?![\w.])")


def _learning_rate(context: Context) -> Proposal:
    task = _single_task(context)
    control_lr = run_for(task)["lr"]
    named = [float(value) for value in _LR.findall(context.text)]
    named = [lr for lr in named if 0 < lr <= 1 and lr != control_lr]
    if named:
        lr = named[0]
    elif re.search(r"\b(lower|smaller|small)\b", context.text):
        lr = 5e-6
    else:
        lr = 1e-4
    direction = "higher" if lr > control_lr else "lower"
    return Proposal(
        summary=f"lr {control_lr:g} vs lr {lr:g} on {task}, judged by held-out {task} "
        f"accuracy after the same number of steps.",
        statement=f"A {direction} learning rate ({lr:g}) improves held-out {task} "
        f"over {control_lr:g} in a short run.",
        prediction=f"lr-{lr:g} reaches higher held-out {task} accuracy than lr-{control_lr:g}.",
        refuted_if=f"lr-{lr:g} is not better than lr-{control_lr:g} by the minimum effect.",
        arms=_one_task_arms(
            task,
            control=(
                f"lr-{control_lr:g}",
                f"lr {control_lr:g} (the demo's setting)",
                run_for(task),
            ),
            treatment=(f"lr-{lr:g}", f"lr {lr:g}", run_for(task, lr=lr)),
        ),
        eval_family=task,
    )


def _group_size(context: Context) -> Proposal:
    task = _single_task(context)
    base = run_for(task)
    episodes_per_step = base["group_size"] * base["batch_groups"]
    sizes = [int(n) for n in re.findall(r"\b(\d{1,2})\b", context.text) if 2 <= int(n) <= 64]
    size = next((n for n in sizes if n != base["group_size"]), base["group_size"] * 2)
    batch_groups = max(1, episodes_per_step // size)
    return Proposal(
        summary=f"GRPO groups of {base['group_size']} vs {size} on {task} at about the same "
        f"episodes per step ({episodes_per_step}), judged by held-out {task} accuracy.",
        statement=f"Groups of {size} improve held-out {task} over groups of "
        f"{base['group_size']} at equal episodes per step.",
        prediction=f"group-{size} reaches higher held-out {task} accuracy than "
        f"group-{base['group_size']}.",
        refuted_if=f"group-{size} is not better than group-{base['group_size']} by the "
        f"minimum effect.",
        arms=_one_task_arms(
            task,
            control=(
                f"group-{base['group_size']}",
                f"group_size {base['group_size']} x batch_groups {base['batch_groups']}",
                dict(base),
            ),
            treatment=(
                f"group-{size}",
                f"group_size {size} x batch_groups {batch_groups}",
                run_for(task, group_size=size, batch_groups=batch_groups),
            ),
        ),
        eval_family=task,
    )


def _algorithm(context: Context) -> Proposal:
    task = _single_task(context)
    other = (
        "reinforce"
        if re.search(r"reinforce", context.text) and "rloo" not in context.text
        else "rloo"
    )
    ppo = (
        " (Every algorithm here trains with the PPO-clip loss; they differ in the advantage "
        "estimator, so a PPO question is answered as GRPO vs RLOO.)"
        if re.search(r"\bppo\b", context.text)
        else ""
    )
    return Proposal(
        summary=f"GRPO vs {other.upper()} advantages on {task}, judged by held-out {task} "
        f"accuracy after the same number of steps.{ppo}",
        statement=f"{other.upper()} improves held-out {task} over GRPO.",
        prediction=f"The {other} arm reaches higher held-out {task} accuracy than grpo.",
        refuted_if=f"{other} is not better than grpo by the minimum effect.",
        arms=_one_task_arms(
            task,
            control=("grpo", "group-normalised advantages", run_for(task, algorithm="grpo")),
            treatment=(other, f"{other} advantages", run_for(task, algorithm=other)),
        ),
        eval_family=task,
    )


def model_scale(name: str) -> float | None:
    """Parameters in millions as a model's name says ("SmolLM2-135M" → 135), else None."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", name.lower())
    if not match:
        return None
    return float(match.group(1)) * (1000 if match.group(2) == "b" else 1)


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", name.split("/")[-1].lower()).strip("-.")[:40] or "model"


def _model_size(context: Context) -> Proposal:
    served = sorted(set(context.served_models), key=lambda m: (model_scale(m) or 0.0, m))
    if len(served) < 2:
        raise UnmappableQuestion(
            f"{context.question!r} compares model sizes, but the gateway serves only "
            f"{', '.join(served) or 'no model'}. Serve at least two models (e.g. "
            f"`gateway serve --model A --model B`), or ask about something one model can "
            f"answer, e.g. {FAMILY_EXAMPLES['task_mixing']!r}."
        )
    small, large = served[0], served[-1]
    task = _single_task(context)
    return Proposal(
        summary=f"{small} vs {large}, same recipe on {task}, judged by held-out {task} accuracy.",
        statement=f"The larger model ({large}) gains more on held-out {task} than {small}.",
        prediction=f"{slug(large)} reaches higher held-out {task} accuracy than {slug(small)}.",
        refuted_if=f"{slug(large)} is not better than {slug(small)} by the minimum effect.",
        arms=_one_task_arms(
            task,
            control=(slug(small), f"base model {small}", run_for(task, base_model=small)),
            treatment=(slug(large), f"base model {large}", run_for(task, base_model=large)),
        ),
        eval_family=task,
    )


# in matching order: the first family whose pattern matches wins
FAMILIES: tuple[Family, ...] = (
    Family(
        "task_mixing",
        r"\bmix(es|ed|ing|ture)?\b|multi[- ]?task|cocktail|combin\w* (the |two |several )?tasks|"
        r"train(ing)? on (both|several|two) tasks",
        ("does multi-task mixing help?", "does mixing calculator into arithmetic training help?"),
        _task_mixing,
    ),
    Family(
        "num_turns",
        r"\bturns?\b|multi[- ]?turn|more guesses|fewer guesses|number of guesses",
        (
            "do more turns help in multi-turn training?",
            "does a longer turn budget help guess_number?",
        ),
        _num_turns,
    ),
    Family(
        "lora_vs_full",
        r"\blora\b|low[- ]rank|adapters?\b|peft|parameter[- ]efficient|full fine[- ]?tun",
        ("is LoRA as good as full fine-tuning?",),
        _lora_vs_full,
    ),
    Family(
        "kl",
        r"\bkl\b|kullback|kl[- ]?(penalty|coef)",
        ("does a KL penalty help?", "what does kl_coef do to arithmetic?"),
        _kl,
    ),
    Family(
        "group_size",
        r"group[- _]?sizes?|bigger groups|larger groups|smaller groups|"
        r"(samples|rollouts|completions) per (prompt|task)",
        ("does a bigger GRPO group size help?", "group size 4 vs 8 on arithmetic?"),
        _group_size,
    ),
    Family(
        "learning_rate",
        r"learning[- ]rates?|\blr\b|step size",
        ("does a higher learning rate help?", "lr 1e-4 vs 2e-5 on arithmetic?"),
        _learning_rate,
    ),
    Family(
        "algorithm",
        r"\brloo\b|\bppo\b|\breinforce\b|\balgorithms?\b|advantage estimat",
        ("is RLOO better than GRPO?", "GRPO vs PPO on arithmetic?"),
        _algorithm,
    ),
    Family(
        "model_size",
        r"model sizes?|size of the model|(bigger|larger|smaller) models?|scal(e|ing) (up )?the "
        r"model|parameter count|\d+(\.\d+)?\s*[bm]\b.*\bvs\.?\b.*\d+(\.\d+)?\s*[bm]\b",
        ("do bigger models learn arithmetic faster?", "135M vs 360M on arithmetic?"),
        _model_size,
    ),
)
FAMILY_EXAMPLES = {family.key: family.examples[0] for family in FAMILIES}


def match_family(question: str) -> Family | None:
    text = question.lower()
    for family in FAMILIES:
        if re.search(family.pattern, text):
            return family
    return None


def unmappable_message(question: str, *, planner: str = "The template planner") -> str:
    known = "\n".join(
        f"  - {family.key}: " + " / ".join(repr(example) for example in family.examples)
        for family in FAMILIES
    )
    return (
        f"{planner} cannot map {question!r} onto an experiment family it knows, "
        f"and it will not run a random experiment. It knows:\n{known}\n"
        f"Rephrase the question along one of these lines, or plan with an LLM: "
        f"--planner https://your-openai-compatible-endpoint/v1."
    )
