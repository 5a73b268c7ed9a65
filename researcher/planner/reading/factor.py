"""The factor: the setting named (a level word such as "RLOO" or "full fine-tuning" names
its factor too, but an explicit setting wins: "a larger GRPO group size" varies the group
size). "steps" alone is the factor only when nothing else is; two tasks and no setting read
as task mixing (two tasks set against each other are refused: no run setting separates
them); two model sizes as the base model; bare numbers like 1e-4 as learning rates. Two
settings are refused: a study varies one. "Can the model learn X?", "does GRPO learn X
within 30 steps at lr 1e-4?" (one level of anything, nothing compared) and "does training
help X at all?" compare no two settings and are refused with what the bench measured. "Does
lr 1e-4 help more on countdown than on chain_sum?" asks an interaction (a setting's effect on
two tasks set against each other): refused with the two questions that answer it.

Must not know the factor's levels (`levels.py`), nor arms, budgets, the gateway or the
database.
"""

from __future__ import annotations

import json
import re

from researcher.errors import NotAboutTraining
from researcher.planner.catalogue import (
    DIRECTION_WORDS,
    EQUIVALENT_WORDS,
    FACTORS,
    GREATER_WORDS,
    LESS_WORDS,
    TWO_SIDED_WORDS,
    WORKFLOW_PREFIX,
    task_info,
)
from researcher.planner.learnability import describe, measured, measurements
from researcher.planner.reading.held import HELD_WORDS
from researcher.planner.reading.mentions import Mention, blank_mentions
from researcher.planner.reading.question import Question, how_to_ask
from researcher.planner.reading.sentences import asking_span
from researcher.planner.reading.tasks import level_beside, level_pattern, spelled_level

# "can the model learn X?", "is X learnable?": no setting to compare
_CAN_LEARN = re.compile(
    r"\b(?:can|could|will)\b(?:\s+\S+){0,5}?\s+(?:learn|solve|master)\b|\blearnable\b|"
    r"\bis it possible to (?:learn|train)\b"
)

# "does GRPO learn X (within 30 steps at lr 1e-4)?": whether it learns, with one level of
# anything named, is the can-it-learn question when nothing is compared
_DOES_LEARN = re.compile(
    r"\b(?:does|do|did|is|are|will|would)\b(?:\s+\S+){0,5}?\s+"
    r"(?:learn|solve|master|pick up)(?:s|ed)?\b|\bable to (?:learn|solve|master)\b"
)
_COMPARED = re.compile(
    r"\b(?:than|vs\.?|versus|over|against|compared|instead|rather|or|without|between|"
    r"both|each|either|matter\w*|differ\w*|affect\w*|chang\w*)\b|[<>]"
)
# "as fast as", "as well as", "as good as": two things compared
_AS_AS = re.compile(rf"\bas \w+ as\b|\b(?:{EQUIVALENT_WORDS})")
_LEVEL_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?%?(?![\w.])")

# a setting's effect on one task set against its effect on another: "does lr 1e-4 help
# more on countdown than on chain_sum?", "does the group size matter more for A than B?"
# "is the benefit of X robust to the lr?", "does X help at the default group size but hurt
# at 16?": whether one setting's effect depends on another
_ROBUST_TO = re.compile(
    r"\b(?:robust|sensitive|invariant) to\b|\b(?:depend\w*) on\b|"
    r"\b(?:help|hurt)\w*\b[^?;]{0,60}\bbut\s+(?:help|hurt)\w*|"
    # "does group size 8 help more when the lr is high?", "is the optimal KL different for
    # RLOO and GRPO?"
    r"\b(?:help|hurt|matter|benefit)\w*\s+(?:\w+\s+)?(?:more|less)\s+(?:when|if|once|as|the\s+\w+er)\b|"
    r"\b(?:optimal|best)\b[^?;]{1,40}?\b(?:differ\w*|the\s+same|change\w*)\s+(?:for|across|between|under|with)\b"
)

# "help more at lr 1e-4 than at lr 1e-5", "matter more for RLOO than for GRPO", "more with
# LoRA than without": one effect set against the same effect under another setting
_MORE_THAN_UNDER = re.compile(
    r"\b(?:more|less|most|least|better|worse|bigger|larger|smaller|stronger|weaker)\b"
    r"[^?;]{0,60}?\bthan\s+(?:it\s+(?:does|do|did)\s+)?(?:at|for|with|under|without|when)\b"
)

# "does the best lr differ between countdown and chain_sum?"
_BEST_DIFFERS = re.compile(
    r"\b(?:optimal|best)\b[^?;]{1,40}?\b(?:differ\w*|the\s+same|change\w*)\s+"
    r"(?:for|across|between|on|from)\b"
)

_MORE_THAN = re.compile(
    r"\b(?:more|less|most|least|better|worse|bigger|larger|smaller|stronger|weaker)\b"
    r"[^?;]{0,60}?\bthan\s+(?:it\s+(?:does|do|did)\s+)?(?:for|on|in|with|at|to)?\s*"
    r"(?:the\s+|an?\s+)?$"
)

# the untrained model something is set against: "over the base model", "relative to ..."
_AGAINST = r"\b(?:over|than|vs\.?|versus|compared (?:to|with)|against|beyond|relative to)\s+"
_UNTRAINED_LEAD = re.compile(rf"{_AGAINST}(?:the\s+|an?\s+)?$")

# training set against no training: "at all", "over the base model", "vs no training"
_TRAINING_AT_ALL = re.compile(
    rf"\bat all\b|{_AGAINST}(?:the\s+|an?\s+)?"
    r"(?:base|untrained|pretrained|original|initial|starting)\s+(?:[\w.-]+\s+)?"
    r"(?:model|policy|checkpoint)|"
    r"\b(?:vs\.?|versus|than|over|compared (?:to|with)|beats?|outperforms?)\s+(?:no|without)\s+"
    r"(?:rl\s+)?training\b|"
    # "does RL even help?", "trained vs untrained", "… compared to the base?", "my base model"
    r"\beven\s+(?:help|work|improve)\w*|\btrained\s+(?:vs\.?|versus|or)\s+untrained\b|"
    r"\buntrained\s+(?:vs\.?|versus|or)\s+trained\b|\bcompared\s+(?:to|with)\s+the\s+base\b|"
    r"\b(?:improve|help)\w*\s+my\s+base\s+model\b|\bbeat\s+the\s+(?:untrained|base)\b"
)

_TRAINING_WORDS = re.compile(
    r"train|learn|fine[\s-]?tun|\brl\b|reinforcement|reward|polic|gradient|rollout|model|"
    r"experiment|accuracy|hyper[\s-]?param|\bgrpo\b|\bppo\b|\bsteps?\b|agent|checkpoint|epoch|"
    r"dataset|benchmark|\bstudy\b|\brun\b|\bruns\b"
)

# two tasks set against each other ("which is easier: A or B?"), not mixed
_TASK_CONTEST = re.compile(
    r"\b(?:or|vs\.?|versus|which|easier|harder|more learnable|less learnable)\b"
)

_MIXING_WORDS = re.compile(
    r"\b(?:mix\w*|add\w*|plus|alongside|together|combin\w*|joint\w*|with|alone|only|"
    r"multi[\s-]?task|transfer\w*)\b|\d+\s*%|\d+\s*/\s*\d+|\+|&"
)


# "does the learning rate affect response length?": the length is what moves, not a setting
_MOVES_LENGTH = re.compile(
    r"\b(?:affect|chang|increas|reduc|rais|lower|shorten|lengthen|grow|impact|inflat)\w*\s+"
    r"(?:the\s+|average\s+|mean\s+|model'?s?\s+)*$"
)


def _length_as_outcome(q: Question) -> None:
    """Drops "response length" as `max_tokens` where it is what the question asks moves
    ("does the learning rate affect response length?") beside another setting: an outcome
    no study measures (said by `read_outcome`), not a second factor."""

    def moved(m: Mention) -> bool:
        words = q.text[m.start : m.end]
        return (
            m.key == "max_tokens"
            and "length" in words
            and not words.startswith("max")
            and bool(_MOVES_LENGTH.search(q.text[: m.start]))
            and not re.match(r"\s*(?:to|of|=|at|from)?\s*\d", q.text[m.end :])
        )

    lengths = [m for m in q.mentions if m.kind == "factor" and moved(m)]
    others = [
        m for m in q.mentions if m.kind in ("factor", "param", "value") and m.key != "max_tokens"
    ]
    if lengths and others:
        q.mentions = [m for m in q.mentions if m not in lengths]
        q.masked = blank_mentions(q.text, q.mentions)


def _untrained_as_baseline(q: Question) -> None:
    """Drops "the base model" as `base_model` where it is the untrained model the trained
    arms are set against ("does RLOO beat GRPO relative to the base model?") beside another
    setting: every study reports the untrained baseline beside its arms."""
    untrained = [
        m
        for m in q.of("factor", "base_model")
        if q.text[m.start : m.end] == "base model" and _UNTRAINED_LEAD.search(q.text[: m.start])
    ]
    others = [
        m for m in q.mentions if m.kind in ("factor", "param", "value") and m.key != "base_model"
    ]
    if untrained and others:
        q.mentions = [m for m in q.mentions if m not in untrained]
        q.masked = blank_mentions(q.text, q.mentions)
        q.assumptions.append(
            "'the base model' read as the untrained model: every study reports its held-out "
            "accuracy beside the trained arms"
        )


def _models_are_param_values(q: Question, named: list[str], models: list[Mention]) -> bool:
    """Whether the models named are values of a PARAM named ("gpt-4o as the judge model
    instead of gpt-4o-mini", judge_model="gpt-4o-mini"): that PARAM is varied, no model."""
    for name in named:
        default = (q.params or {}).get(name.removeprefix(WORKFLOW_PREFIX))
        if name.startswith(WORKFLOW_PREFIX) and isinstance(default, str):
            if any(q.text[m.start : m.end] in default.lower() for m in models):
                return True
    return False


def _refuse_model_against_steps(q: Question) -> None:
    """A bigger model set against more training ("360M at 20 steps vs 135M at 60", "bigger
    model or more steps?") changes two settings at once."""
    steps = {m.groups[0] for m in q.of("aside", "steps_n")}
    if len(steps) < 2 and re.search(r"\bfewer (?:training )?steps|\bsteps to\b", q.text):
        return  # "does the 360M model need fewer steps to hit 0.8?": steps are the outcome
    if len(steps) >= 2 or q.of("factor", "max_steps") or _MORE_STEPS.search(q.text):
        raise q.unreadable(
            "it sets a larger model against more training steps: two settings at once, so "
            "no difference could be put down to either. Ask one at a time: 'does the 360M "
            "model beat the 135M at 20 steps?' and 'do 60 steps beat 20 on the 135M "
            "model?'",
            how=False,
        )


def _refuse_setting_against_steps(q: Question, setting: str) -> None:
    """A setting's level set against more training ("is group size 16 for 10 steps better
    than group size 4 for 40 steps?", "does a larger group beat more steps?") changes two
    settings at once."""
    span = asking_span(q.text) or (0, len(q.text))
    steps = {m.groups[0] for m in q.of("aside", "steps_n") if span[0] <= m.start < span[1]}
    if len(steps) >= 2 or _AGAINST_MORE_STEPS.search(q.text):
        raise q.unreadable(
            f"it sets {setting} against the number of training steps ("
            + (" vs ".join(sorted(steps, key=int)) + " steps" if len(steps) >= 2 else "more steps")
            + f"): two settings at once, so no difference could be put down to either (a "
            f"compute-matched comparison is one of them, not a study of one setting). Ask one "
            f"at a time: '… {setting} … at 20 steps?' and 'do 40 steps beat 20?'",
            how=False,
        )


# "does a larger group beat more steps?": steps set against the setting named
_AGAINST_MORE_STEPS = re.compile(
    r"(?<!more )(?<!less )\b(?:beats?|than|vs\.?|versus|or|against|instead of|over)\s+"
    r"(?:[a-z]+\s+){0,2}?"
    r"(?:more|longer|extra|fewer) (?:training )?steps\b"
)

_MORE_STEPS = re.compile(
    r"(?:more|longer|doubl\w*(?: the)?|extra) (?:training )?(?:steps|training)\b"
)


def _tied_to_a_level(q: Question, m: Mention) -> bool:
    """Whether the level word `m` ("LoRA") is written right after a number with "with"
    ("lr 2e-4 with LoRA") before the question's verb: part of that level, not the arms'."""
    verb = re.search(DIRECTION_WORDS, q.text)
    return (
        m.key in HELD_WORDS
        and verb is not None
        and m.end <= verb.start()
        and bool(
            re.search(r"\d[\d.e-]*\s+(?:with|using|under)\s+(?:an?\s+|the\s+)?$", q.text[: m.start])
        )
    )


def read_factor(q: Question) -> str:
    """The factor the question varies (a run setting, `workflow:<PARAM>`, `task_mix` or
    `base_model`); refused when it names none, two, or asks only whether a task is learnable."""
    _length_as_outcome(q)
    _untrained_as_baseline(q)
    tasks = q.of("task")
    if tasks and q.params is None and _TRAINING_AT_ALL.search(q.text):
        # "does GRPO help letter counting at all?", "… over the base model?": trained
        # against untrained, which every study's control answers — not GRPO vs RLOO
        algorithms = {m.level for m in q.of("value") if m.key == "algorithm"}
        others = [m for m in q.mentions if m.kind in ("param", "factor")
                  and m.key not in ("base_model", "algorithm", "max_steps")]  # fmt: skip
        if len(algorithms) <= 1 and not others and len(q.of("model")) < 2:
            raise q.unreadable(can_it_learn(q, tasks[0]))
    named = [m.key for m in q.mentions if m.kind in ("param", "factor")]
    named = list(dict.fromkeys(k for k in named if k != "max_steps"))
    if not named:
        named = list(dict.fromkeys(m.key for m in q.of("value")))
    else:  # two levels of another setting set against each other vary it too
        levels: dict[str, set] = {}
        for m in q.of("value"):
            levels.setdefault(m.key, set()).add(json.dumps(m.level, sort_keys=True))
        named += [key for key, seen in levels.items() if len(seen) >= 2 and key not in named]
        # "does lr 2e-4 with LoRA beat lr 1e-4?": a level word tied to one of the levels
        # compared, before the verb (neither held nor set apart), is a second setting
        named += [m.key for m in q.of("value") if m.key not in named and _tied_to_a_level(q, m)]
    _no_interaction(q, named)
    if named == ["algorithm"] and _default_algorithm_alone(q):
        if not q.of("task"):  # "does GRPO make the model more truthful?"
            raise q.unreadable(
                "it names only GRPO, the default algorithm, and nothing to set it against; "
                "ask about another algorithm ('does RLOO beat GRPO on chain_sum?') or a "
                "setting of GRPO ('does a KL penalty of 0.05 help GRPO on chain_sum?')"
            )
        raise q.unreadable(can_it_learn(q, q.of("task")[0]))
    if named and _learns_at_one_level(q):
        raise q.unreadable(can_it_learn(q, q.of("task")[0]))
    # "can the model learn X (in 30 steps)?": no two settings, whatever steps it names
    if not named and q.of("task") and q.params is None:
        if _CAN_LEARN.search(q.masked):
            raise q.unreadable(can_it_learn(q, q.of("task")[0]))
    models = q.of("model")
    if not named and len(models) >= 2:
        named = ["base_model"]
    if (
        not named
        and models
        and len(set(q.served)) >= 2
        and re.search(r"\bfewer (?:training )?steps|\bsteps to\b|\bfaster|\bsooner", q.text)
    ):  # "does the 360M model need fewer steps to hit 0.8?": the model, judged on speed
        named = ["base_model"]
    if named == ["base_model"] and q.params is None:
        _refuse_model_against_steps(q)
    if (
        len(models) >= 2
        and named
        and "base_model" not in named
        and named != ["algorithm"]
        and not _models_are_param_values(q, named, models)
    ):
        raise q.unreadable(
            f"it asks whether {named[0]}'s effect depends on the model (an interaction), "
            f"which needs every pairing trained and a test of the difference between two "
            f"effects; a study varies one setting. Ask about {named[0]} on each model "
            f"('does … help on the {q.text[models[0].start : models[0].end]} model?', then "
            f"the other): each report gives the effect with a 95% interval",
            how=False,
        )
    algorithms = [m for m in q.mentions if m.key == "algorithm"]
    if named == ["algorithm"] and len(models) >= 2 and len(algorithms) == 1:
        # "does Qwen benefit more from GRPO than SmolLM2?": one algorithm named beside
        # two models is the training both get, not a setting to vary
        q.assumptions.append(
            f"{q.text[algorithms[0].start : algorithms[0].end]!r} beside two models is "
            "the training each gets: the models are compared by held-out accuracy after "
            "it (not by their gains: the report gives each model's untrained baseline "
            "beside it)"
        )
        named = ["base_model"]
    if (
        not named
        and q.of("task")
        and q.of("aside", "threshold")
        and re.search(r"\bhow (?:many|much|long)\b", q.text)
        and q.params is None
    ):  # "how many steps are needed to reach 0.6 on chain_sum?": the pilot's curve answers
        raise q.unreadable(can_it_learn(q, q.of("task")[0]))
    if not named and (q.of("factor", "max_steps") or q.of("aside", "steps_n")):
        named = ["max_steps"]
    if not named and q.of("aside", "ratio") and q.params is None:
        q.assumptions.append("no setting named beside a ratio: read as a task mix")
        named = ["task_mix"]  # "does a 3:1 mix help chain_sum?"
    if not named and re.search(r"(?<![\w.])\d+(?:\.\d+)?e-\d+\b", q.masked):
        q.assumptions.append("no setting named: numbers like 1e-4 read as learning rates")
        named = ["lr"]
    if not named and len({m.key for m in q.of("task")}) >= 2 and q.params is None:
        if _TASK_CONTEST.search(q.masked) and not _MIXING_WORDS.search(q.masked):
            tasks = [m.key for m in q.of("task")]
            raise q.unreadable(
                f"it compares the tasks {' and '.join(dict.fromkeys(tasks))} themselves: "
                "their accuracies are on different items, so no run setting separates "
                "them. Ask one question per task (does training help on each, against "
                "its untrained baseline), or ask whether mixing them helps one "
                f"('does adding {tasks[1]} help on {tasks[0]}?')"
            )
        q.assumptions.append(
            "two tasks and no run setting named: read as a question about the task mix"
        )
        named = ["task_mix"]
    interaction = _MORE_THAN_UNDER.search(q.text) or _ROBUST_TO.search(q.text)
    if interaction and len(named) == 1 and q.held and q.params is None:
        # "does the group size help more at temperature 0.7 than at 1.0?": the setting
        # taken as held is the second of an interaction
        named = [named[0], next(iter(q.held))]
    if len(named) > 1 and interaction:
        # "does the KL penalty matter more for RLOO than for GRPO?"
        first, second = named[:2]
        raise q.unreadable(
            f"it asks whether {first}'s effect depends on {second} (an interaction), which "
            f"needs every pairing of the two trained and a test of the difference between "
            f"two effects; a study varies one setting. Ask about {first} once at each "
            f"{second} ('does … help at {second} X?', then at Y): each report gives the "
            "effect with a 95% interval, and effects whose intervals overlap widely cannot "
            "be told apart",
            how=False,
        )
    if len(named) == 1 and named[0] not in ("max_steps", "base_model", "task_mix"):
        _refuse_setting_against_steps(q, named[0])
    if len(named) > 1:
        raise q.unreadable(
            f"it names {len(named)} settings ({', '.join(named)}); a study varies one at "
            f"a time — ask about one, and set the others apart as the setting every arm "
            f"keeps, before the question ('with {named[0]} <value>, does {named[1]} <level> "
            f"help?') or after it ('…, {named[0]}=<value>?')"
        )
    if named:
        return named[0]
    about_training = bool(_TRAINING_WORDS.search(q.text) or q.of("fixed"))
    if q.of("task") or (q.params is not None and about_training):
        where = (
            "your workflow"
            if q.params is not None
            else " and ".join(dict.fromkeys(m.key for m in q.of("task")))
        )
        declared = (
            f" (your workflow's PARAMS: {', '.join(q.params) or 'none'})"
            if q.params is not None
            else ""
        )
        if _PER_STEP_NAMED.search(q.text):  # "does the number of rollouts per step matter?"
            raise q.unreadable(
                f"no run setting named: it names {where} and the episodes per step, which are "
                "group_size x batch_groups; name the one to vary ('does batch_groups 16 beat 4?'"
                ": 64 vs 16 episodes at group size 4), or fix the total and vary the group "
                "size ('does 4 groups of 16 beat 16 groups of 4?')"
            )
        raise q.unreadable(f"no run setting named: it names {where} but not what to vary{declared}")
    if about_training:
        raise q.unreadable("no run setting or task named")
    raise NotAboutTraining(
        f"{q.question!r} is not a question about training a model: the researcher "
        f"answers questions about RL training by running experiments. "
        f"{how_to_ask(q.params)}"
    )


_PER_STEP_NAMED = re.compile(
    r"\b(?:episodes|samples|rollouts|completions|generations|trajectories)\s+(?:per|a|each)\s+"
    r"(?:training\s+)?(?:step|update|batch|iteration)\b"
)

_FASTER_OR_MOVED = re.compile(
    r"\b(?:fewer|less|more|faster|sooner|quicker)\s+(?:training\s+)?(?:steps|updates|"
    r"iterations|time|episodes|samples)\b|\b(?:bigger|larger|smaller|higher|lower)\b"
)


def _learns_at_one_level(q: Question) -> bool:
    """Whether the question asks only whether the model learns a task, with at most one
    level of anything named ("does GRPO learn chain_sum within 30 steps at lr 1e-4?"): no
    comparison word, one task, one algorithm, one number beside the steps it fixes."""
    if q.params is not None or len({m.key for m in q.of("task")}) != 1:
        return False
    if not _DOES_LEARN.search(q.masked) or _COMPARED.search(q.masked) or _AS_AS.search(q.masked):
        return False
    if any(m.key == "lora" for m in q.mentions) and _LEVEL_NUMBER.search(q.masked):
        return False  # "does LoRA rank 4 learn …": a rank beside LoRA's full alternative
    if re.search(rf"\b(?:{GREATER_WORDS}|{LESS_WORDS}|{TWO_SIDED_WORDS})", q.masked):
        return False  # "does it learn faster at lr 1e-4?", "learn chain_sum better"
    if len({m.level for m in q.of("value")}) > 1 or len(q.of("model")) > 1:
        return False
    if _FASTER_OR_MOVED.search(q.masked) or any(
        _FASTER_OR_MOVED.search(q.text[m.start : m.end]) for m in q.mentions
    ):
        return False  # "does a larger group size learn in fewer steps?": a comparison
    text = q.text
    for m in sorted(q.of("aside"), key=lambda m: m.start, reverse=True):
        text = text[: m.start] + " " * (m.end - m.start) + text[m.end :]
    return len(_LEVEL_NUMBER.findall(text)) <= 1


def _default_algorithm_alone(q: Question) -> bool:
    """Whether the question names only the default algorithm, GRPO, and nothing it is set
    against ("does GRPO help countdown?", "is GRPO good for chain_sum?"): whether training
    helps at all, not GRPO against an algorithm it never named."""
    algorithms = {m.level for m in q.of("value") if m.key == "algorithm"}
    if algorithms != {FACTORS["algorithm"].default} or q.params is not None:
        return False
    if len(q.of("model")) > 1:
        return False
    others = [m for m in q.mentions if m.kind in ("param", "factor") and m.key != "algorithm"]
    return not others and not _COMPARED.search(q.masked) and not _AS_AS.search(q.masked)


def _no_interaction(q: Question, named: list[str]) -> None:
    """Refuses a setting's effect on one task set against its effect on another: that is
    an interaction, which needs both tasks trained at both levels and a test of the
    difference between two effects; a study varies one setting on one judged task."""
    if not named or named in (["task_mix"], ["base_model"]) or q.params is not None:
        return
    setting = named[0]
    models = q.of("model")
    one_algorithm = named == ["algorithm"] and len({m.level for m in q.of("value")}) == 1
    if (
        len(models) >= 2
        and not one_algorithm
        and any(_MORE_THAN.search(q.text[: m.start]) for m in models[1:])
    ):
        first, second = (q.text[m.start : m.end] for m in models[:2])
        raise q.unreadable(
            f"it asks whether {setting}'s effect on the {first} model differs from its effect "
            f"on the {second} model (an interaction), which needs both models trained at both "
            "levels and a test of the difference between two effects; a study varies one "
            f"setting on one model. Ask the same question about {setting} once per model: each "
            "report gives its effect with a 95% interval",
            how=False,
        )
    tasks = list(dict.fromkeys(m.key for m in q.of("task")))
    if len(tasks) < 2:
        return
    later = [m for m in q.of("task") if m.key != q.of("task")[0].key]
    if not any(_MORE_THAN.search(q.text[: m.start]) for m in later) and not _BEST_DIFFERS.search(
        q.text
    ):
        return
    raise q.unreadable(
        f"it asks whether {setting}'s effect on {tasks[0]} differs from its effect on "
        f"{tasks[1]} (an interaction), which needs both tasks trained at both levels and a "
        "test of the difference between two effects; a study varies one setting on one "
        f"judged task. Ask the same question about {setting} once per task (on {tasks[0]}, "
        f"then on {tasks[1]}): each report gives its effect with a 95% interval, and "
        "effects whose intervals overlap widely cannot be told apart",
        how=False,
    )


def can_it_learn(q: Question, mention: Mention) -> str:
    """Whether a model can learn a task is no comparison of two settings: every study
    answers it for its control (the pilot, against the untrained baseline), and the
    bench measured it for the bundled model."""
    info = task_info(mention.key)
    level = level_beside(
        q.text, mention.start, mention.end,
        "|".join(level_pattern(level, info) for level in info.levels),
    ) if info and info.levels else None  # fmt: skip
    level = spelled_level(level, info) if level else (info.default_level if info else None)
    record = measurements()
    row = measured(mention.key, level, record.model) if record else None
    at = f" at level {level}" if level else ""
    known = (
        f"; bench/learnability.py measured it for the bundled {record.model} on "
        f"{mention.key}{at}: {describe(row)} ({record.settings})"
        if row and record
        else ""
    )
    return (
        f"it asks whether the model can learn {mention.key}{at}, which compares no two "
        f"settings: every study answers it for its control arm (the pilot trains it first "
        f"and reports whether it learned against the untrained model on the same "
        f"held-out items){known}. Ask about a setting to see it "
        f"('does lr 2e-5 vs 4e-5 speed up learning on {level + ' ' if level else ''}"
        f"{mention.key}?')"
    )
