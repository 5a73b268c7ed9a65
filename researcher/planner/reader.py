"""The template planner's reader: a research question in words → a `Reading` (factor, levels,
control, task, outcome, direction), deterministically, with a small grammar over the
catalogue's synonym tables (`catalogue.py`). No LLM; the same question always reads the same.

How a question is read:

- **Mentions.** Every synonym of every task and factor (and every PARAMS key of the user's
  workflow: "system_prompt" as "system prompt" or "prompt") is matched; overlapping matches
  keep the leftmost-longest, so "single-turn" is the easy task and never a turn count, "the
  tool-use task" is a task and "mixing in" is the task-mix factor. A setting said to be held
  fixed ("at the same batch size") is no factor. A task this planner does not ship
  ("countdown") or a setting no study can vary ("lr schedule", "optimizer") is refused by name.
- **The factor** is the setting named (a level word such as "RLOO" or "full fine-tuning"
  names its factor too, but an explicit setting wins: "a larger GRPO group size" varies
  the group size; beside "Dr. GRPO", a plain "GRPO" is GRPO with std scaling, the
  `scale_rewards` level "group", not the algorithm). "steps" alone is the factor only when
  nothing else is. Two tasks and no setting read as task mixing; two model sizes as the base
  model; bare numbers like 1e-4 as learning rates. Two settings are refused: a study varies one.
- **Levels** are the numbers as written (5e-6, 0.000005 and "5 x 10^-6" are one level; "eight"
  too, for whole-number settings); "twice", "half", "five times larger", "tenfold", "by a
  factor of 10" multiply the control, "dividing by 10" divides it, "increasing X by 4" adds
  4 to the default. One level
  named: the catalogue default is the other, and the control (a level word that *is* the
  default, "does tree merging save time?", is compared with the factor's alternative). No
  level named: "a higher X" tries the factor's raised level, "a lower X" its lowered one,
  "which X is best" lowered/default/raised (every choice of a choice setting), "how many
  steps" 10/20/40 steps, else the factor's alternative level. A factor the question takes
  away ("removing the KL penalty", "without weight decay", "is a KL penalty necessary?") has
  it on as the control and off (its default 0, full fine-tuning, `False`) as the treatment.
  "By at least 5 points", "margin 0.03" are the smallest effect or the margin, never levels.
- **Held settings.** A setting at one value after the verb ("does group size 8 help at lr
  1e-5?", "under RLOO", "with LoRA rank 8", "at few_shot=3" for a workflow PARAM, "at the
  default temperature") or in a leading clause set off by a comma is applied to every arm
  (`Reading.held`) and taken out of the text before the rest is read,
  when something else is still named to vary.
- **The control**, when two or more levels are written, is in this order: the smallest
  level when the question asks about a larger/higher/more X (the largest for smaller/
  lower/fewer); the level after "than", "instead of", "rather than", "compared with",
  "as good as", "match", "beat", "from", "replacing", or "versus" after a verb ("does A save
  time versus B"); the
  catalogue default when it is among the levels; B of a directional "A vs B" ("does 1e-4 vs
  1e-5 help?": 1e-5); the smallest of three or more numbers; else the first named ("0.1 vs
  0.3": 0.1). Levels list the control first, then the others as
  written.
- **The task** is the one after "held-out", "into", then "on", "for", "at", "of" or a verb
  ("help arithmetic"; not "a mix of"), not after "training on" nor what is mixed in
  ("mixing in X", "adding X"); other tasks named go to `tasks`, each at a difficulty level
  named beside it ("tiny countdown", "countdown tiny": `task_levels`). A misspelt task name
  is the closest shipped one, said. None named: arithmetic (max_turns: guess_number;
  a task mix: chain_sum with basic_arithmetic mixed in).
  Your own workflow: "workflow".
- **The outcome**: cost for "cheaper", "wall time", "tokens", "faster to train"; learning
  speed (area under the training-reward curve) for "learn faster", "slow learning",
  "sample efficiency", "within N steps" (also fixes steps = N), and steps to reach a training
  reward of 0.8 (or the one named: "reach 0.9 sooner", "the time needed to hit 0.7") for
  "how many steps ... to learn";
  final training reward for "training reward"; held-out accuracy otherwise. When the steps
  themselves are the factor ("how many training steps does it need?"), held-out accuracy
  after each number of steps, direction greater.
- **The direction**: equivalence for "as good as", "match", "no worse than", "comparable", "get away with",
  "without hurting" (margin 0.05, or "within 3 points" → 0.03, "within 0.02" → 0.02; 10% of
  the control's cost for cost); greater for help/improve/better/faster; less for hurt/slow/
  worse/cheaper/cut; two-sided for matter/differ/affect/"what does", for both ways at once or
  "A or B", and when no way is said.

Every default filled in is said in `Reading.assumptions`, and the reading passes
`check_reading` (bounds, types, at least two levels) before it is returned. A question with no
setting and no task gets `UnreadableQuestion` saying what is missing, with example questions;
one that is not about training gets `NotAboutTraining`; an empty one `EmptyQuestion`.

Must not know about arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from researcher.errors import (
    EmptyQuestion,
    NotAboutTraining,
    ResearcherError,
    UnreadableQuestion,
)
from researcher.plan import Level, Reading
from researcher.planner.catalogue import (
    AMBIGUOUS_DATASET_NAMES,
    DEFAULT_TASK,
    EQUIVALENT_WORDS,
    FACTORS,
    GREATER_WORDS,
    LESS_WORDS,
    OUTCOME_WORDS,
    TASKS,
    TWO_SIDED_WORDS,
    UNSHIPPED_TASKS,
    UNSUPPORTED_SETTINGS,
    WORKFLOW_PREFIX,
    WORKFLOW_TASK,
    Factor,
    TaskInfo,
    check_reading,
    describe_level,
    distinct_levels,
    is_task,
    reasoning_gym_datasets,
    task_info,
    task_words,
    tasks_in_words,
)
from researcher.planner.learnability import describe, measured, measurements

EXAMPLE_QUESTIONS = (
    "does a KL penalty of 0.05 help on arithmetic?",
    "does lr 1e-4 vs 2e-5 change held-out accuracy on the guessing game?",
    "is LoRA r=16 as good as full fine-tuning on the easy task?",
)

DEFAULT_MARGIN = 0.05  # equivalence margin on accuracy / reward when the question gives none
COST_MARGIN = 0.10  # equivalence margin for cost: 10% of the control's cost
DEFAULT_THRESHOLD = 0.8  # "how many steps to learn": steps to a training reward of 0.8
MIX_PARTNER = {  # mixed in when only the judged task is named
    "arithmetic": "calculator",
    "chain_sum": "basic_arithmetic",
}
# a mixing question that names no task at all ("does multi-task mixing help?") is studied on
# two tasks bench/learnability.py measured the bundled model learning in 20 steps (chain_sum
# 0.27 -> 0.68, basic_arithmetic 0.47 -> 0.73, both easy): a mix of tasks it cannot learn
# answers nothing
MIX_DEFAULT_TASK = "chain_sum"
STEPS_DOSE = [10, 20, 40]  # "how many steps does it need?": a dose-response over max_steps

# -- model requests (also used by the template planner) ---------------------------------------

_MODEL_NAMES = r"qwen|llama|mistral|mixtral|gemma|phi|smollm|deepseek|gpt|olmo"
_MODEL_REQUEST = re.compile(
    rf"\b(?:(?:{_MODEL_NAMES})[\w.-]*(?:\s+\d+(?:\.\d+)?\s*[bm]\b)?|\d+(?:\.\d+)?\s*[bm]\b)",
    re.IGNORECASE,
)


def requested_models(question: str) -> list[str]:
    """The models or sizes a question names ("7B", "Qwen 32B", "llama"), in order."""
    found = [match.group().strip() for match in _MODEL_REQUEST.finditer(question)]
    return list(dict.fromkeys(found))


def serves(request: str, model: str) -> bool:
    """Whether the served `model` is what `request` asks for: every word and size of the
    request appears in the model's name ("7B" in "Qwen2.5-7B-Instruct")."""
    name = model.lower()
    tokens = re.findall(r"\d+(?:\.\d+)?\s*[bm]|[a-z]+\d*(?:\.\d+)?", request.lower())
    for token in tokens:
        token = token.replace(" ", "")
        if not re.search(rf"(?<![\d.]){re.escape(token)}(?![\d])", name):
            return False
    return bool(tokens)


def model_scale(name: str) -> float | None:
    """Parameters in millions as a model's name says ("SmolLM2-135M" → 135), else None."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", name.lower())
    if not match:
        return None
    return float(match.group(1)) * (1000 if match.group(2) == "b" else 1)


# -- mentions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    # task | unshipped | unsupported | factor | value | param | fixed | neutral | model | aside
    kind: str
    key: str  # the task family, factor name, or aside kind
    level: Level = None
    groups: tuple[str | None, ...] = ()


def _compile(fragment: str) -> re.Pattern[str]:
    # a space or hyphen in a synonym matches a space, hyphen, underscore or nothing
    flexible = re.sub(r"[ -]", lambda _: r"[\s_-]*", fragment)
    return re.compile(rf"(?<!\w)(?:{flexible})(?!\w)")


_NEUTRAL = (
    r"multi turn(?: tasks?| training| rl| agents?| games?| settings?)?",
    r"tool calls?",
    r"turn based",
    r"step by step",
    r"one step",
)
_TIMES_COUNT = r"\d+(?:\.\d+)?|two|three|four|five|six|eight|ten|a hundred|hundred"
_ASIDES = (  # number phrases that are not levels: (kind, regex)
    ("within_steps", r"within (?:the first )?(\d+) (?:training )?steps"),
    ("margin", r"within (\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|percent|pp)"),
    ("margin_abs", r"within (?:an? )?(?:margin of )?(0?\.\d+)"),
    # the effect hoped for, not a level: "improve accuracy by at least 5 points"
    (
        "effect",
        r"by (?:at least |more than |over |as much as |a good |some )?(\d+(?:\.\d+)?) ?"
        r"(?:percentage points?|points?|pp|%|percent)|"
        r"(?:at least |more than )?(\d+(?:\.\d+)?) ?(?:percentage points?|points?|pp) "
        r"(?:better|worse|higher|lower|more|less)",
    ),
    ("effect_abs", r"by (?:at least|more than) (0?\.\d+)"),
    ("margin", r"margin (?:of )?(\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|percent|pp)"),
    ("margin_abs", r"margin (?:of )?(0?\.\d+)"),
    ("seeds", r"(\d+) (?:random )?seeds?"),
    ("pass_at_k", r"pass ?@ ?(\d+)"),
    ("task_size", r"\d+[\s-](?:numbers?|digits?|terms?)"),  # "3-number countdown": a level
    (
        "threshold",
        r"(?:reach\w*|hit\w*|gets? to|achiev\w*)(?: an?)?(?: training)?(?: reward| accuracy| "
        r"score)?(?: of)? (\d+(?:\.\d+)?)(%?)",
    ),
    # "4 steps of staleness" is a lag, not a run length
    ("steps_n", r"(\d+) (?:training |more )?steps(?! of (?:staleness|lag|delay|off))"),
    ("ratio", r"(\d{1,3}) ?[/:-] ?(\d{1,3})(?!\.\d)(?: (?:mix|split|ratio))?"),
    (
        "times",
        # the comparative is looked at, not taken: "a 4x larger group" still names the group
        rf"({_TIMES_COUNT})[ -]?(?:x|×|times|fold)"
        r"(?=(?: as)?(?: (larger|higher|bigger|greater|more|longer|smaller|lower|less|fewer|"
        r"shorter|large|high|big|much))?)",
    ),
    # "by a factor of 10"; "dividing the lr by 10" (a bare "by N" only after such a verb)
    ("factor_of", rf"by a factor of ({_TIMES_COUNT})"),
    (
        "divided_by",
        rf"by ({_TIMES_COUNT})(?! ?(?:%|percent|points?|pp)|\.\d|[ -]?(?:x\b|×|times|fold))",
    ),
    (
        "times_word",
        r"(twice|doubl\w*|half|halv\w*|tripl\w*|quadrupl\w*)|an order of magnitude "
        r"(larger|higher|bigger|greater|more|smaller|lower|less)",
    ),
)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8, "ten": 10}


def _static_patterns() -> list[tuple[re.Pattern[str], str, str, Level]]:
    patterns = []
    for kind, regex in _ASIDES:
        patterns.append((re.compile(rf"(?<![\w.])(?:{regex})(?!\w)"), "aside", kind, None))
    for factor in FACTORS.values():
        for synonym in factor.synonyms:
            patterns.append((_compile(synonym), "factor", factor.name, None))
        for words, level in factor.values.items():
            patterns.append((_compile(words), "value", factor.name, level))
    for info in TASKS.values():
        for synonym in info.synonyms:
            patterns.append((_compile(synonym), "task", info.family, None))
    for name in reasoning_gym_datasets():
        if name in TASKS:
            continue  # first-class: its own synonyms name it
        if name in AMBIGUOUS_DATASET_NAMES:
            fragment = rf"(?:reasoning gym {name}(?: dataset| task)?|{name} (?:dataset|task)s?)"
        else:
            fragment = rf"(?:reasoning gym )?{name.replace('_', ' ')}(?: dataset| tasks?)?"
        patterns.append((_compile(fragment), "task", name, None))
    for name in UNSHIPPED_TASKS:
        if is_task(name):
            continue  # shipped since: its own synonyms name it
        patterns.append((_compile(name), "unshipped", name, None))
    for fragment in UNSUPPORTED_SETTINGS:
        patterns.append((_compile(fragment), "unsupported", fragment, None))
    for fragment in _NEUTRAL:
        patterns.append((_compile(fragment), "neutral", "", None))
    patterns.append((_MODEL_REQUEST, "model", "", None))
    return patterns


@functools.cache
def _patterns() -> list[tuple[re.Pattern[str], str, str, Level]]:
    return _static_patterns()  # on first use: the reasoning-gym names import the library


_PRIORITY = {"param": 0, "aside": 1, "model": 2, "factor": 3, "value": 4, "task": 5}


def _param_patterns(params: dict[str, Any]) -> list[tuple[re.Pattern[str], str, str, Level]]:
    """A workflow's PARAMS keys as words: "system_prompt" is "system prompt" (or "system-prompt",
    "system_prompt"), and its last word alone ("prompt") when that is four letters or more."""
    patterns = []
    for key in params:
        words = [re.escape(word) for word in key.lower().split("_") if word]
        if not words:
            continue
        patterns.append((_compile(" ".join(words)), "param", WORKFLOW_PREFIX + key, None))
        if len(words) > 1 and len(words[-1]) >= 4:
            patterns.append((_compile(words[-1] + "s?"), "param", WORKFLOW_PREFIX + key, None))
        for alias in _param_aliases(words):
            patterns.append((_compile(alias), "param", WORKFLOW_PREFIX + key, None))
    return patterns


def _param_aliases(words: list[str]) -> list[str]:
    """Other words for a PARAMS key: a singular ("retries": "retry"), and examples or
    demonstrations for a few-shot count ("few_shot": "3 examples")."""
    last = words[-1]
    aliases = []
    if last.endswith("ies") and len(last) > 4:
        aliases.append(" ".join([*words[:-1], last[:-3] + "y"]))
    if "shot" in last or "shots" in last:
        aliases.append(
            r"(?:in[\s-]context |few[\s-]shot )?(?:examples?|demonstrations?|demos?|shots?)"
        )
    return aliases


_SCALING_VERB = re.compile(
    r"\b(?:divid|multipl|increas|rais|reduc|decreas|lower|cut|boost)\w*\b[^,;.?!]{0,40}$"
)


def _scan(text: str, params: dict[str, Any] | None) -> list[Mention]:
    """Every synonym matched in `text`; overlaps keep the leftmost-longest."""
    found = []
    for pattern, kind, key, level in _param_patterns(params or {}) + _patterns():
        for match in pattern.finditer(text):
            if (
                key == "ratio"
                and sum(int(g) for g in match.groups()) not in (10, 100)
                and not (
                    match.group(0).endswith(("mix", "split", "ratio")) and "0" not in match.groups()
                )
            ):
                continue  # "6/0" inside "5e-6/0.000005" is no mix ratio; "a 3:1 mix" is
            if key == "divided_by" and not _SCALING_VERB.search(text[: match.start()]):
                continue  # "by 4" alone: a factor after "dividing"/"multiplying", an amount
                # after "increasing"/"reducing", else a number
            if match.end() > match.start():
                found.append(Mention(match.start(), match.end(), kind, key, level, match.groups()))
    found.sort(key=lambda m: (m.start, m.start - m.end, _PRIORITY.get(m.kind, 9)))
    named = {m.key for m in found if m.kind == "factor"}
    found = [
        m
        for m in found
        if not (m.kind == "value" and FACTORS[m.key].values_need_name and m.key not in named)
    ]
    kept: list[Mention] = []
    for mention in found:
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return [_held_fixed(text, m) for m in _plain_grpo_beside_dr_grpo(kept)]


def _plain_grpo_beside_dr_grpo(mentions: list[Mention]) -> list[Mention]:
    """A question like "does Dr. GRPO beat GRPO?" compares GRPO's advantage with and without
    the division by the group's std: beside a `scale_rewards` word, a plain "GRPO" is its
    level "group", not the algorithm (another algorithm named beside it stays a second
    setting)."""
    if not any(m.key == "scale_rewards" for m in mentions):
        return mentions
    algorithm = [m for m in mentions if m.key == "algorithm"]
    if any(m.kind != "value" or m.level != "grpo" for m in algorithm):
        return mentions
    return [
        Mention(m.start, m.end, "value", "scale_rewards", "group") if m in algorithm else m
        for m in mentions
    ]


def _held_fixed(text: str, mention: Mention) -> Mention:
    """A setting said to stay the same ("at the same batch size") is no factor."""
    if mention.kind not in ("factor", "value", "param"):
        return mention
    before = text[: mention.start]
    after = text[mention.end :]
    if re.search(r"\b(?:same|fixed|constant|equal|matched)\s+(?:\S+\s+)?$", before) or re.match(
        r"\s*(?:is |are |stays |remains |being )?(?:held |kept )?(?:fixed|constant|unchanged)\b",
        after,
    ):
        return Mention(mention.start, mention.end, "fixed", mention.key)
    return mention


def _masked(text: str, mentions: list[Mention]) -> str:
    """`text` with every task, factor, level word and model name blanked out, so that
    outcome and direction words are read from what is left."""
    chars = list(text)
    for m in mentions:
        if m.kind in ("task", "factor", "value", "param", "model", "fixed", "unshipped"):
            chars[m.start : m.end] = "#" * (m.end - m.start)
    return "".join(chars)


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e[-+]?\d+)?|\.\d+)(?!\w)(?!\.\d)(%?)")


def _numbers(text: str, mentions: list[Mention]) -> list[tuple[int, float, bool]]:
    """(position, value, is_percent) of every number that is not part of a mention."""
    taken = [(m.start, m.end) for m in mentions]
    found = []
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        value = float(f"{float(match.group(1)):.12g}")
        start = match.start()
        if start and text[start - 1] == "-" and (start == 1 or text[start - 2] in " (=:,"):
            value, start = -value, start - 1  # "a KL penalty of -1": a sign, not a dash
        found.append((start, value, bool(match.group(2))))
    return found


_WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
    if value >= 2  # "one" is too common a word ("one task", "one-step") to be a level
} | {"thirty-two": 32, "sixty-four": 64}
_WORD_NUMBER = re.compile(
    rf"(?<![\w-])({'|'.join(sorted(_WORD_NUMBERS, key=len, reverse=True))})(?![\w-])"
    r"(?! (?:seeds?|tasks?|models?|times|fold|arms?|runs?|of (?:them|these|those)))"
)


def _word_numbers(text: str, mentions: list[Mention]) -> list[tuple[int, Level]]:
    """Levels written as words ("groups of eight vs two"), for whole-number factors."""
    taken = [(m.start, m.end) for m in mentions]
    return [
        (match.start(), float(_WORD_NUMBERS[match.group(1)]))
        for match in _WORD_NUMBER.finditer(text)
        if not any(start <= match.start() < end for start, end in taken)
    ]


def _times_count(count: str) -> float:
    """ "ten", "10", "a hundred" as a number."""
    return _NUMBER_WORDS.get(count, None) or (100.0 if "hundred" in count else float(count))


def _multiplier(text: str, mentions: list[Mention]) -> float | None:
    """The factor the question scales its setting by: "twice", "a 4x larger", "tenfold
    lower", "by a factor of 10", "dividing the lr by 10" (0.1); None when it names none."""
    for m in mentions:
        if m.key == "times":
            count, comparative = m.groups[0], m.groups[1] or ""
            k = _times_count(count)
            return 1 / k if comparative in ("smaller", "lower", "less", "fewer", "shorter") else k
        if m.key == "factor_of":
            return _times_count(m.groups[0])
        if m.key == "divided_by":
            k = _times_count(m.groups[0])
            verb = _SCALING_VERB.search(text[: m.start])
            if verb and verb.group(0).startswith(("divid", "multipl")):
                return 1 / k if verb.group(0).startswith("divid") else k
        if m.key == "times_word":
            word, magnitude = m.groups
            if magnitude:
                return 0.1 if magnitude in ("smaller", "lower", "less") else 10.0
            return {"tw": 2.0, "do": 2.0, "ha": 0.5, "tr": 3.0, "qu": 4.0}[word[:2]]
    return None


def _shift(text: str, mentions: list[Mention]) -> float | None:
    """The amount an "increasing X by 4" adds or a "reducing X by 0.1" takes away; None when
    the question scales (multiplies, divides) or names no such amount."""
    for m in mentions:
        if m.key == "divided_by":
            verb = _SCALING_VERB.search(text[: m.start])
            if verb and not verb.group(0).startswith(("divid", "multipl")):
                amount = _times_count(m.groups[0])
                down = verb.group(0).startswith(("reduc", "decreas", "lower", "cut"))
                return -amount if down else amount
    return None


_DEFAULT_NAMED = re.compile(r"\b(?:the|its|our|my) (?:current |usual )?default\s+(?:\S+\s+)?$")


def _named_default(text: str, mention: Mention) -> bool:
    """Whether the question names the factor's default as a level: "is the default lr better
    than 1e-4?" compares 2e-5 (the default) with 1e-4."""
    return mention.kind in ("factor", "param") and bool(
        _DEFAULT_NAMED.search(text[max(0, mention.start - 40) : mention.start])
    )


def _lowered(multiplier: float | None, way: str | None) -> float | None:
    """A multiplier read with the question's verb: "lowering the lr by 10x" divides by 10."""
    if multiplier is not None and multiplier > 1 and way == "lower":
        return 1 / multiplier
    return multiplier


_MOVES_FACTOR = re.compile(
    r"\b(?:cut(?:s|ting)?|reduc\w*|lower(?:s|ed|ing)?|rais\w*|increas\w*|decreas\w*|"
    r"halv\w*|doubl\w*|boost\w*|slash\w*)\s+(?:the\s+|a\s+|its\s+)?(?=#)"
)
# a budget the comparison is held to is no outcome: "at equal compute"
_AT_EQUAL_COST = re.compile(
    r"\b(?:at|with|under|for) (?:an? )?(?:equal|the same|matched|fixed|same) "
    r"(?:compute|budget|cost|flops|wall[\s-]?time|time|tokens)\b"
)
# the time or steps it takes to reach a threshold is learning speed, not cost: "reduce the
# training time needed to hit 0.7"; group 1: the verb that moves it, if any
_TIME_TO_REACH = re.compile(
    r"(?:\b(reduc\w*|cut\w*|shorten\w*|lower\w*|decreas\w*|sav\w*|fewer|less|increas\w*|"
    r"rais\w*|lengthen\w*|doubl\w*|more|longer)\s+(?:the\s+)?(?:number\s+of\s+)?)?"
    r"\b(?:(?:training|wall[\s-]?clock)\s+)?(?:time|steps|updates|iterations)\s+"
    r"(?:(?:it\s+)?(?:needed|required|needs|takes|it\s+takes|necessary)\s+)?"
    r"(?:to|until|before)\s+(?:reach|hit|get|achiev)"
)
_BEST = re.compile(r"\b(?:which|what|best|optimal|sweep|sensitiv\w*)\b")
_NEEDED = re.compile(  # not "how many steps does it need to reach 0.8"
    r"\b(?:necessary|required|essential|indispensable|need(?:s|ed)?(?! to\b))\b"
)
_CUTS = re.compile(r"\b(?:cut\w*|shorten\w*|trim\w*)\b")
_FEWER_STEPS = re.compile(r"\bfewer (?:training )?(?:steps|updates|iterations)\b")


# a value named as a limit ("limiting responses to 32 tokens", "capped at", "at most")
_LIMITS = re.compile(
    r"\b(?:limit\w*|capp?(?:ed|ing|s)?|restrict\w*|truncat\w*|at most|no more than|up to)\b"
)
_RAISE = r"larger|higher|bigger|greater|more|longer|increas\w*|rais\w*|extra"
_LOWER = r"smaller|lower|less|fewer|shorter|decreas\w*|reduc\w*|lowering"


def _comparative(text: str, mentions: list[Mention]) -> str | None:
    """ "raise" when the question asks about a larger/higher/more X for its factor
    mentions, "lower" for smaller/lower/fewer, else None."""
    for m in mentions:
        inside = text[m.start : m.end]
        before = text[max(0, m.start - 40) : m.start]
        after = text[m.end : m.end + 20]
        for way, words in (("raise", _RAISE), ("lower", _LOWER)):
            if (
                re.search(rf"\b(?:{words})\b", inside)
                or re.search(rf"\b(?:{words})\s+(?:\S+\s+){{0,2}}$", before)
                # "a KL penalty increase" (not the verb: "a KL penalty increase the steps")
                or re.match(
                    rf"\s*(?:is |are |of )?(?:{words})\b(?! (?:the|an?|its|my|our)\b)", after
                )
            ):
                return way
    return None


_REMOVAL = re.compile(
    r"\b(?:remov\w*|drop(?:s|ped|ping)?|without|disabl\w*|turn(?:s|ed|ing)? off|"
    r"switch(?:es|ed|ing)? off|not using|skip(?:s|ped|ping)?|omit\w*|forgo\w*|"
    r"leav(?:e|es|ing) out|no)\s+(?:the\s+|a\s+|an\s+|any\s+)?$"
)
# a removal word that names the level compared against ("better than no weight decay"):
# there the factor off is the control, as the default already is
_CONTRASTED_REMOVAL = re.compile(
    r"\b(?:than|compared (?:with|to)|vs\.?|versus|instead of|rather than|relative to|"
    r"against|over)\s+(?:\S+\s+)?$"
)


def _removes(text: str, mentions: list[Mention]) -> bool:
    """True when the question takes its factor away: "removing the KL penalty", "training
    without weight decay", "turning off the KL penalty"."""
    for m in mentions:
        before = text[max(0, m.start - 30) : m.start]
        removal = _REMOVAL.search(before)
        if removal and not _CONTRASTED_REMOVAL.search(
            text[max(0, m.start - 60) : m.start - len(before) + removal.start()]
        ):
            return True
    return False


# outcomes people ask about that no study measures: said, then judged by held-out accuracy
_UNMEASURED = re.compile(
    r"\b(?:(?:more |less )?stab(?:le|ility|ili[sz]\w*)|unstable|instabilit\w*|collaps\w*|"
    r"diverg\w*|reward hacking|entropy|diversity|calibrat\w*|robust\w*|"
    r"overfit\w*|forget\w*|verbos\w*|response length|(?:gradient )?variance)\b"
)

# a direction word and the unmeasured outcome it is about, a few words on: "reduce reward
# collapse", "less prone to overfitting", "help stability", "hurt robustness"
_DIRECTED_UNMEASURED = re.compile(
    rf"\b(?:{GREATER_WORDS}|{LESS_WORDS}|prevent\w*|avoid\w*|mitigat\w*|reduc\w*|lower\w*|"
    r"less|fewer|more|increas\w*|caus\w*)(?:\s+[\w'’-]+){0,3}?\s+"
    + _UNMEASURED.pattern.removeprefix(r"\b")
)


def _without_unmeasured_direction(text: str) -> tuple[str, str | None]:
    """`text` without the direction words that are about an outcome no study measures
    ("reduce reward collapse", "more stable"), and the first such phrase: that direction says
    nothing about held-out accuracy, which judges the study, so it must not set the side."""
    spans = [
        (m.start(), m.end())
        for m in _DIRECTED_UNMEASURED.finditer(text)
        if _UNMEASURED.search(m.group(0))
    ]
    first = text[spans[0][0] : spans[0][1]].strip() if spans else None
    for start, end in reversed(spans):
        text = text[:start] + " " * (end - start) + text[end:]
    return text, first


# two tasks set against each other ("which is easier: A or B?"), not mixed
_TASK_CONTEST = re.compile(
    r"\b(?:or|vs\.?|versus|which|easier|harder|more learnable|less learnable)\b"
)
_MIXING_WORDS = re.compile(
    r"\b(?:mix\w*|add\w*|plus|alongside|together|combin\w*|joint\w*|with|alone|only|"
    r"multi[\s-]?task|transfer\w*)\b|\d+\s*%|\d+\s*/\s*\d+|\+|&"
)

_CONTRAST = re.compile(
    r"(?:\binstead of|\brather than|\bthan|\bcompared (?:with|to)|\brelative to|\bagainst|"
    r"\bas (?:good|well|accurate|fast|effective|strong|cheap|quickly) as|\bmatch(?:es|ing)?|"
    r"\bover|\bbeat(?:s|ing)?|\boutperform(?:s|ing)?|\bfrom|\breplac(?:e|es|ed|ing))\s+(?:[^\s=:]+(?:\s+|\s*[=:]\s*)){0,3}$"
)


_VERSUS = re.compile(r"\b(?:vs\.?|versus)\s+(?:[^\s=:]+(?:\s+|\s*[=:]\s*)){0,3}$")
# "256 vs 128": the first level's number, "vs", the second's (positions start at each number)
_BARE_VERSUS = re.compile(r"\S+\s+(?:vs\.?|versus)\s+")


def _contrasted(text: str, positions: list[int]) -> int | None:
    """The index of the level named after "than"/"instead of"/"as good as"..., if any; also
    after "versus" when a verb stands between the levels ("does A save time versus B"),
    though not in a bare "A vs B" (there the first named is the control)."""
    for index, position in enumerate(positions):
        if _CONTRAST.search(text[max(0, position - 50) : position]):
            return index
    for index, position in enumerate(positions[1:], start=1):
        between = text[positions[index - 1] : position]
        if _VERSUS.search(between) and len(between.split()) > 5:
            return index
    return None


def _sort_key(level: Level) -> float:
    return float(level) if isinstance(level, int | float) else 7.0  # None: each game's own


# -- the reader -------------------------------------------------------------------------------


def read_question(
    question: str,
    *,
    served_models: list[str],
    workflow_params: dict[str, Any] | None = None,
    workflow_has_test: bool = True,
) -> Reading:
    """The reading of `question` (see the module docstring for the grammar); raises
    `UnreadableQuestion` or `NotAboutTraining` with what is missing and how to ask."""
    original = _plain_numbers(" ".join(question.split()))
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
    reader = _Reader(original, list(served_models), workflow_params)
    return reader.read()


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺−", "0123456789--" + "-")
# "1 x 10^-5", "1×10^-5", "1·10⁻⁵", "10^-5": written as 1e-5
_TIMES_POWER = re.compile(
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*[x×*·]\s*)?10\s*(?:\^|\*\*)\s*([-+]?\d+)(?![\w.])"
)
_SUPERSCRIPT_POWER = re.compile(r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*[x×*·]\s*)?10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


_DIGIT_WORDS = "zero one two three four five six seven eight nine".split()
# "zero point one": 0.1
_POINT_NUMBER = re.compile(
    rf"\b({'|'.join(_DIGIT_WORDS)}) point((?: (?:{'|'.join(_DIGIT_WORDS)}))+)\b", re.IGNORECASE
)


def _plain_numbers(text: str) -> str:
    """`text` with powers of ten written as 1e-5 ("1 x 10^-5", "1×10⁻⁵", "10^-4"), a unicode
    minus in an exponent ("1e−5") as a hyphen, and decimals in words ("zero point one") as
    digits."""
    text = _POINT_NUMBER.sub(
        lambda m: (
            str(_DIGIT_WORDS.index(m.group(1).lower()))
            + "."
            + "".join(str(_DIGIT_WORDS.index(w.lower())) for w in m.group(2).split())
        ),
        text,
    )
    text = re.sub(r"(?<=\de)−(?=\d)", "-", text)
    text = _SUPERSCRIPT_POWER.sub(
        lambda m: f"{m.group(1) or '1'}e{m.group(2).translate(_SUPERSCRIPTS)}", text
    )
    return _TIMES_POWER.sub(lambda m: f"{m.group(1) or '1'}e{m.group(2)}", text)


def _how_to_ask(params: dict[str, Any] | None = None) -> str:
    if params is not None:
        keys = ", ".join(params) or "none declared"
        return (
            f"Name one of your workflow's PARAMS ({keys}) or a run setting (learning rate, "
            f"KL penalty, group size, LoRA, temperature, ...) and the value to try, e.g. "
            f"'does lr 1e-4 help my agent?'"
        )
    examples = "; ".join(repr(q) for q in EXAMPLE_QUESTIONS)
    return (
        f"Name one run setting to vary (learning rate, KL penalty, group size, LoRA, "
        f"temperature, task mix, ...), its levels, and a task ({tasks_in_words()}), e.g. "
        f"{examples}"
    )


# what to ask instead about an unshipped benchmark that has an offline procedural relative
_OFFLINE_TWINS = {
    "gsm8k": "reasoning-gym's gsm_symbolic (GSM8K's problems as templates) is its offline "
    "twin: ask about gsm_symbolic",
}

_TRANSFER = re.compile(r"\btransfer\w*|\bgenerali[sz]\w* (?:to|onto)\b")

# difficulty words beside a task: a level the task has is read as its level; one it lacks
# is refused (names its levels), except for a task with one difficulty (said, not refused)
_DIFFICULTY_WORDS = r"tiny|easy|medium|standard|hard"
_LEVEL_SUFFIX = r"(?:[\s-]+(?:level|difficulty|setting|mode|version|category|split))"


def _level_pattern(level: str, info: TaskInfo | None = None) -> str:
    """A level's words: "parallel_multiple" is also "parallel multiple", and the task's
    other words for it ("3-number" for countdown's easy)."""
    words = [re.escape(w) for w in level.split("_")]
    aliases = [words for words, named in (info.level_words if info else ()) if named == level]
    return "|".join([*aliases, r"[\s_-]?".join(words)])


def _level_beside(text: str, start: int, end: int, words: str) -> str | None:
    """The level word (one of `words`, a regex alternation) written beside the task mention
    text[start:end]: before it ("tiny countdown", "the easy level of countdown") or after it
    ("countdown (tiny)", "countdown at level tiny", "countdown at the tiny level", "countdown
    tiny")."""
    before = re.search(
        rf"(?<![\w-])({words}){_LEVEL_SUFFIX}?(?:\s+of)?\s+(?:the\s+)?$", text[:start]
    )
    if before:
        return before.group(1)
    after = text[end:]
    for pattern in (
        rf"^\s*\(\s*(?:level\s+|category\s+)?({words})\s*\)",
        rf"^\s*,?\s*(?:(?:at|on|with|in)\s+)?(?:the\s+|its\s+)?(?:level|difficulty|category)"
        rf"\s*[:=]?\s*[\"']?({words})(?![\w-])",
        rf"^\s*,?\s*(?:at|on|with|in)\s+(?:the\s+|its\s+|an?\s+)?[\"']?({words})[\"']?"
        rf"{_LEVEL_SUFFIX}",
        rf"^\s*,?\s*(?:with|using|of)\s+(?:the\s+)?({words})(?![\w-])",
        rf"^\s*,?\s*at\s+(?:the\s+)?({words})(?![\w-])",  # "chain_sum at medium"
        # straight after: "countdown tiny", "countdown, tiny level", "bfcl's parallel category"
        rf"^(?:'s)?\s*,?\s*[\"']?({words})[\"']?{_LEVEL_SUFFIX}?(?![\w-])",
    ):
        found = re.match(pattern, after)
        if found:
            return found.group(1)
    return None


def _spelled_level(word: str, info: TaskInfo) -> str:
    """The level a matched word spells ("parallel multiple" → parallel_multiple)."""
    for level in info.levels:
        if re.fullmatch(_level_pattern(level, info), word):
            return level
    raise AssertionError(f"{word!r} matched none of {info.levels}")  # the pattern came from them


# "can the model learn X?", "is X learnable?": no setting to compare
_CAN_LEARN = re.compile(
    r"\b(?:can|could|will)\b(?:\s+\S+){0,5}?\s+(?:learn|solve|master)\b|\blearnable\b|"
    r"\bis it possible to (?:learn|train)\b"
)

# training set against no training: "at all", "over the base model", "vs no training"
_TRAINING_AT_ALL = re.compile(
    r"\bat all\b|\b(?:over|than|vs\.?|versus|compared (?:to|with)|against|beyond)\s+(?:the\s+|an?\s+)?"
    r"(?:base|untrained|pretrained|original|initial|starting)\s+(?:model|policy|checkpoint)|"
    r"\b(?:vs\.?|versus|than|over|compared (?:to|with))\s+(?:no|without)\s+(?:rl\s+)?training\b"
)

_TRAINING_WORDS = re.compile(
    r"train|learn|fine[\s-]?tun|\brl\b|reinforcement|reward|polic|gradient|rollout|model|"
    r"experiment|accuracy|hyper[\s-]?param|\bgrpo\b|\bppo\b|\bsteps?\b|agent|checkpoint|epoch|"
    r"dataset|benchmark|\bstudy\b|\brun\b|\bruns\b"
)


# run settings a question may fix for every arm beside its factor ("at lr 1e-5")
# (and any PARAM of the user's workflow; the algorithm and LoRA by a level word: "under RLOO",
# "with LoRA")
_HOLDABLE = ("lr", "kl_coef", "clip_eps", "weight_decay", "max_grad_norm", "group_size",
             "batch_groups", "max_staleness", "temperature", "max_tokens", "lora")  # fmt: skip
_HELD_WORDS = ("algorithm", "lora")
_HELD_BEFORE = re.compile(
    r"\b(?:at|with|using|under|keeping|holding|when|while|and)\s+(?:an?\s+|the\s+)?$"
)
# "at the default temperature": held at the setting's default (the task's own for max_tokens)
_HELD_AT_DEFAULT = re.compile(
    r"\b(?:at|with|using|under|keeping|holding)\s+(?:the|its|our|my)\s+(?:current\s+|usual\s+)?"
    r"default\s+$"
)
AT_DEFAULT = "<default>"  # a held level that is the setting's default, resolved with the task
# a PARAM held at a word: "with tool=search", "with use_hint set to true"
_HELD_WORD_VALUE = re.compile(
    r"\s*(?:is\s+|set\s+to\s+|=\s*|:\s*)([a-z][\w.+-]*)|\s+(?:turned\s+|switched\s+)?(on|off)\b"
)
_HELD_NUMBER_FIRST = re.compile(r"\b(?:at|with|using|under)\s+" + _NUMBER.pattern + r"\s+$")
_HELD_VALUE = re.compile(
    r"\s*(?:is\s+|are\s+|stays\s+)?(?:(?:set|held|fixed|kept)\s+(?:at|to)\s+|of\s+|=\s*|:\s*|at\s+)?"
    + _NUMBER.pattern
)


def _held(text: str, params: dict[str, Any] | None) -> tuple[str, dict[str, Level], list[str]]:
    """`text` without the run settings it fixes for every arm beside another it varies
    ("does group size 8 help at lr 1e-5?": lr 1e-5), those settings, and their words. A
    setting is held only when something else is still named to vary once it is taken out,
    and it is named nowhere else (then it is varied: "lr 1e-4 with group size 8 vs ...")."""
    held: dict[str, Level] = {}
    words: list[str] = []
    # after the verb: "does group size 16 help at lr 1e-5?" holds lr; "does group size 16
    # with lr 1e-5 help?" asks about the two together (refused: one setting at a time)
    verb = re.search(
        rf"\b(?:{GREATER_WORDS}|{LESS_WORDS}|{EQUIVALENT_WORDS}|{TWO_SIDED_WORDS})", text
    )
    for m in reversed(_scan(text, params)):
        if m.key in held:
            continue
        before = _HELD_BEFORE.search(text[: m.start])
        at_default = _HELD_AT_DEFAULT.search(text[: m.start])
        param = m.kind == "param" or (m.kind == "fixed" and m.key.startswith(WORKFLOW_PREFIX))
        found: tuple[int, int, Level] | None = None
        if m.kind == "value" and m.key in _HELD_WORDS and before:  # "under RLOO", "with LoRA"
            found = (before.start(), m.end, m.level)
        elif m.kind in ("factor", "fixed", "param") and (m.key in _HOLDABLE or param):
            value = _HELD_VALUE.match(text, m.end)
            number_first = _HELD_NUMBER_FIRST.search(text[: m.start])  # "with 8 groups/step"
            word = _HELD_WORD_VALUE.match(text, m.end) if param else None
            if at_default:
                found = (at_default.start(), m.end, AT_DEFAULT)
            elif number_first and not number_first.group(2):
                found = (number_first.start(), m.end, float(number_first.group(1)))
            elif before and value and not value.group(2):
                found = (before.start(), value.end(), float(value.group(1)))
            elif before and word:  # "with tool=search", "with the hint on"
                found = (before.start(), word.end(), word.group(1) or word.group(2))
        if found is None:
            continue
        start, end, level = found
        # a clause before the verb holds only when set apart: "at lr 5e-5, does kl help?"
        if (verb is None or start < verb.end()) and not re.match(r"\s*,", text[end:]):
            continue
        blanked = text[:start] + " " * (end - start) + text[end:]
        if not _still_varies(blanked, params, m.key):
            continue
        held[m.key] = float(f"{level:.12g}") if isinstance(level, float) else level
        words.append(text[start:end].strip())
        text = blanked
    return text, held, words


def _still_varies(text: str, params: dict[str, Any] | None, held: str) -> bool:
    """Whether `text` still names a setting to vary other than `held` (and names `held` no
    more): a setting or PARAM by name, two levels of one ("RLOO beat GRPO"), or one level
    off its default ("LoRA"); the default alone ("is GRPO better with a KL of 0.1?") is the
    training it names, not a factor."""
    mentions = [m for m in _scan(text, params) if m.kind in ("factor", "value", "param")]
    if any(m.key == held for m in mentions):
        return False
    levels: dict[str, set[str]] = {}
    for m in mentions:
        if m.kind == "value":
            levels.setdefault(m.key, set()).add(json.dumps(m.level, sort_keys=True, default=str))
    return any(
        m.key != "max_steps"
        and (
            m.kind != "value"
            or len(levels[m.key]) >= 2
            or (m.key in FACTORS and m.level != FACTORS[m.key].default)  # "LoRA": r=16
        )
        for m in mentions
    )


# settings' plain names a misspelling is matched against ("learnign rate", "grop size")
_SPELLED_SETTINGS = ("learning rate", "group size", "batch size", "weight decay", "kl penalty",
                     "kl coefficient", "clip range", "max tokens", "lora rank", "temperature",
                     "staleness")  # fmt: skip


def _spelling_fixed(question: str, params: dict[str, Any] | None) -> tuple[str, str | None]:
    """`question` with a misspelt setting's name spelled right, when it names no setting
    otherwise ("does grop size 8 help?"), and the words as written; one or two words, close
    enough that no other word passes for one, and never a task's name."""
    lower = question.lower()
    if any(m.kind in ("factor", "value", "param") for m in _scan(lower, params)):
        return question, None
    words = list(re.finditer(r"[a-z][a-z_]{3,}", lower))
    spans = [(a.start(), b.end()) for a, b in itertools.pairwise(words)]
    spans += [(w.start(), w.end()) for w in words]
    tasks = [name.replace("_", " ") for name in TASKS]
    for start, end in spans:
        written = lower[start:end]
        close = difflib.get_close_matches(written, _SPELLED_SETTINGS, n=1, cutoff=0.86)
        if (
            close
            and close[0] != written
            and not difflib.get_close_matches(written.replace("_", " "), tasks, cutoff=0.86)
        ):
            return question[:start] + close[0] + question[end:], written
    return question, None


def _near_task(text: str) -> tuple[str, str] | None:
    """(task, the words) of a misspelt shipped task's name in `text` ("chan_sum",
    "letter countin"): one word or two, close enough that no common word passes for one."""
    words = re.findall(r"[a-z][a-z_]{3,}", text)
    candidates = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    names = {name.replace("_", " "): name for name in TASKS}
    for written in candidates:
        close = difflib.get_close_matches(written.replace("_", " "), names, n=1, cutoff=0.86)
        if close:
            return names[close[0]], written
    return None


class _Reader:
    def __init__(self, question: str, served: list[str], params: dict[str, Any] | None) -> None:
        question, misspelt = _spelling_fixed(question, params)
        self.question = question
        self.served = served
        self.params = params
        self.text, self.held, held_words = _held(question.lower(), params)
        self.mentions = _scan(self.text, params)
        self.masked = _masked(self.text, self.mentions)
        self.assumptions: list[str] = [
            f"{words!r}: {key} "
            + (
                "at its default"
                if self.held[key] == AT_DEFAULT
                else describe_level(key, self.held[key])
            )
            + " for every arm (held, not varied)"
            for key, words in zip(self.held, held_words, strict=True)
        ]
        if misspelt:
            self.assumptions.append(f"{misspelt!r} read as a misspelt setting's name")
        self.steps: int | None = None
        self.direction: str | None = None
        self.taken_away = False  # the treatment is the factor off, the control it on

    def _of(self, kind: str, key: str | None = None) -> list[Mention]:
        return [m for m in self.mentions if m.kind == kind and (key is None or m.key == key)]

    def _unreadable(self, why: str) -> UnreadableQuestion:
        how = _how_to_ask(self.params)
        return UnreadableQuestion(f"cannot read {self.question!r}: {why}. {how}")

    def read(self) -> Reading:
        for m in self._of("unshipped"):
            if self.params is None:
                twin = _OFFLINE_TWINS.get(m.key)
                raise self._unreadable(
                    f"{m.key!r} is not a task this planner ships (it ships "
                    f"{tasks_in_words()}); "
                    + (f"{twin}; " if twin else "")
                    + "study your own agent on it with --workflow FILE"
                )
        for m in self._of("unsupported"):
            named = self.text[m.start : m.end]
            raise self._unreadable(
                f"{named!r} is not a setting a study can vary here; it varies "
                f"{', '.join(FACTORS)} (or your workflow's PARAMS with --workflow FILE)"
            )
        factor = self._factor()
        if factor == "batch_groups" and re.search(r"\bbatch(?:es)?\b(?! of \d+ groups)", self.text):
            self.assumptions.append(
                "batch size read as groups per step (batch_groups): each group is one prompt "
                "sampled group_size times, so a step trains on batch_groups x group_size episodes"
            )
        if factor == "clip_eps" and re.search(r"clip[- ]higher", self.text):
            self.assumptions.append(
                "clip-higher (DAPO) raises only the upper clip bound; clip_eps here clips both "
                "sides, so the levels apply to both"
            )
        if factor == "task_mix" and _TRANSFER.search(self.masked):
            raise self._unreadable(
                "it asks whether training on one task transfers to another; that compares a "
                "policy trained only on one task with the untrained model on the other, and "
                "this planner designs comparisons between trained arms only (every study "
                "reports the untrained baseline beside them). Ask about a task mix instead "
                "('does mixing chain_sum into basic_arithmetic training help on "
                "basic_arithmetic?'), or study it with --workflow FILE"
            )
        task, tasks = self._task(factor)
        task_levels = self._task_levels(task, tasks)
        outcome, threshold = self._outcome(factor)
        direction, margin = self._direction(outcome, factor)
        self.direction = direction
        levels, control = self._levels(factor, task, tasks)
        if self.taken_away and self._asks_if_needed() and len(levels) == 2:
            # "is a KL penalty necessary?": does taking it away hurt? (on is the control)
            direction = "less"
            stale = "no direction named: a two-sided test (any difference)"
            self.assumptions = [a for a in self.assumptions if a != stale]
            self.assumptions.append(
                "'necessary' read as: does taking it away lower the outcome (one-sided, less)"
            )
        if len(distinct_levels(levels)) < 2:
            shown = ", ".join(describe_level(factor, level) for level in levels)
            raise self._unreadable(
                f"{factor} needs two different levels to compare (read: {shown})"
            )
        if factor == "task_mix":
            tasks = list(dict.fromkeys([task, *(t for level in levels for t in level)]))
        if factor == "scale_rewards" and re.search(r"\bdr\.? ?grpo\b", self.text):
            self.assumptions.append(
                "Dr. GRPO read as its advantage (no division by the group's std: "
                "scale_rewards none); its other change, a loss not normalised by sequence "
                "length, is not a run setting here and stays as in GRPO"
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
            steps=self.steps,
            threshold=threshold,
            min_effect=self._min_effect(outcome, threshold),
            held=self._checked_held(factor, task),
            task_levels=task_levels,
            assumptions=self.assumptions,
        )
        try:
            reading = check_reading(reading, served_models=self.served, workflow_params=self.params)
        except ResearcherError as error:
            raise self._unreadable(str(error)) from None
        return reading.model_copy(update={"summary": summarise(reading)})

    def _checked_held(self, factor: str, task: str) -> dict[str, Level]:
        """The held settings as their factors' (or PARAMS') types, each within its bounds;
        one held at its default ("at the default temperature") as that default."""
        held: dict[str, Level] = {}
        for key, value in self.held.items():
            if key.startswith(WORKFLOW_PREFIX):
                if key != factor:
                    held[key] = self._held_param(key, value)
                continue
            spec = FACTORS[key]
            if value == AT_DEFAULT:
                value = spec.default_for(task)
                if key != factor and value is not None:
                    held[key] = value
                continue
            if not isinstance(value, float):  # a level word ("under RLOO", "with LoRA")
                if key != factor:
                    held[key] = value
                continue
            if not spec.in_bounds(value):
                raise self._unreadable(f"{key} {value:g} is out of bounds ({spec.bounds_text()})")
            typed = _typed(spec, value)
            if spec.kind in ("int", "lora") and not isinstance(typed, int):
                raise self._unreadable(f"{key} {value:g} is not a whole number")
            if key != factor:
                held[key] = typed
        return held

    def _held_param(self, key: str, value: Level) -> Level:
        """A PARAM held for every arm as the type of its default: "with few_shot 3" (an
        int), "with use_hint=true" (a flag), "with tool=search" (a word)."""
        assert self.params is not None
        name = key[len(WORKFLOW_PREFIX) :]
        default = self.params[name]
        if value == AT_DEFAULT:
            return default
        flags = {"true": True, "on": True, "yes": True, "false": False, "off": False, "no": False}
        if isinstance(default, bool) and (str(value).lower() in flags or value in (0.0, 1.0)):
            return flags[value] if isinstance(value, str) else bool(value)
        if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, float):
            if value.is_integer():
                return int(value)
        elif isinstance(default, float) and isinstance(value, float):
            return value
        elif (default is None or isinstance(default, str)) and isinstance(value, str):
            return value
        written = f"{value:g}" if isinstance(value, float) else repr(value)
        kind = _KIND_WORDS.get(type(default))
        if kind is None:
            raise self._unreadable(
                f"it holds your workflow's {name} for every arm, but {name} is a "
                f"{type(default).__name__}: the template reader holds and varies numbers, "
                "flags and text only; leave it at its default"
            )
        raise self._unreadable(
            f"it holds your workflow's {name} at {written} for every arm, but {name} is "
            f"{kind} (default {default!r}): no arm can set it to that. Hold it at a value of "
            f"its type ('with {name}={_example_value(default)}')"
        )

    def _inside_range(self, spec: Factor, levels: list[Level]) -> Level | None:
        """The middle of a range the question asks the best value within ("what lr works
        best between 1e-5 and 1e-4?"): geometric across a factor of 4 or more, else halfway."""
        if len(levels) != 2 or not all(isinstance(v, int | float) for v in levels):
            return None
        if not (_BEST.search(self.masked) and re.search(r"\bbetween\b", self.text)):
            return None
        low, high = sorted(float(v) for v in levels)
        middle = (low * high) ** 0.5 if low > 0 and high / low >= 4 else (low + high) / 2
        middle = _typed(spec, float(f"{middle:.1g}") if spec.name == "lr" else middle)
        if middle in levels or (spec.kind == "int" and not isinstance(middle, int)):
            return None
        self.assumptions.append(
            f"the best {spec.name} within a range: a sweep over {low:g}, {middle:g} and {high:g}"
        )
        return middle

    def _asks_if_needed(self) -> bool:
        """Whether the question asks if a setting is needed ("is a KL penalty necessary?",
        "does my agent need the hint?"): the setting on is the control, off the treatment."""
        return bool(_NEEDED.search(self.masked)) and self.direction == "two_sided"

    def _min_effect(self, outcome: str, threshold: float | None) -> float | None:
        """The smallest difference the question names ("by at least 5 points"), as a
        fraction; None when it names none, or when the outcome is counted in steps."""
        effects = self._of("aside", "effect") + self._of("aside", "effect_abs")
        if not effects and self.direction != "equivalent":
            # "does lr 1e-4 vs 2e-5 matter, margin 2 points?": no equivalence test, so the
            # margin named is the smallest difference that counts
            effects = self._of("aside", "margin") + self._of("aside", "margin_abs")
            effects = [m for m in effects if not self.text[m.start : m.end].startswith("within")]
        if not effects:
            return None
        effect = min(effects, key=lambda m: m.start)
        named = self.text[effect.start : effect.end]
        if outcome == "learning_speed" and threshold is not None:
            self.assumptions.append(
                f"{named!r} is not read: learning speed here is counted in steps to the "
                "threshold (the smallest difference that counts is a tenth of the steps)"
            )
            return None
        number = next(g for g in effect.groups if g is not None)
        absolute = effect.key in ("effect_abs", "margin_abs")
        value = float(number) if absolute else float(number) / 100
        unit = "of the control's cost" if outcome == "cost" else "absolute, not relative"
        self.assumptions.append(
            f"{named!r} is the smallest difference that counts: {value:g} ({unit}), not a level"
        )
        return value

    # -- the factor ---------------------------------------------------------------------------

    def _factor(self) -> str:
        tasks = self._of("task")
        if tasks and self.params is None and _TRAINING_AT_ALL.search(self.text):
            # "does GRPO help letter counting at all?", "… over the base model?": trained
            # against untrained, which every study's control answers — not GRPO vs RLOO
            algorithms = {m.level for m in self._of("value") if m.key == "algorithm"}
            others = [m for m in self.mentions if m.kind in ("param", "factor")
                      and m.key not in ("base_model", "algorithm")]  # fmt: skip
            if len(algorithms) <= 1 and not others and len(self._of("model")) < 2:
                raise self._unreadable(self._can_it_learn(tasks[0]))
        named = [m.key for m in self.mentions if m.kind in ("param", "factor")]
        named = list(dict.fromkeys(k for k in named if k != "max_steps"))
        if not named:
            named = list(dict.fromkeys(m.key for m in self._of("value")))
        else:  # two levels of another setting set against each other vary it too
            levels: dict[str, set] = {}
            for m in self._of("value"):
                levels.setdefault(m.key, set()).add(json.dumps(m.level, sort_keys=True))
            named += [key for key, seen in levels.items() if len(seen) >= 2 and key not in named]
        # "can the model learn X (in 30 steps)?": no two settings, whatever steps it names
        if not named and self._of("task") and self.params is None:
            if _CAN_LEARN.search(self.masked):
                raise self._unreadable(self._can_it_learn(self._of("task")[0]))
        models = self._of("model")
        if not named and len(models) >= 2:
            named = ["base_model"]
        algorithms = [m for m in self.mentions if m.key == "algorithm"]
        if named == ["algorithm"] and len(models) >= 2 and len(algorithms) == 1:
            # "does Qwen benefit more from GRPO than SmolLM2?": one algorithm named beside
            # two models is the training both get, not a setting to vary
            self.assumptions.append(
                f"{self.text[algorithms[0].start : algorithms[0].end]!r} beside two models is "
                "the training each gets: the models are compared by held-out accuracy after "
                "it (not by their gains: the report gives each model's untrained baseline "
                "beside it)"
            )
            named = ["base_model"]
        if not named and (self._of("factor", "max_steps") or self._of("aside", "steps_n")):
            named = ["max_steps"]
        if not named and re.search(r"(?<![\w.])\d+(?:\.\d+)?e-\d+\b", self.masked):
            self.assumptions.append("no setting named: numbers like 1e-4 read as learning rates")
            named = ["lr"]
        if not named and len({m.key for m in self._of("task")}) >= 2 and self.params is None:
            if _TASK_CONTEST.search(self.masked) and not _MIXING_WORDS.search(self.masked):
                tasks = [m.key for m in self._of("task")]
                raise self._unreadable(
                    f"it compares the tasks {' and '.join(dict.fromkeys(tasks))} themselves: "
                    "their accuracies are on different items, so no run setting separates "
                    "them. Ask one question per task (does training help on each, against "
                    "its untrained baseline), or ask whether mixing them helps one "
                    f"('does adding {tasks[1]} help on {tasks[0]}?')"
                )
            self.assumptions.append(
                "two tasks and no run setting named: read as a question about the task mix"
            )
            named = ["task_mix"]
        if len(named) > 1:
            raise self._unreadable(
                f"it names {len(named)} settings ({', '.join(named)}); a study varies one at "
                f"a time — ask about one, or say the other is held fixed ('at the same "
                f"{named[1]}')"
            )
        if named:
            return named[0]
        about_training = bool(_TRAINING_WORDS.search(self.text) or self._of("fixed"))
        if self._of("task") or (self.params is not None and about_training):
            where = (
                "your workflow"
                if self.params is not None
                else " and ".join(dict.fromkeys(m.key for m in self._of("task")))
            )
            declared = (
                f" (your workflow's PARAMS: {', '.join(self.params) or 'none'})"
                if self.params is not None
                else ""
            )
            raise self._unreadable(
                f"no run setting named: it names {where} but not what to vary{declared}"
            )
        if about_training:
            raise self._unreadable("no run setting or task named")
        raise NotAboutTraining(
            f"{self.question!r} is not a question about training a model: the researcher "
            f"answers questions about RL training by running experiments. "
            f"{_how_to_ask(self.params)}"
        )

    def _can_it_learn(self, mention: Mention) -> str:
        """Whether a model can learn a task is no comparison of two settings: every study
        answers it for its control (the pilot, against the untrained baseline), and the
        bench measured it for the bundled model."""
        info = task_info(mention.key)
        level = _level_beside(
            self.text, mention.start, mention.end,
            "|".join(_level_pattern(level, info) for level in info.levels),
        ) if info and info.levels else None  # fmt: skip
        level = _spelled_level(level, info) if level else (info.default_level if info else None)
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

    # -- the task -----------------------------------------------------------------------------

    def _task(self, factor: str) -> tuple[str, list[str]]:
        if self.params is not None:
            if self._of("task"):
                self.assumptions.append(
                    "the tasks the question names are read as your workflow's own tasks"
                )
            return WORKFLOW_TASK, [WORKFLOW_TASK]
        named = self._of("task")
        partners = {m.key for m in named if factor == "task_mix" and self._mixed_in(m)}
        ranked = sorted(
            (-self._judged_strength(m), order, m.key)
            for order, m in enumerate(named)
            if m.key not in partners
        )
        families = list(dict.fromkeys(m.key for m in named))
        judged = [key for _, _, key in ranked]
        if judged:
            task = judged[0]
        elif factor == "max_turns":
            task = "guess_number"
            self.assumptions.append("max_turns is the guessing game's setting: task guess_number")
        elif factor == "task_mix" and not partners:
            task = MIX_DEFAULT_TASK
            self.assumptions.append(
                f"no task named to judge on: {task} (a mixing question with no task named is "
                "studied on two tasks the bundled model learns, bench/learnability.py)"
            )
        elif (near := _near_task(self.masked)) is not None:
            task, written = near
            self.assumptions.append(
                f"{written!r} read as the task {task} (the shipped task closest to it)"
            )
        else:
            task = DEFAULT_TASK if DEFAULT_TASK not in partners else "calculator"
            self.assumptions.append(f"no task named to judge on: {task} (the default task)")
        return task, list(dict.fromkeys([task, *families]))

    def _task_levels(self, task: str, tasks: list[str]) -> dict[str, str]:
        """The difficulty level named beside each task that has levels ("tiny countdown",
        "countdown at level easy", "parallel function calling"); the judged task's default
        is said when none is named. Two levels of one task, or one it lacks, are refused."""
        if self.params is not None:
            return {}
        found: dict[str, str] = {}
        for m in self._of("task"):
            info = task_info(m.key)
            if info is None:
                continue
            longest_first = sorted(info.levels, key=len, reverse=True)
            own = "|".join(_level_pattern(level, info) for level in longest_first)
            word = _level_beside(self.text, m.start, m.end, own) if own else None
            if word is not None:
                level = _spelled_level(word, info)
            else:
                other = _level_beside(self.text, m.start, m.end, _DIFFICULTY_WORDS)
                if other is None:
                    continue
                if not info.levels:
                    self.assumptions.append(
                        f"{m.key} is served at one difficulty here: {other!r} changes nothing"
                    )
                    continue
                raise self._unreadable(
                    f"{m.key} has no {info.level_knob} {other!r}; its {info.level_knob}s are "
                    f"{', '.join(info.levels)}, easiest first (default {info.default_level})"
                )
            if found.get(m.key, level) != level:
                raise self._unreadable(
                    f"it names two {info.level_knob}s of {m.key} ({found[m.key]} and {level}); "
                    f"a study trains and judges a task at one {info.level_knob}: comparing "
                    "levels is no run setting. Ask about one"
                )
            found[m.key] = level
        for family in tasks:
            info = task_info(family)
            if info is None or not info.levels:
                continue
            if family in found:
                self.assumptions.append(f"{family} at {info.level_knob} {found[family]} (as named)")
            elif family == task:
                others = ", ".join(level for level in info.levels if level != info.default_level)
                self.assumptions.append(
                    f"{family} at its default {info.level_knob}, {info.default_level} (name "
                    f"another to choose it: {others})"
                )
        return found

    def _mixed_in(self, mention: Mention) -> bool:
        """Whether a task is what is mixed in ("mixing in X", "adding X", "mixing X into")."""
        before = self.text[: mention.start]
        after = self.text[mention.end :]
        lead = r"(?:the\s+|some\s+|a\s+bit\s+of\s+|\d+%\s+(?:of\s+)?)?$"
        return bool(
            re.search(
                rf"\b(?:mix\w*\s+in|add\w*|includ\w*|throw\w*\s+in|(?:train\w*|together) with|"
                rf"alongside)\s+{lead}",
                before,
            )
            or (
                re.search(rf"\bmix\w*\s+{lead}", before)
                and re.match(r"\s*(?:tasks?\s+)?(?:into|in with|with)\b", after)
            )
        )

    def _judged_strength(self, mention: Mention) -> int:
        before = self.masked[: mention.start]
        after = self.masked[mention.end :]
        if re.search(
            r"\b(?:held[\s-]?out|test|into|onto)\s+(?:the\s+)?(?:held[\s-]?out\s+)?$", before
        ):
            return 3
        if re.search(
            r"\b(?:train\w*|mix\w*|add\w*)\s+(?:only\s+)?(?:on|in|with)\s+(?:the\s+)?$", before
        ):
            return 0
        if re.search(r"\b(?:mix\w*|blend\w*|combination|ratio|split)\s+of\s+(?:the\s+)?$", before):
            return 1  # "a 50/50 mix of A and B": A is no more judged than B
        verb = r"help\w*|hurt\w*|improv\w*|boost\w*|harm\w*|degrad\w*|benefit\w*"
        if re.search(rf"\b(?:on|for|at|in|of|{verb})\s+(?:the\s+)?$", before) or re.match(
            r"\s*(?:accuracy|performance|scores?|results?)\b", after
        ):
            return 2
        return 1

    # -- the outcome and the direction --------------------------------------------------------

    def _outcome(self, factor: str) -> tuple[str, float | None]:
        within = self._of("aside", "within_steps")
        if within:
            self.steps = int(within[0].groups[0])
        for m in self._of("aside", "steps_n"):
            if factor != "max_steps" and self.steps is None:
                self.steps = int(m.groups[0])
        outcome = "heldout_accuracy"
        measured = _AT_EQUAL_COST.sub(" ", self.masked)
        for name, words in OUTCOME_WORDS:
            if re.search(rf"\b(?:{words})", measured):
                outcome = name
                break
        how_many = re.search(r"how (?:many|much) (?:training )?steps|steps to ", self.text)
        if how_many and factor != "max_steps" and outcome == "heldout_accuracy":
            outcome = "learning_speed"
        if factor == "max_steps" and outcome == "learning_speed" and how_many:
            outcome = "heldout_accuracy"  # the steps are the factor: accuracy after each
        if within and outcome == "heldout_accuracy":
            outcome = "learning_speed"
        fewer = _FEWER_STEPS.search(self.text)
        if fewer and factor != "max_steps" and outcome == "heldout_accuracy":
            outcome = "learning_speed"  # "learns chain_sum in fewer steps"
        reach = self._of("aside", "threshold")
        if reach and (
            fewer
            or re.search(r"\b(?:sooner|faster|quicker|first|earlier)\b", self.masked)
            or re.search(r"\bhow (?:fast|quickly|soon|long)\b", self.text)
            or _TIME_TO_REACH.search(self.text)
        ):
            # "reach a training reward of 0.9 sooner", "the training time needed to hit 0.7"
            outcome = "learning_speed"
        threshold = None
        if outcome == "learning_speed":
            if reach:
                value, percent = reach[0].groups
                threshold = float(value) / (100 if percent or float(value) > 1 else 1)
            elif how_many and factor != "max_steps":
                threshold = DEFAULT_THRESHOLD
                self.assumptions.append(
                    f"learning speed as the steps to reach a training reward of "
                    f"{DEFAULT_THRESHOLD} (none named)"
                )
            else:
                self.assumptions.append(
                    "learning speed as the area under the training-reward curve"
                    + (f" over the first {self.steps} steps" if self.steps else "")
                )
        elif outcome == "heldout_accuracy":
            unmeasured = _UNMEASURED.search(self.masked)
            pass_at = self._of("aside", "pass_at_k")
            if pass_at and int(pass_at[0].groups[0]) == 1:
                self.assumptions.append(
                    "pass@1 read as held-out accuracy (one greedy answer per held-out task)"
                )
            elif pass_at:
                self.assumptions.append(
                    f"pass@{pass_at[0].groups[0]} is not measured (each held-out task gets one "
                    "greedy answer): judged by held-out accuracy, i.e. pass@1"
                )
            elif unmeasured:
                self.assumptions.append(
                    f"{unmeasured.group(0)!r} is no outcome this researcher measures (it "
                    "measures held-out accuracy, learning speed, final training reward and "
                    "cost): judged by held-out accuracy; the report's per-seed curves show "
                    "how the runs behaved"
                )
            elif self.params is not None:
                self.assumptions.append(
                    "judged by the held-out mean reward of your workflow's tasks('test') (no "
                    "other outcome named)"
                )
            else:
                self.assumptions.append("judged by held-out accuracy (no other outcome named)")
        return outcome, threshold

    def _direction(self, outcome: str, factor: str) -> tuple[str, float | None]:
        text = self.masked
        if factor == "max_steps" and re.search(r"how (?:many|much|long)", text):
            self.assumptions.append("direction: more steps raise held-out accuracy (greater)")
            return "greater", None
        margins = self._of("aside", "margin")
        absolute = self._of("aside", "margin_abs")
        # "within 1 point of GRPO": a margin named with "within" is an equivalence question
        within = any(self.text[m.start : m.end].startswith("within") for m in margins + absolute)
        if re.search(rf"\b(?:{EQUIVALENT_WORDS})\b", text) or within:
            if margins:
                margin = float(margins[0].groups[0]) / 100
            elif absolute:
                margin = float(absolute[0].groups[0])
            else:
                margin = COST_MARGIN if outcome == "cost" else DEFAULT_MARGIN
                unit = "of the control's cost" if outcome == "cost" else "(absolute)"
                self.assumptions.append(f"equivalence margin {margin:g} {unit}: none named")
            return "equivalent", margin
        # a verb that moves the factor is no direction: "does cutting the lr in half help?"
        text = re.sub(_MOVES_FACTOR, " ", text)
        undirected = None  # a direction word about an outcome no study measures
        if outcome == "heldout_accuracy":
            text, undirected = _without_unmeasured_direction(text)
        to_reach = _TIME_TO_REACH.search(self.text) if outcome == "learning_speed" else None
        if to_reach and to_reach.group(1):
            # "reduce the time needed to hit 0.7": fewer steps to it is faster (greater)
            faster = not re.match(r"increas|rais|lengthen|doubl|more|longer", to_reach.group(1))
            return ("greater" if faster else "less"), None
        greater = re.search(rf"\b(?:{GREATER_WORDS})", text)
        if outcome == "learning_speed" and not greater:
            # fewer steps to learn is faster; "reach 0.9 earlier"
            greater = _FEWER_STEPS.search(self.text) or re.search(r"\bearlier\b", text)
        less = re.search(rf"\b(?:{LESS_WORDS})", text)
        if outcome == "cost":  # costing less is the improvement: "faster" is less wall time
            greater, less = (
                re.search(
                    r"\b(?:more expensive|costl\w*|costs? more|slower|more tokens|"
                    r"slow(?:s|ed|ing)? (?:\w+ )?down)",
                    text,
                ),
                re.search(
                    r"\b(?:cheap\w*|cuts?|cutting|sav\w*|reduc\w*|faster|quicker|fewer|less|lower)",
                    text,
                )
                or (greater if not re.search(r"\bslow", text) else None),
            )
        if (greater and less) or (
            (greater or less) and re.search(r"\bwhich\b|\bor\b", text)
        ):  # "help or hurt", "RLOO or GRPO: which learns faster?"
            return "two_sided", None
        if greater:
            return "greater", None
        if less:
            return "less", None
        if undirected:
            self.assumptions.append(
                f"the direction named ({undirected!r}) is about an outcome not measured here, "
                "not held-out accuracy: a two-sided test"
            )
        elif not re.search(rf"\b(?:{TWO_SIDED_WORDS})", text):
            self.assumptions.append("no direction named: a two-sided test (any difference)")
        return "two_sided", None

    # -- the levels ---------------------------------------------------------------------------

    def _levels(self, factor: str, task: str, tasks: list[str]) -> tuple[list[Level], Level]:
        if factor.startswith(WORKFLOW_PREFIX):
            return self._param_levels(factor[len(WORKFLOW_PREFIX) :])
        spec = FACTORS[factor]
        if spec.kind == "task_mix":
            return self._mix_levels(task, tasks)
        if spec.kind == "base_model":
            return self._model_levels()
        own = [m for m in self.mentions if m.key == factor and m.kind in ("factor", "value")]
        named: list[tuple[int, Level]] = []
        if spec.kind in ("real", "int", "lora"):
            for position, value, percent in _numbers(self.text, self.mentions):
                if percent and spec.kind == "real":  # "a KL penalty of 5%" is 0.05
                    self.assumptions.append(f"{value:g}% read as {value / 100:g}")
                    value = value / 100
                named.append((position, value))
            if not named and spec.kind != "real":
                named = _word_numbers(self.text, self.mentions)
            if factor == "max_steps":
                named += [(m.start, float(m.groups[0])) for m in self._of("aside", "steps_n")]
        values = [(m.start, m.level) for m in own if m.kind == "value"]
        values += [(m.start, spec.default_for(task)) for m in own if _named_default(self.text, m)]
        if spec.kind == "lora" and named:
            values = [(p, v) for p, v in values if v == "full"]  # "LoRA r=8": the rank is 8
        named = sorted(named + values, key=lambda pair: pair[0])
        if factor == "algorithm" and re.search(r"\bppo\b", self.text):
            self.assumptions.append(
                "every algorithm here trains with the PPO-clip loss and differs in its "
                "advantage estimator: PPO is read as RLOO (critic-free PPO-style baselines)"
            )
        named = [(p, _typed(spec, v)) for p, v in named]
        levels = distinct_levels([v for _, v in named])
        written = len(levels)
        default = spec.default_for(task)
        way = _comparative(self.text, own)
        multiplier = _lowered(_multiplier(self.text, self.mentions), way)
        if default is None and factor != "max_turns" and len(levels) < 2:
            raise self._unreadable(
                f"{factor} has no default here (your workflow sets its own): name both levels "
                f"to compare, e.g. '{factor} 64 vs 256'"
            )
        if len(levels) >= 2:
            positions = [next(p for p, v in named if v == level) for level in levels]
            if (middle := self._inside_range(spec, levels)) is not None:
                # "the best lr between 1e-5 and 1e-4": a sweep across the range
                levels, positions = (
                    [levels[0], middle, levels[1]],
                    [*positions[:1], -1, *positions[1:]],
                )
            control = self._control(factor, levels, positions, default, way)
        elif len(levels) == 1 and multiplier and isinstance(levels[0], int | float):
            control = levels[0]
            levels = [control, _typed(spec, control * multiplier)]
            self.assumptions.append(f"{describe_level(factor, control)} is the control")
        elif (
            len(levels) == 1
            and factor == "max_tokens"
            and isinstance(default, int)
            and levels[0] > default
            and way != "raise"
            and (way == "lower" or _LIMITS.search(self.text) or _CUTS.search(self.text))
        ):
            # "cut max tokens to 64" where the task's default is 32: against the default it
            # would be a raise; the cut the question means is from above, 2 x 64
            control = _typed(spec, levels[0] * 2)
            levels = [control, levels[0]]
            self.assumptions.append(
                f"{describe_level(factor, levels[1])} named as a cut, but {task}'s default is "
                f"{describe_level(factor, default)}, below it: compared against "
                f"{describe_level(factor, control)} (control) so that the named value is the cut"
            )
        elif len(levels) == 1 and levels[0] != default:
            control = default
            levels = [default, levels[0]]
            self.assumptions.append(
                f"only {describe_level(factor, levels[1])} named: the default "
                f"{describe_level(factor, default)} is the control"
            )
        elif (
            len(levels) == 1
            and levels[0] == default
            and isinstance(default, int | float)
            and (way or _LIMITS.search(self.text))
            and (moved := self._moved_from_default(spec, default, way)) is not None
        ):
            # "limiting responses to 32 tokens" where 32 is the default: the named value is
            # the treatment, reached by lowering (or raising) from the other side
            control = moved
            levels = [control, default]
            self.assumptions.append(
                f"only {describe_level(factor, default)} named, the default, as the level moved "
                f"to: compared against {describe_level(factor, control)} (control)"
            )
        elif len(levels) == 1 and spec.kind in ("choice", "lora") and not way:
            control = spec.alternative if levels[0] == default else default
            self.assumptions.append(
                f"only {describe_level(factor, levels[0])} named, the default: compared "
                f"against {describe_level(factor, control)}"
            )
            levels = [control, levels[0]]
        else:
            control, levels = self._unnamed_levels(spec, default, way, multiplier)
        if factor == "max_grad_norm" and written < 1 and _removes(self.text, own):
            # no clipping: a norm no gradient reaches (the bound of POST /runs)
            control, levels = default, [default, _typed(spec, spec.high or 1e6)]
            if self.assumptions and self.assumptions[-1].startswith(f"no {factor} level named"):
                self.assumptions.pop()  # the level tried without one named: replaced here
            self.assumptions.append(
                f"gradient clipping taken away: max_grad_norm {default:g} (control) vs "
                f"{levels[1]:g}, which no gradient norm reaches"
            )
        elif (
            written < 2
            and len(levels) == 2
            and control == default
            and (default == 0 or (spec.kind == "lora" and default == "full"))
            and (_removes(self.text, own) or self._asks_if_needed())
        ):
            # the question's treatment is the factor taken away (the default, off): the
            # control is the factor on, so "does removing X hurt?" asks off < on; the
            # assumption just made about the default as control is replaced
            control = next(level for level in levels if level != default)
            self.taken_away = True
            self.assumptions[-1] = (
                f"{factor} taken away: {describe_level(factor, control)} (control) vs "
                f"{describe_level(factor, default)} (without it)"
            )
        return [control, *(level for level in levels if level != control)], control

    def _control(
        self,
        factor: str,
        levels: list[Level],
        positions: list[int],
        default: Level,
        way: str | None,
    ) -> Level:
        numeric = [v for v in levels if isinstance(v, int | float) or v is None]
        if way and len(numeric) == len(levels):
            pick = min if way == "raise" else max
            control = pick(levels, key=_sort_key)
            size = "smaller" if way == "raise" else "larger"
            asked = "larger" if way == "raise" else "smaller"
            self.assumptions.append(
                f"control {describe_level(factor, control)}: the {size} level, as the question "
                f"asks about a {asked} {factor}"
            )
            return control
        contrasted = _contrasted(self.text, positions)
        if contrasted is not None:
            control = levels[contrasted]
            self.assumptions.append(
                f"control {describe_level(factor, control)}: the level the question compares against"
            )
            return control
        if any(level == default for level in levels):
            self.assumptions.append(
                f"control {describe_level(factor, default)}: the default {factor}"
            )
            return default
        if (
            len(levels) == 2
            and self.direction in ("greater", "less")
            and _BARE_VERSUS.fullmatch(self.text[positions[0] : positions[1]])
        ):
            # "does 256 vs 128 help?" asks whether 256 helps: the level after "vs" is the control
            control = levels[1]
            self.assumptions.append(
                f"control {describe_level(factor, control)}: the level after 'vs' (the question "
                f"asks what {describe_level(factor, levels[0])} does against it)"
            )
            return control
        if len(levels) >= 3 and len(numeric) == len(levels):
            control = min(levels, key=_sort_key)
            self.assumptions.append(
                f"control {describe_level(factor, control)}: the smallest of a dose-response"
            )
            return control
        self.assumptions.append(f"control {describe_level(factor, levels[0])}: the first named")
        return levels[0]

    def _moved_from_default(self, spec: Factor, default: Level, way: str | None) -> Level | None:
        """The level a question moves away from when the value it names is the default:
        above it for a limit or "lower"/"shorter", below it for "raise"/"larger"."""
        raised, lowered = spec.raised, spec.lowered
        if spec.name == "max_tokens" and isinstance(default, int):
            raised, lowered = default * 2, max(1, default // 2)
        other = lowered if way == "raise" else raised
        return None if other is None or other == default else _typed(spec, other)

    def _unnamed_levels(
        self, spec: Factor, default: Level, way: str | None, multiplier: float | None
    ) -> tuple[Level, list[Level]]:
        factor = spec.name
        raised, lowered, alternative = spec.raised, spec.lowered, spec.alternative
        if factor == "max_tokens" and isinstance(default, int):
            raised, lowered, alternative = default * 2, max(1, default // 2), default * 2
        if factor == "lora" and (way or multiplier):
            default = 16  # "a larger LoRA rank": ranks around the usual r=16
        if factor == "max_steps" and re.search(r"how (?:many|much|long)", self.text):
            self.assumptions.append(
                f"how many steps it needs: held-out accuracy after {', '.join(map(str, STEPS_DOSE))} "
                f"steps (a dose-response; the control is the shortest)"
            )
            return STEPS_DOSE[0], list(STEPS_DOSE)
        if (
            default is None
            and factor != "max_turns"
            or (multiplier and not isinstance(default, int | float))
        ):
            raise self._unreadable(f"no {factor} level named: give the values to compare")
        if multiplier and default == 0:  # "halving the KL penalty": its default is off
            raise self._unreadable(
                f"{factor}'s default is 0, which scaling leaves at 0: name the level to compare "
                f"('{factor} {describe_level(factor, alternative)}')"
            )
        shift = _shift(self.text, self.mentions)
        if shift is not None and isinstance(default, int | float):
            # "increasing the group size by 4": the default and the default plus 4
            other = _typed(spec, default + shift)
            self.assumptions.append(
                f"{factor} moved by {shift:+g} from its default: {describe_level(factor, default)} "
                f"(control) vs {describe_level(factor, other)}"
            )
            return default, [default, other]
        best = _BEST.search(self.masked)
        if spec.kind == "choice" and best:
            dose = [default, *(choice for choice in spec.choices if choice != default)]
            self.assumptions.append(f"no {factor} named: every choice ({', '.join(dose)})")
            return default, dose
        if multiplier:
            other = _typed(spec, default * multiplier)
        elif best and lowered is not None:
            dose = distinct_levels([lowered, default, raised])
            self.assumptions.append(
                f"no {factor} level named: a dose-response over "
                f"{', '.join(describe_level(factor, v) for v in dose)} (default as control)"
            )
            return default, dose
        elif way == "raise" and raised is not None:
            other = raised
        elif way == "lower" and lowered is not None:
            other = lowered
        else:
            other = alternative
        if other == default:
            other = alternative if alternative != default else raised
        self.assumptions.append(
            f"no {factor} level named: {describe_level(factor, default)} (control) vs "
            f"{describe_level(factor, other)}"
        )
        return default, [default, other]

    def _mix_levels(self, task: str, tasks: list[str]) -> tuple[list[Level], Level]:
        partners = [t for t in tasks if t != task]
        if not partners:
            partners = [MIX_PARTNER.get(task, "arithmetic")]
            self.assumptions.append(f"no task named to mix in: {partners[0]}")
        placed = [(p, v / 100) for p, v, percent in _numbers(self.text, self.mentions) if percent]
        for m in self._of("aside", "ratio"):
            first, second = (int(g) for g in m.groups)
            placed.append((m.start, second / (first + second)))
        placed = sorted((p, s) for p, s in placed if 0 < s < 1)
        shares = [s for _, s in placed]
        if (
            len(placed) == 2
            and placed[0][1] != placed[1][1]
            and not re.search(r"\b(?:alone|only|by itself|on its own|unmixed)\b", self.text)
            and (contrasted := _contrasted(self.text, [p for p, _ in placed])) is not None
        ):  # "is a 90/10 split better than 50/50?": two mixes, the one compared against first
            mixes = [
                {
                    task: round(1 - share, 4),
                    **{p: round(share / len(partners), 4) for p in partners},
                }
                for _, share in placed
            ]
            control = mixes[contrasted]
            self.assumptions.append("two mixes compared: the one compared against is the control")
            return [control, *(m for m in mixes if m != control)], control
        if not shares:
            shares = [round(len(partners) / (len(partners) + 1), 4)]
            self.assumptions.append(f"mixed arm: {task} and {', '.join(partners)} in equal shares")
        control: dict[str, float] = {task: 1.0}
        levels: list[Level] = [control]
        for share in shares:
            mix = {task: round(1 - share, 4)}
            mix.update({p: round(share / len(partners), 4) for p in partners})
            levels.append(mix)
        return distinct_levels(levels), control

    def _model_levels(self) -> tuple[list[Level], Level]:
        served = sorted(set(self.served), key=lambda m: (model_scale(m) or 0.0, m))
        if len(served) < 2:
            raise self._unreadable(
                f"it compares base models, but the gateway serves only "
                f"{', '.join(served) or 'no model'}: serve at least two "
                f"(`gateway serve --model A --model B`)"
            )
        requests = [(m.start, self.text[m.start : m.end]) for m in self._of("model")]
        chosen = [m for m in served if any(serves(r, m) for _, r in requests)]
        missing = [r for _, r in requests if not any(serves(r, m) for m in served)]
        if len(requests) >= 2 and missing:
            raise self._unreadable(
                f"it names {', '.join(missing)}, which the gateway does not serve (it serves "
                f"{', '.join(served)})"
            )
        if len(chosen) < 2:
            chosen = served
            self.assumptions.append(f"base models: every served model ({', '.join(served)})")
        way = _comparative(self.text, self._of("factor", "base_model"))
        control = chosen[-1] if way == "lower" else chosen[0]
        self.assumptions.append(
            f"control {control}: the {'largest' if way == 'lower' else 'smallest'} model"
        )
        return [control, *(m for m in chosen if m != control)], control

    def _value_start(self, value: str) -> int:
        """Where a PARAM's text value is written: its opening quote, or its first letter
        when it is unquoted ("the search tool")."""
        at = self.question.find(value)
        if at < 0:
            at = self.text.find(value.lower())
        return at - 1 if at > 0 and self.question[at - 1] in "\"'“" else max(at, 0)

    def _param_levels(self, key: str) -> tuple[list[Level], Level]:
        assert self.params is not None
        default = self.params[key]
        factor = WORKFLOW_PREFIX + key
        quoted = [
            a or b or c
            for a, b, c in re.findall(
                r"\"([^\"]+)\"|“([^”]+)”|(?<!\w)'([^']+)'(?!\w)", self.question
            )
        ]
        if isinstance(default, bool):
            mentioned = self._of("param", factor)
            if (
                _removes(self.text, mentioned)
                or self._asks_if_needed()
                or any(
                    re.match(r"\s+off\b", self.text[m.end :])
                    and re.search(r"\b(?:turn|switch)\w*\s+(?:the\s+|a\s+)?$", self.text[: m.start])
                    for m in mentioned
                )
            ):  # "turning off the hint", "turning the hint off": on is the control
                self.taken_away = True
                self.assumptions.append(f"{factor} taken away: True (control) vs False")
                return [True, False], True
            return [default, not default], default
        if isinstance(default, int | float):
            found = [(p, v) for p, v, _ in _numbers(self.text, self.mentions)]
            if isinstance(default, int) and not found:  # "five examples instead of two"
                found = _word_numbers(self.text, self.mentions)
            found = [
                (p, int(v) if isinstance(default, int) and v.is_integer() else v) for p, v in found
            ]
            mentioned = self._of("param", factor)
            found += [(m.start, default) for m in mentioned if _named_default(self.text, m)]
            found.sort(key=lambda pair: pair[0])
            numbers = [v for _, v in found]
            named = distinct_levels(numbers)
            others = [v for v in named if v != default]
            if not others and default != 0 and _removes(self.text, mentioned):
                # "removing retries": the PARAM off (0) against its default
                self.assumptions.append(f"{factor} taken away: {default} (control) vs 0")
                return [default, 0 if isinstance(default, int) else 0.0], default
            if len(others) >= 1 and len(named) >= 2:
                # "few_shot=2 vs few_shot=4": the levels named; the control as for a setting
                positions = [next(p for p, v in found if v == level) for level in named]
                way = _comparative(self.text, self._of("param", factor))
                control = self._control(factor, named, positions, default, way)
                return [control, *(v for v in named if v != control)], control
            if not others and _BEST.search(self.masked):
                sweep = [0, 1, 3] if default == 0 else [default / 2, default, default * 2]
                sweep = [int(v) if isinstance(default, int) and float(v).is_integer() else v
                         for v in sweep]  # fmt: skip
                sweep = distinct_levels(sweep)
                self.assumptions.append(
                    f"no {factor} level named: a dose-response over {', '.join(map(str, sweep))} "
                    f"(the default {default} as control)"
                )
                return [default, *(v for v in sweep if v != default)], default
            if not others:
                way = _comparative(self.text, self._of("param", factor))
                multiplier = _lowered(_multiplier(self.text, self.mentions), way)
                multiplier = multiplier or (0.5 if way == "lower" else 2.0)
                if default == 0 and (isinstance(default, float) or way == "lower"):
                    raise self._unreadable(f"no level named for {factor} (default 0): give one")
                if default == 0:  # a count that is off by default ("few_shot": 0): turn it on
                    others = [1]
                    self.assumptions.append(
                        f"no {factor} level named: tried 1 against the default 0 (name another, "
                        f"e.g. '{key} 3')"
                    )
                    return [default, *others], default
                other = default * multiplier
                others = [int(other) if isinstance(default, int) else other]
                self.assumptions.append(f"no {factor} level named: tried {others[0]}")
            return [default, *others], default
        if isinstance(default, str) or default is None:
            if not quoted:  # "tool=python", "tool: search": a bare word as the value
                quoted = re.findall(
                    rf"\b{_param_words(key)}\s*[=:]\s*([\w.+-]+)", self.question, flags=re.I
                )
            if not quoted and default and re.fullmatch(r"[\w.+-]+", default):
                quoted = _bare_values(self.text, key)  # "the search tool beat the calculator tool"
            others = [q for q in quoted if q != default]
            base = f"{default} " if default else ""
            if (
                not others
                and quoted
                and default
                and re.search(
                    r"\b(?:compared (?:to|with)|than|vs\.?|versus|over|against|instead of)\s+"
                    r"(?:none|nothing|no\s+\w+|an? empty\s+\w+|without\b)",
                    self.text,
                )
            ):  # 'does the prompt ("X", the default) help compared to none?': none the control
                self.assumptions.append(f"control '': no {key}, as the question compares against")
                return ["", default], ""
            if (
                len(others) == 1 and default and re.search(r"\b(?:add\w*|append\w*)\b", self.text)
            ):  # 'adding "Think carefully." to the system prompt': the default plus it
                others = [f"{default} {others[0].strip()}"]
                self.assumptions.append(f"{factor}: the default with {quoted[0].strip()!r} added")
            mentioned = self._of("param", factor)
            if len(others) == 1 and any(_named_default(self.text, m) for m in mentioned):
                at = self._value_start(others[0])
                if at > 0 and _CONTRAST.search(self.text[max(0, at - 50) : at]):
                    # 'does the default prompt beat "X"?': "X" is what the default is set against
                    self.assumptions.append(f"control {others[0]!r}: the level compared against")
                    return [others[0], default], others[0]
            if len(quoted) == 2 and quoted[0] != quoted[1]:
                contrasted = _contrasted(self.text, [self._value_start(q) for q in quoted])
                if contrasted is not None:  # 'from "search" to "calculator"', '"A" instead of "B"'
                    control = quoted[contrasted]
                    self.assumptions.append(f"control {control!r}: the level compared against")
                    return [control, *(q for q in quoted if q != control)], control
            if (
                len(others) >= 2
                and default not in quoted
                and not re.search(r"\b(?:default|current|baseline)\b", self.text)
            ):  # 'compare "A" and "B"': those two, the first named the control
                self.assumptions.append(f"control {others[0]!r}: the first named")
                return others, others[0]
            if not others and re.search(
                rf"\b(?:no|without|empty|remov\w*|drop\w*|delet\w*|omit\w*|skip\w*)\s+"
                rf"(?:the\s+|a\s+|an\s+)?{_param_words(key)}",
                self.text,
            ):
                others = [""]
            elif not others and re.search(
                r"step[\s-]*by[\s-]*step|chain[\s-]of[\s-]thought|\bcot\b|reason", self.text
            ):
                others = [base + "Think step by step before you answer."]
            elif not others and re.search(r"\b(?:concise|brief|terse|short)\b", self.text):
                others = [base + "Answer concisely."]
            if not others:
                raise self._unreadable(
                    f"it varies your workflow's {key}, but names no value to try: put it in "
                    f"double quotes, e.g. 'does {key} \"Think step by step.\" help my agent?'"
                )
            if others != quoted:
                self.assumptions.append(f"{factor}: tried {describe_level(factor, others[0])}")
            return [default, *others], default
        raise self._unreadable(
            f"{factor} is a {type(default).__name__}: the template reader varies numbers, "
            f"booleans and text only"
        )


# words before a PARAM's name that are no value of it ("the default tool", "a better tool")
_NOT_A_VALUE = re.compile(
    r"the|an?|my|your|our|its|their|this|that|these|those|same|default|current|usual|new|"
    r"old|other|another|different|each|every|any|no|one|own|which|what|whose|\w+er|\w+est|"
    r"good|bad|right|wrong|first|second|\d[\w.]*",
)


def _bare_values(text: str, key: str) -> list[str]:
    """Unquoted values of a PARAM whose default is one word (tool="calculator"), written
    before its name ("the search tool", "a python tool") or after "set to"/"to" ("switching
    the tool to search"), in order."""
    words = _param_words(key)
    found = [
        (m.start(1), m.group(1))
        for m in re.finditer(rf"\b([a-z][\w.+-]*)\s+{words}s?\b", text)
        if not _NOT_A_VALUE.fullmatch(m.group(1))
    ]
    found += [
        (m.start(1), m.group(1))
        for m in re.finditer(rf"\b{words}s?\s+(?:set\s+)?to\s+([a-z][\w.+-]*)", text)
        if not _NOT_A_VALUE.fullmatch(m.group(1))
    ]
    return list(dict.fromkeys(value for _, value in sorted(found)))


_KIND_WORDS = {bool: "a flag", int: "a whole number", float: "a number", str: "text"}


def _example_value(default: Any) -> str:
    """A value of `default`'s type, as a question would write it."""
    if isinstance(default, bool):
        return "true" if not default else "false"
    if isinstance(default, int | float):
        return f"{default * 2 or 1:g}"
    return "NAME"


def _param_words(key: str) -> str:
    """A PARAMS key as the question may write it: "system_prompt", "system prompt"."""
    return r"[\s_-]?".join(re.escape(part) for part in key.split("_"))


def _typed(spec: Factor, value: Level) -> Level:
    """A written number as the factor's type: 8.0 → 8 for an int factor; 2e-05 × 0.1 is
    2e-06, not 2.0000000000000003e-06."""
    if isinstance(value, float):
        value = float(f"{value:.12g}")
    if isinstance(value, float) and spec.kind in ("int", "lora") and value.is_integer():
        return int(value)
    if isinstance(value, float) and spec.kind in ("int", "lora"):
        return value  # check_reading says it is not a whole number
    if isinstance(value, int) and not isinstance(value, bool) and spec.kind == "real":
        return float(value)
    return value


# -- the summary ------------------------------------------------------------------------------

_OUTCOME_NOUN = {
    "heldout_accuracy": "held-out accuracy",
    "learning_speed": "learning speed",
    "final_train_reward": "final training reward",
    "cost": "training cost",
}
_DIRECTION_VERB = {
    "greater": "raises",
    "less": "lowers",
    "two_sided": "changes",
}


def summarise(reading: Reading) -> str:
    """One sentence: what is compared, on what, judged how, which way."""
    factor = reading.factor
    if factor.startswith(WORKFLOW_PREFIX):
        what = f"your workflow's {factor[len(WORKFLOW_PREFIX) :]}"
    else:
        what = FACTORS[factor].what
    control = describe_level(factor, reading.control)
    others = [describe_level(factor, level) for level in reading.levels[1:]]
    if reading.task == WORKFLOW_TASK:
        on = "your workflow (its own reward)"
    else:
        info = task_info(reading.task)
        level = reading.task_levels.get(reading.task)
        at = f" at {info.level_knob} {level}" if info and level else ""
        on = f"{reading.task}{at} ({info.description if info else 'a task'})"
    judged = _OUTCOME_NOUN[reading.outcome]
    if reading.outcome == "heldout_accuracy":
        judged = (
            "your workflow's mean reward on its test split"
            if reading.task == WORKFLOW_TASK
            else f"held-out {task_words(reading.task, reading)} accuracy"
        )
    if reading.outcome == "learning_speed":
        judged += (
            f" (steps to a training reward of {reading.threshold:g})"
            if reading.threshold is not None
            else " (area under the training-reward curve)"
        )
    if reading.outcome == "cost":
        judged += " (wall time and tokens)"
    treatment = " / ".join(others)
    noun = _OUTCOME_NOUN[reading.outcome]
    if reading.outcome == "heldout_accuracy" and reading.task == WORKFLOW_TASK:
        noun = "the held-out mean reward"
    if reading.direction == "equivalent":
        way = f"{treatment} keeps {noun} within ±{reading.margin:g} of the control"
    else:
        way = f"{treatment} {_DIRECTION_VERB[reading.direction]} {noun}"
        if reading.direction == "two_sided":
            way += " either way"
    held = " and ".join(f"{k} {describe_level(k, v)}" for k, v in reading.held.items())
    return (
        f"Compares {what} {treatment} against the control {control} on {on}"
        + (f" (every arm at {held})" if held else "")
        + f", judged by {judged}; asks whether {way}."
    )
