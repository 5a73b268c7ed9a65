"""`read_question`: a research question in words → a `Reading`, each part read by its own
module of this package (in this order: names spelled right, held settings taken out,
mentions, the factor, the task and its level, the outcome, the direction, the levels, the
smallest effect), checked with `check_reading` (bounds, types, at least two levels) and
summarised. Every default filled in is said in `Reading.assumptions`. A question with no
setting and no task gets `UnreadableQuestion` saying what is missing, with example
questions; one that is not about training gets `NotAboutTraining`; an empty one
`EmptyQuestion`.

Must not know about arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re
from typing import Any

from researcher.errors import EmptyQuestion, ResearcherError, UnmappableQuestion, UnreadableQuestion
from researcher.plan import MARGIN_DIRECTIONS, Reading
from researcher.planner.catalogue import (
    FACTORS,
    LORA_LR,
    WORKFLOW_PREFIX,
    check_reading,
    describe_level,
    distinct_levels,
    tasks_in_words,
)
from researcher.planner.reading.batch import BatchRefused, batch_named
from researcher.planner.reading.effects import STATED_SCALE, min_effect
from researcher.planner.reading.factor import can_it_learn, read_factor
from researcher.planner.reading.held import (
    AT_DEFAULT,
    LORA_LR_NOTE,
    checked_held,
    held_settings,
    lora_lr_named,
)
from researcher.planner.reading.levels import read_levels
from researcher.planner.reading.mentions import Mention, blank_mentions, scan
from researcher.planner.reading.moves import TOO
from researcher.planner.reading.numbers import plain_numbers, written_numbers
from researcher.planner.reading.outcome import comparisons_in_words, read_direction, read_outcome
from researcher.planner.reading.question import EXAMPLE_QUESTIONS, Question, how_to_ask
from researcher.planner.reading.sentences import asking_span, outside_asking
from researcher.planner.reading.setup import read_setup
from researcher.planner.reading.spelling import spelling_fixed
from researcher.planner.reading.summary import summarise
from researcher.planner.reading.tasks import read_task, read_task_levels

# PARAMS whose names say they shape the reward itself
_SCORING_PARAM = re.compile(r"penalt|bonus|reward|rubric|judge|grader|scor|weight", re.I)

STEPS_MARGIN = 2.0  # an equivalence margin on steps to a threshold when none is named


def _margin_in_steps(q: Question, margin: float) -> float:
    """Steps to a threshold are counted in steps: a margin named in steps ("within 3 steps
    of") stands, any other is replaced by `STEPS_MARGIN` (said)."""
    if q.of("aside", "margin_steps"):
        return margin
    q.assumptions = [a for a in q.assumptions if not a.startswith("equivalence margin")]
    q.assumptions.append(
        f"margin {STEPS_MARGIN:g} steps: steps to the threshold are counted in steps (name "
        "another with 'within 3 steps of …')"
    )
    return STEPS_MARGIN


def read_question(
    question: str,
    *,
    served_models: list[str],
    workflow_params: dict[str, Any] | None = None,
    workflow_has_test: bool = True,
) -> Reading:
    """The reading of `question` (docs/reading.md gives every rule); raises
    `UnreadableQuestion` or `NotAboutTraining` with what is missing and how to ask."""
    original = comparisons_in_words(plain_numbers(" ".join(question.split())))
    if not re.search(r"[^\W\d_]{2}", original):
        raise EmptyQuestion(
            f"the research question is empty ({question!r}); ask e.g. {EXAMPLE_QUESTIONS[0]!r}"
        )
    if workflow_params is not None and not workflow_has_test:
        raise UnreadableQuestion(
            "your workflow has no test split: the held-out evaluation runs its rollout on "
            "tasks('test'), so `tasks(split)` must yield tasks for split='test' (and keep them "
            "apart from split='train')"
        )
    try:
        return _read(_question(original, list(served_models), workflow_params))
    except UnmappableQuestion:
        raise
    except Exception as error:  # a reader bug must not crash `plan`/`start` with a traceback
        raise UnreadableQuestion(
            f"the reader failed on this question ({type(error).__name__}: {error}) — a bug in "
            "swarmrl; please report it with the question. Asking it in fewer sentences may read"
        ) from error


# a labelled part of a question written as a list, inline: "* factor: lr * levels: 1e-5,
# 1e-4 * task: chain_sum", "factor: lr, levels: 1e-5, 1e-4, task: chain_sum" — each its own
# sentence, as when written one per line
_LABELLED = re.compile(
    r"(?:\s+[*•–-]\s+|^[*•–-]\s+|,\s*|;\s*)(?=(?:factor|setting|levels?|values?|task|outcome|"
    r"metric|baseline|setup|question|hypothesis)\s*:)"
)


_SETUP_BULLETS = re.compile(
    r"(\b(?:setup|set-up|baseline|config\w*|context|current settings?)\s*:\s*)((?:[*•–-]\s+[^.?*•]+)+)"
)


# a question about anything else but what is named
_WHAT_ELSE = re.compile(
    r"\b(?:something|anything) (?:else|different)\b|\bother (?:settings?|things|options|"
    r"ideas|knobs)\b|\bwhat else\b"
)


def _asking_sentence(text: str) -> str:
    """The sentence that asks (the first with "?"), or `text` when it is one sentence."""
    span = asking_span(text)
    return text[span[0] : span[1]] if span else text


def _unshipped(text: str, m: Mention) -> str:
    """The refusal of a benchmark this planner does not ship, with its offline twin."""
    twin = _OFFLINE_TWINS.get(m.key)
    return (
        f"{text[m.start : m.end]!r} is not a task this planner ships (it ships "
        f"{tasks_in_words()}); "
        + (f"{twin}; " if twin else "")
        + "study your own agent on it with --workflow FILE"
    )


def _question(question: str, served: list[str], params: dict[str, Any] | None) -> Question:
    """The question ready to read: a misspelt setting's name spelled right, the held
    settings taken out of its text (each said), its mentions found."""
    question, misspelt = spelling_fixed(question, params)
    try:
        text, episodes, batch_said = batch_named(question.lower())
    except BatchRefused as why:
        raise UnreadableQuestion(f"cannot read {question!r}: {why}.") from None
    text = _LABELLED.sub(". ", text)  # "* factor: lr * levels: 1e-5, 1e-4 * task: …"
    # "Setup: - group size 8 - lr 1e-5.": the setup's bullets as a list
    text = _SETUP_BULLETS.sub(
        lambda m: m.group(1) + re.sub(r"\s*[*•–-]\s+", ", ", m.group(2)).lstrip(", "), text
    )
    if params is not None:  # a quoted prompt is a PARAM's value: no setting is read in it
        text = re.sub(r'"[^"]*"|“[^”]*”', lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)
    asking = _asking_sentence(text)
    if (
        _WHAT_ELSE.search(asking)
        and not any(m.kind in ("factor", "value", "param") for m in scan(asking, params))
        and not re.search(r"\d", asking)
        and any(m.kind in ("factor", "value", "param") for m in scan(text, params))
    ):
        # "We train countdown with GRPO and lr 2e-5. Is it worth trying something else?":
        # no setting is asked about; the setup's settings are what is in use
        raise UnreadableQuestion(
            f"cannot read {question!r}: it asks what else to try, not about one setting; the "
            f"settings in it are the ones in use. Name the setting to vary and a level to try "
            f"(e.g. 'we use lr 2e-5 on countdown: would 1e-4 do better?'). {how_to_ask(params)}"
        )
    if params is None:  # "We train on gsm8k with lr 2e-5.": setup may fold the name away
        for m in scan(text, params):
            if m.kind == "unshipped":
                raise UnreadableQuestion(
                    f"cannot read {question!r}: {_unshipped(text, m)}. {how_to_ask(params)}"
                )
    text, setup_notes = read_setup(text, params)
    try:
        text, lora_lr = lora_lr_named(text)
    except ValueError as why:
        raise UnreadableQuestion(f"cannot read {question!r}: {why}.") from None
    text, held, held_words = held_settings(text, params)
    mentions = scan(text, params)
    # "on the 0-10 rubric": a scale stated for the reward names no PARAM ("rubric")
    scales = [s.end() for s in STATED_SCALE.finditer(text)]
    mentions = [m for m in mentions if not (m.kind == "param" and m.start - 1 in scales)]
    if any(m.kind == "param" and re.search(r"word|char|length", m.key) for m in mentions):
        # "limiting answers to 100 words" with a max_words PARAM: the PARAM, not max_tokens
        mentions = [
            m
            for m in mentions
            if not (m.key == "max_tokens" and "token" not in text[m.start : m.end])
        ]
    assumptions = [
        f"{words!r}: {key} "
        + ("at its default" if held[key] == AT_DEFAULT else describe_level(key, held[key]))
        + " for every arm (held, not varied)"
        for key, words in zip(held, held_words, strict=True)
    ]
    assumptions += setup_notes + _noted(text, mentions) + ([lora_lr] if lora_lr else [])
    if misspelt:
        assumptions.append(f"{misspelt!r} read as a misspelt setting's name")
    assumptions.extend(batch_said)
    return Question(
        question=question,
        text=text,
        mentions=mentions,
        masked=blank_mentions(text, mentions),
        params=params,
        served=served,
        held=held,
        assumptions=assumptions,
        episodes=episodes,
    )


# number phrases about how the study is run or what was seen, said once each: none is a level
_NOTED = {
    "confidence": "noted: every study tests at the 5% level (95% intervals, widened for "
    "several treatments and for interim looks); it is no setting",
    "budget": "noted as a time budget: set it with --budget (e.g. --budget 2h); the "
    "question's words do not set it",
    "hardware": "noted: the hardware is the gateway's, no run setting",
    "replicates": "noted: the seeds per arm are set with --seeds (else sized from the budget)",
    "seeds": "noted: the seeds per arm are set with --seeds (else sized from the budget)",
    "observed": "read as a result already seen, not a level",
    "step_seen": "read as context, neither a level nor the run's length",
    "lora_alpha": "noted: LoRA's alpha is twice its rank here, not a setting of its own",
    "effect_steps": "is not read as a smallest effect: steps to a threshold count a tenth of "
    "the run's steps as the smallest difference",
}


def _noted(text: str, mentions: list[Mention]) -> list[str]:
    """The assumptions saying what each noted number phrase was read as."""
    said: list[str] = []
    for m in mentions:
        if m.kind == "aside" and m.key in _NOTED:
            said.append(f"{text[m.start : m.end]!r} {_NOTED[m.key]}")
    return list(dict.fromkeys(said))


# what to ask instead about an unshipped benchmark that has an offline procedural relative
_OFFLINE_TWINS = {
    "gsm8k": "reasoning-gym's gsm_symbolic (GSM8K's problems as templates) is its offline "
    "twin: ask about gsm_symbolic",
}

# a method named as the source of an idea, not as what is varied: "(as in DAPO)", "DAPO
# suggests clip-higher", "like DAPO does", "in the DAPO paper"
_CITED = re.compile(
    r"(?:\bas in(?: the)?|\blike|\bfollowing|\bin the|[(,]\s*as|\bcf\.?|\b(?:proposed|introduced|"
    r"described|suggested|popularized|used|done|recommended) (?:in|by)(?: the)?)\s+$"
)
_CITES = re.compile(
    r"'s\s|(?:'s)?\s+(?:paper|suggests?|recommends?|uses?|drops?|does|did|found|finds|shows?|"
    r"reports?|proposes?|removes?)\b|\)"
)

_VARIED = ("factor", "value", "param")

_TRANSFER = re.compile(
    r"\btransfer\w*|\bgenerali[sz]\w* (?:to|onto)\b|\bcarr(?:y|ies) over (?:to|into|onto)\b"
)
# "does training on chain_sum raise accuracy on basic_arithmetic?": trained on one task,
# judged on another (no mixing word between them)
_TRAINED_ON_ONE = re.compile(
    r"\btrain\w*\s+(?:only\s+|just\s+|solely\s+)?on\s+(?:the\s+)?#+"
    r"(?:(?!\b(?:and|with|plus|together|mix\w*|alongside|both)\b|[+&,])[^#?])*?"
    r"\b(?:on|for|to|at)\s+(?:the\s+)?#+"
)
# "generalize to held-out tasks": the same task's unseen items, which every held-out
# evaluation is ("new problems"), not another task
_TO_UNSEEN_ITEMS = re.compile(
    r"\b(?:generali[sz]\w*|transfer\w*)\s+(?:to|onto)\s+(?:the\s+)?(?:held[\s-]?out|unseen|"
    r"new|test|novel|fresh)\s+(?:\w+\s+)?(?:tasks?|problems?|items?|examples?|questions?|"
    r"data|instances?|puzzles?)\b"
)
_TRANSFER_REFUSAL = (
    "it asks whether training on one task transfers to another; that compares a "
    "policy trained only on one task with the untrained model on the other, and "
    "this planner designs comparisons between trained arms only (every study "
    "reports the untrained baseline beside them). Ask about a task mix instead "
    "('does mixing chain_sum into basic_arithmetic training help on "
    "basic_arithmetic?'), or study it with --workflow FILE"
)


# "does lr 1e-4 help my agent?" asked without --workflow
_YOUR_AGENT = re.compile(
    r"\b(?:my|our|your) (?:own )?(?:agent|workflow|rollout|environment|env|policy's task)s?\b"
)

# "MATH" in capitals is the competition benchmark (Hendrycks et al.), not arithmetic ("math")
_MATH_BENCHMARK = re.compile(r"(?<![A-Za-z])MATH(?:[\s-]?500)?(?![A-Za-z])")


def _too_direction(q: Question, too: re.Match[str], factor: str, levels: list[Any]) -> str:
    """ "Is X too small?": `greater` when the treatment moves away from the side named (the
    default 4 "too small" against 8: does the larger do better), `less` when the treatment
    is the level named too small or too large ("is lr 1e-4 too high?": 1e-4 against the
    default 2e-5, does it do worse)."""
    control, treatment = levels
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in levels):
        return q.direction or "two_sided"
    away = treatment > control if too.group(1) else treatment < control
    stale = ("no direction named: a two-sided test (any difference)",)
    q.assumptions = [a for a in q.assumptions if a not in stale]
    q.assumptions.append(
        f"'{too.group(0)}' read as: does {describe_level(factor, treatment)} do "
        + ("better (one-sided, greater)" if away else "worse (one-sided, less)")
    )
    return "greater" if away else "less"


def _read(q: Question) -> Reading:
    """The reading of a question made ready by `_question`, checked and summarised."""
    if q.params is None and not q.of("task") and _YOUR_AGENT.search(q.text):
        raise q.unreadable(
            "it asks about your own agent, but no workflow was given: pass your workflow "
            "file (its tasks and rollout, docs/workflow.md) with --workflow FILE; without one "
            f"the researcher studies its shipped tasks ({tasks_in_words()})",
            how=False,
        )
    if q.params is None and _MATH_BENCHMARK.search(q.question) and not q.question.isupper():
        raise q.unreadable(
            "'MATH' (the competition-mathematics benchmark) is not a task this planner ships "
            f"(it ships {tasks_in_words()}; its arithmetic families are the nearest, and "
            "'math' in lower case reads as arithmetic); study your own agent on MATH with "
            "--workflow FILE"
        )
    for m in q.of("unshipped"):
        if q.params is None:
            raise q.unreadable(_unshipped(q.text, m))
    for m in q.of("unsupported"):
        named = q.text[m.start : m.end]
        why = ""
        if _CITED.search(q.text[: m.start]) or _CITES.match(q.text, m.end):
            continue  # "removing the KL (as in DAPO)", "DAPO suggests clip-higher": a source
        if outside_asking(q.text, m.start) and any(
            not outside_asking(q.text, n.start) for n in q.mentions if n.kind in _VARIED
        ):  # "We use the k3 estimator. Does a KL … hurt?": the question varies something else
            q.assumptions.append(
                f"{named!r}, named around the question, is nothing this trainer has: the "
                "study runs without it"
            )
            continue
        if named == "ppo":
            why = (
                " (PPO trains a learned value critic, which this trainer does not have: every "
                "algorithm here — grpo, rloo, reinforce — uses the PPO-clip loss with a "
                "critic-free baseline; ask e.g. 'does RLOO beat GRPO?')"
            )
        elif "prompt" in named:
            if q.params is not None:
                continue  # a workflow's prompt is its PARAM
            why = (
                " (a shipped task's prompt is its own: vary a prompt as a PARAM of your "
                "workflow with --workflow FILE)"
            )
        elif "dynamic sampling" in named:
            why = (
                " (it resamples until no group's rewards are all equal; this trainer drops "
                "such groups instead, its default: ask 'does dropping zero-variance groups "
                "help?', which tries keeping them against dropping)"
            )
        elif re.search(r"ppo|inner|update|optimi", named):
            why = " (each batch gets one optimizer update: there are no inner epochs)"
        elif "epoch" in named:
            why = (
                " (a run draws fresh tasks every step: there is no fixed dataset to pass over "
                "again; to train longer, vary max_steps)"
            )
        raise q.unreadable(
            f"{named!r} is not a setting a study can vary here{why}; it varies "
            f"{', '.join(FACTORS)} (or your workflow's PARAMS with --workflow FILE)"
        )
    named = [m for m in q.mentions if m.kind in ("param", "factor", "value")]
    if q.params is None and not named and q.of("task"):
        if _TO_UNSEEN_ITEMS.search(q.masked):
            # "does training on chain_sum generalize to held-out tasks?": whether it learns
            raise q.unreadable(can_it_learn(q, q.of("task")[0]))
        if _TRANSFER.search(q.masked):
            raise q.unreadable(
                _TRANSFER_REFUSAL
                + (
                    ""
                    if len({m.key for m in q.of("task")}) > 1
                    else "; name the task it should transfer to"
                )
            )
    factor = read_factor(q)
    if factor == "batch_groups" and re.search(r"\bbatch(?:es)?\b(?! of \d+ groups)", q.text):
        q.assumptions.append(
            "batch size read as groups per step (batch_groups): each group is one prompt "
            "sampled group_size times, so a step trains on batch_groups x group_size episodes"
        )
    if factor == "clip_eps" and re.search(r"clip[- ]higher|eps(?:ilon)?[_ -]high", q.text):
        q.assumptions.append(
            "clip-higher (DAPO) raises only the upper clip bound; clip_eps here clips both "
            "sides, so the levels apply to both"
        )
    if factor == "task_mix" and (_TRANSFER.search(q.masked) or _TRAINED_ON_ONE.search(q.masked)):
        raise q.unreadable(_TRANSFER_REFUSAL)
    task, tasks = read_task(q, factor)
    task_levels = read_task_levels(q, task, tasks)
    outcome, threshold = read_outcome(q, factor)
    direction, margin = read_direction(q, outcome, factor)
    q.direction = direction
    if margin is not None and outcome == "learning_speed" and threshold is not None:
        margin = _margin_in_steps(q, margin)
    levels, control = read_levels(q, factor, task, tasks)
    spec = FACTORS.get(factor)
    if (
        q.asks_if_needed()
        and not q.taken_away
        and spec is not None
        and spec.kind in ("real", "int")
        and spec.low is not None
        and (spec.low > 0 or spec.low_open)
        and not written_numbers(q.text, q.mentions)
    ):
        # "is the clip range necessary?": it cannot be taken away to see
        raise q.unreadable(
            f"it asks whether {factor} is needed, but {factor} cannot be turned off here "
            f"({spec.bounds_text()}); ask whether another level helps ('does a {factor} of "
            f"{describe_level(factor, spec.raised if spec.raised is not None else spec.alternative)} "
            "help?')",
            how=False,
        )
    if q.taken_away and q.asks_if_needed() and len(levels) == 2:
        # "is a KL penalty necessary?": does taking it away hurt? (on is the control)
        direction = "less"
        stale = "no direction named: a two-sided test (any difference)"
        q.assumptions = [a for a in q.assumptions if a != stale]
        q.assumptions.append(
            "'necessary' read as: does taking it away lower the outcome (one-sided, less)"
        )
    if (too := TOO.search(q.masked)) and len(levels) == 2 and direction not in MARGIN_DIRECTIONS:
        direction = _too_direction(q, too, factor, levels)
    if len(distinct_levels(levels)) < 2:
        shown = ", ".join(describe_level(factor, level) for level in levels)
        raise q.unreadable(f"{factor} needs two different levels to compare (read: {shown})")
    if factor.startswith(WORKFLOW_PREFIX) and _SCORING_PARAM.search(factor):
        # a PARAM that sets how the reward is computed: each arm is scored by its own rule
        q.assumptions.append(
            f"{factor.removeprefix(WORKFLOW_PREFIX)!r} looks like part of how your reward is "
            "computed: if it is, each arm is scored by its own rule, and their held-out "
            "rewards are not on one scale (a higher bonus or a smaller penalty raises the "
            "score without a better policy). Score every arm by one rule to compare them"
        )
    if factor == "group_size" and q.episodes is None and "batch_groups" not in q.held:
        # every arm trains the same episodes per step (the same compute a step): a larger
        # group is fewer prompts a step, said so that nobody reads it as more data
        episodes = FACTORS["group_size"].default * FACTORS["batch_groups"].default
        per_level = ", ".join(
            f"group size {size}: {max(1, round(episodes / size))} prompt(s) a step"
            for size in levels
            if isinstance(size, int) and size >= 1
        )
        q.assumptions.append(
            f"every arm trains about {episodes} episodes per step ({per_level}); to keep the "
            "prompts per step instead, name them ('at 4 groups per step')"
        )
    if factor == "task_mix":
        tasks = list(dict.fromkeys([task, *(t for level in levels for t in level)]))
    if factor == "scale_rewards" and re.search(r"\bdr\.? ?grpo\b", q.text):
        q.assumptions.append(
            "Dr. GRPO read as its advantage (no division by the group's std: "
            "scale_rewards none); its other change, a loss not normalised by sequence "
            "length, is not a run setting here and stays as in GRPO"
        )
    held = checked_held(q, factor, task)
    lora_lr_said = any(LORA_LR_NOTE in said for said in q.assumptions)
    if factor == "lora" and lora_lr_said and "lr" in held and "full" in levels:
        # "… full fine-tuning at lr 2e-5. Would LoRA rank 32 at lr 1e-4 be as good?": each
        # method's own lr, not one held for both
        if held["lr"] != FACTORS["lr"].default:
            raise q.unreadable(
                f"it gives full fine-tuning lr {held['lr']:g} and LoRA lr {LORA_LR:g}: a LoRA "
                f"study runs each method at its usual lr (LoRA {LORA_LR:g}, full "
                f"{FACTORS['lr'].default:g}) or both at one lr ('at lr X, does …')",
                how=False,
            )
        del held["lr"]
    if factor == "lora" and "lr" not in held and "full" in levels and len(levels) > 1:
        full_lr = FACTORS["lr"].default
        q.assumptions.append(
            f"each arm at its usual lr: LoRA {LORA_LR:g}, full {full_lr:g} — the comparison is "
            "of the methods as usually run, not at one lr (name one to hold it: 'at lr 1e-4')"
        )
    reading = Reading(
        factor=factor,
        levels=levels,
        control=control,
        task=task,
        tasks=tasks,
        outcome=outcome,
        direction=direction,
        margin=margin,
        margin_named=q.margin_named,
        steps=q.steps,
        threshold=threshold,
        min_effect=min_effect(q, outcome, threshold),
        effect_units=q.effect_units,
        negated=q.negated,
        held=held,
        episodes_per_step=q.episodes,
        task_levels=task_levels,
        assumptions=q.assumptions,
    )
    try:
        reading = check_reading(reading, served_models=q.served, workflow_params=q.params)
    except ResearcherError as error:
        raise q.unreadable(str(error)) from None
    return reading.model_copy(update={"summary": summarise(reading)})
