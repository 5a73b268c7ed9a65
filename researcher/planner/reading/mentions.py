"""Mentions: every synonym of every task, factor and level word in the catalogue (and every
PARAMS key of the user's workflow: "system_prompt" as "system prompt" or "prompt"), and the
number phrases that are no level ("within 20 steps", "by at least 5 points", "3 seeds",
"a 4x larger", "75/25"), matched in the question. Overlapping matches keep the
leftmost-longest, so "single-turn" is the easy task and never a turn count, "the tool-use
task" is a task and "mixing in" is the task-mix factor. A setting said to be held fixed
("at the same batch size") is marked `fixed`; beside "Dr. GRPO", a plain "GRPO" is the
`scale_rewards` level "group", not the algorithm.

Must not know what the mentions are read as (the factor, the levels, the task: the other
modules of this package), nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from researcher.plan import Level
from researcher.planner.catalogue import (
    AMBIGUOUS_DATASET_NAMES,
    FACTORS,
    TASKS,
    UNSHIPPED_TASKS,
    UNSUPPORTED_SETTINGS,
    WORKFLOW_PREFIX,
    is_task,
    reasoning_gym_datasets,
)
from researcher.planner.reading.models import MODEL_REQUEST


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
    # every run's optimizer: "does lr 1e-4 help, with Adam?" names no setting
    r"(?:with|using|under|in) (?:the )?adamw?(?: optimi[sz]er)?(?! (?:vs|versus|or|instead))",
    r"multi turn(?: tasks?| training| rl| agents?| games?| settings?)?",
    r"tool calls?",
    r"turn based",
    r"step by step",
    r"one step",
)

_TIMES_COUNT = r"\d+(?:\.\d+)?|two|three|four|five|six|eight|ten|a hundred|hundred"

_LOSE_AT_MOST = (
    r"(?:(?:los(?:e|es|ing)|drop(?:s|ping)?|giv(?:e|es|ing) up|sacrific\w*|cost(?:s|ing)?)"
    r"(?: us| me)? (?:no more than|not more than|at most|less than|under) |"
    r"without (?:losing|costing|dropping|giving up|sacrificing) (?:us |me )?more than )"
)

_ASIDES = (  # number phrases that are not levels: (kind, regex)
    # "within 20 steps" fixes the run's length; "within 3 steps of no KL" is a margin
    ("within_steps", r"within (?:the first )?(\d+) (?:training )?steps(?! of\b)"),
    ("at_step", r"(?:at|after|by) (?:training )?step (\d+)"),  # "the reward at step 20"
    ("margin", r"within (\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|percent|pp)"),
    ("margin", r"within (a|one) (?:percentage )?point\b"),  # "to within a point": 1 point
    ("margin_steps", r"within (\d+) (?:training )?steps of\b"),  # on steps to a threshold
    # "no more than 3 extra steps to reach 0.7": the steps a treatment may lose
    ("margin_steps", r"(?<=no more than )(\d+) (?:extra|more|additional) (?:training )?steps\b"),
    ("lora_alpha", r"alpha ?[=:]? ?(\d+)"),  # "r=16 alpha=32": LoRA's alpha is 2 x its rank here
    # a difference in steps hoped for, not a level: "at least 5 steps sooner than 2e-5"
    (
        "effect_steps",
        r"(\d+) (?:training )?steps(?= (?:sooner|faster|earlier|quicker|later|slower))",
    ),
    ("margin_abs", r"within (?:an? )?(?:margin of )?(0?\.\d+)"),
    # the effect hoped for, not a level: "improve accuracy by at least 5 points"
    (
        "effect",
        r"by (?:at least |more than |over |as much as |a good |some |approx\.? |approximately |"
        r"about |around |roughly |~ ?)?(\d+(?:\.\d+)?) ?"
        r"(?:percentage points?|points?|pp|%|percent)|"
        r"(?:at least |more than )?(\d+(?:\.\d+)?) ?(?:percentage points?|points?|pp|%|percent) "
        r"(?:better|worse|higher|lower|more|less|cheaper|faster|slower|shorter)",
    ),
    (
        "effect",
        r"(?:(?:minimum|smallest) (?:detectable )?)?effect(?: size)? of (?:at least )?"
        r"(\d+(?:\.\d+)?) ?(?:percentage points?|points?|pp|%|percent)",
    ),
    (
        "effect_abs",
        r"(?:(?:minimum|smallest) (?:detectable )?)?effect(?: size)? of (?:at least )?"
        r"(\d*\.?\d+)(?! ?(?:%|percent|points?|pp))|(0?\.\d+) (?:minimum )?effect(?: size)?",
    ),
    # "does it cost more than 2 points": the loss hoped to be ruled out or shown
    (
        "effect",
        r"(?:los(?:e|es|ing)|cost(?:s|ing)?|drop(?:s|ping)?)(?: us| me)? (?:more than|over|at "
        r"least) (\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|percent|pp)",
    ),
    # the most a treatment may lose: "lose no more than 2 points" (a non-inferiority margin)
    ("margin", _LOSE_AT_MOST + r"(\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|percent|pp)"),
    ("margin_abs", _LOSE_AT_MOST + r"(0?\.\d+)"),
    # a bare number: in the outcome's units ("by at least 2" on a 0-10 rubric)
    (
        "effect_abs",
        r"by (?:at least|more than) (\d*\.?\d+)(?! ?(?:x\b|×|times|fold|%|percent|points?|pp))",
    ),
    # the reward's scale, stated: "out of 10", "on the 10-point scale", "rewards run from
    # -1 to 0": no level
    ("scale", r"out of (\d+(?:\.\d+)?)|(\d+)[- ]point (?:rubric|scale)"),
    (
        "scale",
        r"(?:runs?|ranges?|go(?:es)?|lies?|is) (?:from|between) (-?\d+(?:\.\d+)?) (?:to|and) (-?\d+(?:\.\d+)?)",
    ),
    (
        "margin",
        r"(?:margin|tolerance)(?: of| ?[:=])? ?(\d+(?:\.\d+)?) ?(?:percentage points?|points?|%|"
        r"percent|pp)",
    ),
    ("margin_abs", r"(?:margin|tolerance)(?: of| ?[:=])? ?(0?\.\d+)"),
    # "a 4-point margin", "a 2-point tolerance", "tolerating a 2-point drop"
    (
        "margin",
        r"(?:(?:tolerat\w*|allow\w*|accept\w*) (?:an? |up to )?)?(\d+(?:\.\d+)?)[- ]?"
        r"(?:percentage[- ]points?|points?|%|percent|pp) (?:margin|tolerance|drop|loss|decrease)",
    ),
    (
        "margin_abs",
        r"(?:(?:tolerat\w*|allow\w*|accept\w*) (?:an? |up to )?)?(0?\.\d+) (?:margin|tolerance)",
    ),
    (
        "margin_abs",
        r"(?:tolerat\w*|allow\w*|accept\w*) (?:an? |up to )?(0?\.\d+) (?:drop|loss|decrease)",
    ),
    ("seeds", r"(\d+) (?:random )?seeds?"),
    # how the study is run, not a level: the test's confidence or alpha, a time budget,
    # the hardware, runs per arm (`NOTED` says each in the reading's assumptions)
    (
        "confidence",
        r"(\d+(?:\.\d+)?) ?(?:%|percent) (?:confidence|ci|significance|power|credib\w*)"
        r"(?: levels?| intervals?)?",
    ),
    (
        "confidence",
        r"(?:alpha|α|significance level|significance|p[- ]?values?)(?: ?(?:=|<|≤|of|at|below|"
        r"under|level of))? ?(0?\.\d+)|p ?(?:=|<|≤|below|under|less than) ?(0?\.\d+)",
    ),
    # "at the 0.05 (significance) level", "at the 5% level": the test's level, not a level
    (
        "confidence",
        r"at (?:the |an? )?(0?\.\d+|\d{1,2}(?:\.\d+)? ?(?:%|percent))"
        r" (?:significance |confidence |alpha |two[- ]sided |one[- ]sided )?level",
    ),
    (
        "budget",
        r"(?:(?:a|the|my|our) (?:time |compute |gpu )?budget of )?(?:about |under |less than )?"
        r"(\d+(?:\.\d+)?)[- ]?(?:gpu[- ]?|cpu[- ]?|wall[- ]?clock |compute )?(?:hours?|hrs?|"
        r"minutes?|mins?|days?|weeks?)(?: (?:of )?(?:gpu |compute |wall[- ]?clock )?(?:time|"
        r"budget|compute))?",
    ),
    ("hardware", r"(\d+) ?(?:x ?)?(?:gpus?|h100s?|a100s?|h200s?|cpus?|cores?|nodes?|machines?)"),
    # a time moved: "cut training time from 2 hours to 1" (the outcome, in numbers)
    (
        "time_change",
        r"from (\d+(?:\.\d+)?) ?(?:hours?|hrs?|h|minutes?|mins?) to (\d+(?:\.\d+)?)"
        r"(?: ?(?:hours?|hrs?|h|minutes?|mins?))?",
    ),
    (
        "replicates",
        r"(\d+) (?:runs?|replicates?|repeats?|repetitions?|trials?|seeds?) (?:per|for each|each|"
        r"an?) (?:arm|level|condition|setting|config\w*|variant|group)",
    ),
    # a result already seen, in a sentence of context: "our runs plateau at 0.6", "our
    # accuracy is 27%", "collapse around step 30"
    (
        "observed",
        r"(?:plateau\w*|stall\w*|stuck|saturat\w*|peak\w*|tops? out|level\w* off|flatten\w*)"
        r"(?: out)?(?: (?:at|around|near|about|below))(?: an?)?(?: reward| accuracy| score)?"
        r"(?: of)? (\d*\.?\d+)(%?)",
    ),
    # a result reported: "KL 0.1 gave 0.3", "lr 1e-4 got 0.4", "group size 8 scored 0.5"
    (
        "observed",
        r"(?:gave|gives|got|gets|scored|scores|yielded|yields|(?<=we )get|(?<=i )get)(?: us| me)?"
        r"(?: an?| only| about| around)? (\d*\.?\d+)(%?)"
        # not a count of something the run is given: "gets 7 guesses per game", "4 turns"
        r"(?! ?(?:x\b|times|steps?|guesses|turns|tries|attempts|moves|rounds|tokens|samples|"
        r"completions|prompts|hints|examples|retries|calls))"
        r"(?: ?(?:\+/?-|±) ?\d*\.?\d+)?",  # "got 0.6 +/- 0.03"
    ),
    # a spread or a move seen: "± 0.03", "(0.27 -> 0.30)"
    ("observed", r"(?:\+/-|\+-|±) ?(\d*\.?\d+)(%?)"),
    ("observed", r"(\d*\.\d+)(%?) ?(?:->|→|=>) ?\d*\.\d+%?"),
    (
        "observed",
        r"(?:accuracy|reward|score|success rate)(?: \w+)? (?:is|was|sits at|stays at|stays "
        r"around|is stuck at|is only|of only|hovers around) (?:only |about |around )?"
        r"(\d*\.?\d+)(%?)",
    ),
    ("step_seen", r"(?:around|near|about|from|since|past|beyond|before) (?:training )?step (\d+)"),
    ("pass_at_k", r"pass ?@ ?(\d+)"),
    ("task_size", r"\d+[\s-](?:numbers?|digits?|terms?)"),  # "3-number countdown": a level
    (
        "threshold",
        r"(?:reach\w*|hit\w*|gets? to|achiev\w*)(?: an?)?(?: (?:training|average|mean|judge))*"
        r"(?: reward| accuracy| score)?(?: of)? (-?\d+(?:\.\d+)?)(%?)",
    ),
    # "get chain_sum to 0.7", "get it within 3 steps to 70%": a reward (at most 1, or a
    # percent), not "get group size to 8" nor "get the lr to 1e-4"
    (
        "threshold",
        r"\bget(?:s|ting)? (?:\S+ ){1,2}?(?:within (?:the first )?\d+ (?:training )?steps )?to "
        r"(0?\.\d+|1\.0+|\d{1,3}(?=%))(%?)(?![\d.]*e)",
    ),
    # "get chain_sum to 80% reward", "steps to 0.7 reward", "until 0.6 reward": the reward
    # noun after the number (not "the lr to 1e-4")
    (
        "threshold",
        r"(?:to|until|till|before)(?: an?| the)?(?: training)?(?: reward| accuracy| score)?"
        r"(?: of)? (\d+(?:\.\d+)?)(%?)(?= (?:training |train |mean |average )?(?:reward|accuracy|"
        r"score|success))",
    ),
    # "steps to 0.8", "steps-to-0.8", "the time to 90% training reward", "the 0.8 threshold"
    (
        "threshold",
        r"(?:steps|updates|iterations|time)[ -]to[ -](?:an? |the )?(?:training |train )?(?:reward |"
        r"accuracy )?(?:of )?(\d+(?:\.\d+)?)(%?)",
    ),
    ("threshold", r"(\d+(?:\.\d+)?)(%?) (?:(?:reward|accuracy) )?threshold"),
    # "4 steps of staleness" is a lag, not a run length
    # not "5 steps sooner than 2e-5" (a difference in steps) nor "4 steps of staleness"
    (
        "steps_n",
        r"(\d+) (?:training |more )?steps(?! of (?:staleness|lag|delay|off))"
        r"(?! (?:sooner|faster|earlier|quicker|later|slower|fewer|less|more|to \d))",
    ),
    ("steps_n", r"(\d+)[- ]step (?:budget|runs?|limit|horizon|training runs?)"),
    ("ratio", r"(\d{1,3}) ?[/:-] ?(\d{1,3})(?!\.\d)(?: (?:mix|split|ratio))?"),
    ("ratio", r"(\d{1,3}) to (\d{1,3}) (?:mix|split|ratio)"),  # "a 3 to 1 mix"
    (
        "times",
        # the comparative is looked at, not taken: "a 4x larger group" still names the group
        rf"({_TIMES_COUNT})[ -]?(?:x|×|times|fold)"
        r"(?=(?: as)?(?: (larger|higher|bigger|greater|more|longer|smaller|lower|less|fewer|"
        r"shorter|large|high|big|much))?)",
    ),
    # "adding 2 to top_k": an amount added (`numbers.shift_named`)
    ("added_to", r"add(?:s|ed|ing)? (\d+) (?:more )?(?:to|onto)\b"),
    # "by a factor of 10"; "dividing the lr by 10" (a bare "by N" only after such a verb)
    ("factor_of", rf"by a factor of ({_TIMES_COUNT})"),
    (
        "divided_by",
        rf"by ({_TIMES_COUNT})(?! ?(?:%|percent|points?|pp)|\.\d|[ -]?(?:x\b|×|times|fold))",
    ),
    ("fraction_of", r"(?:a|one)[ -](tenth|fifth|quarter|third) of"),
    # "2 more turns", "two extra groups": an amount added (`numbers.shift_named`)
    (
        "added_to",
        r"(\d+|two|three|four|five|six|eight|ten) (?:more|extra|additional)(?= [a-z])",
    ),  # "a tenth of the lr"
    (
        "times_word",
        r"(twice|doubl\w*|half|halv\w*|tripl\w*|quadrupl\w*)|an order of magnitude"
        r"(?: (larger|higher|bigger|greater|more|smaller|lower|less))?",
    ),
)

# asides about how the study is run or what was seen: no outcome or direction word in them
NOTED_ASIDES = (
    "confidence", "budget", "hardware", "replicates", "observed", "step_seen", "lora_alpha"
)  # fmt: skip

# how often, against now: "twice as often", "3 times as frequently", "half as often"
AS_OFTEN = r"(?:twice|(?:\d+|two|three|four) times|half|more|less) (?:as )?(?:often|frequently)"

NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8, "ten": 10}


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
            # "knights and knaves" is knights_knaves
            words = name.replace("_", " (?:and )?")
            fragment = rf"(?:reasoning gym )?{words}(?: dataset| tasks?| puzzles?)?"
        patterns.append((_compile(fragment), "task", name, None))
    for name in UNSHIPPED_TASKS:
        if is_task(name):
            continue  # shipped since: its own synonyms name it
        patterns.append((_compile(name), "unshipped", name, None))
    for fragment in UNSUPPORTED_SETTINGS:
        patterns.append((_compile(fragment), "unsupported", fragment, None))
    for fragment in _NEUTRAL:
        patterns.append((_compile(fragment), "neutral", "", None))
    patterns.append((MODEL_REQUEST, "model", "", None))
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
            last = words[-1][:-1] if re.fullmatch(r"\w+[^s]s", words[-1]) else words[-1]
            # "tool calls" for max_tool_calls, "tool errors" for show_tool_errors; a bare
            # "calls" or "errors" only for a key of two words ("turns" for max_turns)
            tail = " ".join([*words[1:-1], last]) if len(words) > 2 else last
            if key.lower() not in FACTORS and _names_a_run_setting(tail):
                tail = " ".join(
                    words
                )  # "temperature" alone is the rollouts', not judge_temperature
            patterns.append((_compile(tail + "s?"), "param", WORKFLOW_PREFIX + key, None))
            if tail == "call":  # "3 tool calls" for max_calls (a neutral phrase otherwise)
                patterns.append((_compile("tool calls?"), "param", WORKFLOW_PREFIX + key, None))
            # "a single turn" is max_turns 1 here, not the easy single-turn task
            patterns.append((_compile(f"single {tail}"), "param", WORKFLOW_PREFIX + key, None))
        if len(words) > 1:  # "showing tool errors", "hint every": each word as written
            inflected = " ".join(f"{w}(?:s|es|ing|ed)?" for w in words)
            patterns.append((_compile(inflected), "param", WORKFLOW_PREFIX + key, None))
        if key.lower() in FACTORS:  # a PARAM named as a run setting is the PARAM here
            for synonym in FACTORS[key.lower()].synonyms:
                patterns.append((_compile(synonym), "param", WORKFLOW_PREFIX + key, None))
        for alias in _param_aliases(words):
            patterns.append((_compile(alias), "param", WORKFLOW_PREFIX + key, None))
        if len(words) >= 2 and words[-1] in ("s", "ms", "sec", "secs", "seconds", "mins"):
            # "timeout" for timeout_s: the unit is no word a question writes
            patterns.append((_compile(" ".join(words[:-1])), "param", WORKFLOW_PREFIX + key, None))
        if len(words) == 2 and words[1] == "size":
            # "a 5x5 board" is board_size 5: the noun after its side squared
            side = rf"\d+ ?[x×] ?\d+ {words[0]}s?"
            patterns.append((_compile(side), "param", WORKFLOW_PREFIX + key, None))
        period = [w for w in words if not re.fullmatch(r"every|interval|period|freq\w*|n", w)]
        if len(period) < len(words) and period:
            # "hints given twice as often" is hint_every (not use_hint): a period's noun
            # with how often
            often = rf"{' '.join(period)}s? (?:\w+ ){{0,2}}?{AS_OFTEN}"
            patterns.append((_compile(often), "param", WORKFLOW_PREFIX + key, None))
        default = params[key]
        if isinstance(default, str) and re.fullmatch(r"[a-z][\w.+-]{2,}", default.lower()):
            # a one-word default written bare names its PARAM: "is search better than
            # calculator?" (tool="search")
            # with its key after it ("the calculator tool"): the PARAM, not a task's name
            value = rf"{re.escape(default.lower())}(?: {' '.join(words)}s?)?"
            patterns.append((_compile(value), "param", WORKFLOW_PREFIX + key, None))
    return patterns


def _names_a_run_setting(word: str) -> bool:
    """Whether `word` alone names a run setting ("temperature", "tokens")."""
    return any(
        _compile(synonym).fullmatch(word) for f in FACTORS.values() for synonym in f.synonyms
    )


def _param_aliases(words: list[str]) -> list[str]:
    """Other words for a PARAMS key: a singular ("retries": "retry"), and examples or
    demonstrations for a few-shot count ("few_shot": "3 examples")."""
    last = words[-1]
    aliases = []
    if last.endswith("ies") and len(last) > 4:
        aliases.append(" ".join([*words[:-1], last[:-3] + "y"]))
    if re.fullmatch(r"[a-z]{4,}", last) and not last.endswith("s"):
        # the verb as a noun: "rerank" as "reranking", "escalate" as "escalation",
        # "query_rewrite" as "query rewriting"
        stem = last[:-1] if last.endswith("e") else last
        aliases.append(" ".join([*words[:-1], f"{stem}(?:ing|ion|ed|er)"]))
    if last == "size" and len(words) >= 2:
        # "a larger board", "bigger chunks" for board_size / chunk_size (not "10 chunks": a
        # count of them)
        noun = words[-2]
        aliases.append(rf"(?:bigger|larger|smaller|wider|narrower|longer|shorter) {noun}s?")
    if last == "k" and len(words) >= 2:  # "k=5" for top_k
        aliases.append(r"k(?= ?= ?\d)")
    if re.search(r"shot|example|demo", last):
        aliases.append(
            r"(?:in[\s-]context |few[\s-]shot )?(?:examples?|demonstrations?|demos?|shots?)"
        )
        # "two-shot", "3-shot": the count written into the word
        aliases.append(r"(?:zero|one|two|three|four|five|\d+)[\s-]shot")
    return aliases


# two names in a ratio's order beside it: "3:1 countdown:chain_sum", "countdown/chain_sum at 3:1"
_PAIR_AFTER = re.compile(
    r"\s+(?:of\s+|between\s+)?[a-z_]+(?:\s[a-z_]+)?\s*(?:[:/]|\bto\b|\band\b|\bvs\.?)\s*[a-z_]"
)
_MIX_WORD = re.compile(r"\b(?:mix\w*|ratios?|splits?|blend\w*)\b")
_PAIR_BEFORE = re.compile(r"[a-z_]+\s*[:/]\s*[a-z_]+\s*(?:at\s+|=\s*|of\s+)?$")

SCALING_VERB = re.compile(
    r"\b(?:divid|multipl|increas|rais|reduc|decreas|lower|cut|boost)\w*\b[^,;.?!]{0,40}$"
)


# a PARAM's one-word name or value naming something else: "my tool agent", "the calculator
# agent", "tool calls" (max_tool_calls), "tool errors"
_NOT_THE_PARAM = re.compile(r"\s+(?:agents?|models?|polic(?:y|ies)|calls?|calling|errors?|use)\b")


# "every 2 turns", "every other step": a unit of how often something happens
_EVERY_N = re.compile(r"\bevery\s+(?:[\w.]+\s+)?$")
_MERGED = re.compile(
    r"\b(?:merg|combin|concatenat|pack)\w*\s+(?:the\s+|its\s+|all\s+|an?\s+)?"
    r"(?:\w+'s?\s+)?(?:(?:agent|game|episode|model)\s+)?$"
)
_UNIT = re.compile(r"(?:turns?|steps?|rounds?|episodes?|calls?|iterations?|updates?|moves?)")


def scan(text: str, params: dict[str, Any] | None) -> list[Mention]:
    """Every synonym matched in `text`; overlaps keep the leftmost-longest."""
    found = []
    for pattern, kind, key, level in _param_patterns(params or {}) + _patterns():
        for match in pattern.finditer(text):
            if (
                kind == "param"
                and " " not in match.group(0).strip()
                and _NOT_THE_PARAM.match(text, match.end())
            ):
                continue
            if (
                key == "ratio"
                and sum(int(g) for g in match.groups()) not in (10, 100)
                and not (
                    (
                        match.group(0).endswith(("mix", "split", "ratio"))
                        or _PAIR_AFTER.match(text, match.end())
                        or _PAIR_BEFORE.search(text[: match.start()])
                        or (_MIX_WORD.search(text) and max(int(g) for g in match.groups()) <= 20)
                    )
                    and "0" not in match.groups()
                )
            ):
                continue  # "6/0" inside "5e-6/0.000005" is no mix ratio; "a 3:1 mix" is
            if key == "divided_by" and not SCALING_VERB.search(text[: match.start()]):
                continue  # "by 4" alone: a factor after "dividing"/"multiplying", an amount
                # after "increasing"/"reducing", else a number
            if _UNIT.fullmatch(match.group(0).strip()) and (
                _EVERY_N.search(text[: match.start()]) or _MERGED.search(text[: match.start()])
            ):
                continue  # "a hint every 2 turns", "merging the turns": not max_turns
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


def blank_mentions(text: str, mentions: list[Mention]) -> str:
    """`text` with every task, factor, level word and model name blanked out, so that
    outcome and direction words are read from what is left."""
    chars = list(text)
    for m in mentions:
        if m.kind in ("task", "factor", "value", "param", "model", "fixed", "unshipped"):
            chars[m.start : m.end] = "#" * (m.end - m.start)
        elif m.kind == "aside" and m.key in NOTED_ASIDES:  # "a budget of 4 gpu-hours": no cost
            chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)
