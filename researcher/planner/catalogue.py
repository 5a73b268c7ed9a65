"""What a research question may name: the shipped tasks and the factors a study can vary.

Owns `TASKS` (each shipped task family: what it asks, what it rewards, a description and
the words people use for it), `task_info` (those, and any other reasoning-gym dataset by its
own name at its default difficulty, e.g. "leg_counting"), `FACTORS` (each factor a study can vary: its kind, bounds,
the default level that is the control when a question names only one level, and the words
people use for it), and `check_reading`, which validates a `Reading` — one the template
reader made, or one an LLM planner returned — against both. Bounds of `POST /runs` fields
are read from `swarm.protocol`'s types, so a reading the catalogue accepts is one the
gateway accepts.

Synonyms are regular-expression fragments matched on the lower-cased question at word
boundaries; a space (or hyphen) in a synonym matches a space, hyphen, underscore or
nothing, so "group size" also matches "group_size" and "group-size".

Must not know how a question is parsed (`reading/`), how arms are built (`template.py`),
the gateway or the database.
"""

from __future__ import annotations

import functools
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

import annotated_types

from researcher.errors import ResearcherError
from researcher.plan import MARGIN_DIRECTIONS, WORKFLOW_FAMILY, Level, Reading
from swarm import protocol
from swarm.tasks import (
    arithmetic,
    basic_arithmetic,
    bfcl,
    calculator,
    chain_sum,
    countdown,
    guess_number,
    learnable,
    letter_counting,
    mastermind,
    reasoning_gym,
)


@dataclass(frozen=True)
class TaskInfo:
    family: str
    asks: str
    rewards: str
    multi_turn: bool
    description: str = ""  # in a few words, for summaries ("say a given word")
    synonyms: tuple[str, ...] = ()  # regex fragments naming the task in a question
    max_tokens: int | None = None  # the task's own completion budget per model call
    # difficulty levels, easiest first: the values of the family's `level_knob` (a
    # question may name one: "tiny countdown"); `default_level` is what runs otherwise
    levels: tuple[str, ...] = ()
    default_level: str | None = None
    level_knob: str = "level"
    # other words for a level, as regex fragments -> level ("3-number" countdown: easy)
    level_words: tuple[tuple[str, str], ...] = ()


TASKS: dict[str, TaskInfo] = {
    info.family: info
    for info in (
        TaskInfo(
            "learnable",
            '"Reply with the word banana." (a few phrasings x 16 words)',
            "1.0 when the reply contains the word (whole word, any case), else 0.0",
            False,
            "the easy single-turn task: say a given word",
            (
                "learnable",
                "(?:the )?easy (?:single turn )?tasks?",
                "(?:the )?single turn(?: tasks?)?",
                "say(?:ing)? (?:banana|a word|the word|a given word)",
                "banana",
                "(?:the )?(?:word|echo|repeat) tasks?",
                "(?:the )?toy tasks?",
            ),
            learnable.MAX_TOKENS,
        ),
        TaskInfo(
            "arithmetic",
            "one-step word problems with integer answers (a + b, a - b, a x b)",
            "1.0 when the last integer of the reply is the answer, else 0.0",
            False,
            "one-step arithmetic word problems",
            (
                "arithmetic(?: tasks?| problems?)?",
                "maths?",
                "(?:arithmetic |math )?word problems?",
                "sums",
                "addition",
                "multiplication",
            ),
            arithmetic.MAX_TOKENS,
        ),
        TaskInfo(
            "calculator",
            "compute an expression, with a `calculator` tool offered (at most 3 model calls)",
            "1.0 when the final answer contains the right number, +0.1 for a well-formed tool call",
            True,
            "arithmetic with a calculator tool (tool use)",
            (
                "calculator(?: tasks?| tool)?",
                "(?:the )?tool use(?: tasks?)?",
                "(?:the )?tool tasks?",
                "tools",
            ),
            calculator.MAX_TOKENS,
        ),
        TaskInfo(
            "guess_number",
            'find a hidden number from "Higher."/"Lower." hints; each task carries its '
            '"max_turns" (enough guesses for a binary search)',
            "1.0 on a hit, else up to 0.5 by how close the best guess came",
            True,
            "the multi-turn number guessing game",
            (
                "guess number",
                "guess the number",
                "(?:the )?(?:number )?guessing games?",
                "(?:the )?number games?",
                "number guessing(?: games?)?",
                "(?:the )?higher ?/? ?lower games?",
                "guessing",
                "guess",
            ),
            guess_number.MAX_TOKENS,
        ),
        TaskInfo(
            "countdown",
            '"Calculate 35 using all of these numbers: 7, 5, 1." (reasoning-gym countdown; '
            'level "easy": 3 numbers of 1..10, target 1..100; "tiny": 2 numbers; "standard": '
            '4-6 numbers of 1..100, target 100..999); the reply ends "Answer: <expression>"',
            "reasoning-gym's countdown scorer: 1.0 when the expression uses exactly the numbers "
            "and equals the target, 0.05 for a wrong one over the right numbers, 0.01 unparsable, "
            "0.0 no answer",
            False,
            "the countdown numbers game (reasoning-gym)",
            (
                "countdown(?: games?| tasks?| puzzles?| problems?)?",
                "(?:the )?count ?down(?: numbers?)? games?",
                "(?:the )?numbers game",
                "(?:the )?24 game",
            ),
            countdown.MAX_TOKENS,
            tuple(countdown.LEVELS),
            countdown.DEFAULT_LEVEL,
            level_words=(
                (r"(?:2|two)[\s-]numbers?", "tiny"),
                (r"(?:3|three)[\s-]numbers?", "easy"),
                (r"(?:[4-6]|four|five|six)[\s-]numbers?", "standard"),
            ),
        ),
        TaskInfo(
            "chain_sum",
            '"State the final answer to the following arithmetic problem: 4 - 1 - 7 =" '
            '(reasoning-gym chain_sum; level "easy": two 1-digit terms; "medium": 2-3 terms of '
            'up to 2 digits; "standard": 2-6 terms of 1-4 digits)',
            "reasoning-gym's chain_sum scorer on the reply's answer: 1.0 right number, else 0.0",
            False,
            "chains of additions and subtractions (reasoning-gym)",
            (
                "chain ?sums?(?: tasks?| problems?)?",
                "(?:addition and subtraction|add and subtract) chains?",
            ),
            chain_sum.MAX_TOKENS,
            tuple(chain_sum.LEVELS),
            chain_sum.DEFAULT_LEVEL,
        ),
        TaskInfo(
            "basic_arithmetic",
            '"Calculate 6 + 10." (reasoning-gym basic_arithmetic; level "easy": two 1-digit terms '
            'with + - *; "medium": 2-3 terms of up to 2 digits; "standard": 2-6 terms, + - * /, '
            "parentheses)",
            "reasoning-gym's basic_arithmetic scorer on the reply's answer: 1.0 right value, "
            "else the library's partial credit len(right)/len(given) when the given answer contains the right one",
            False,
            "evaluating arithmetic expressions (reasoning-gym)",
            (
                "basic arith(?:metic)?(?: tasks?| problems?)?",
                "(?:arithmetic )?expression evaluation",
                "evaluating (?:arithmetic )?expressions",
            ),
            basic_arithmetic.MAX_TOKENS,
            tuple(basic_arithmetic.LEVELS),
            basic_arithmetic.DEFAULT_LEVEL,
        ),
        TaskInfo(
            "letter_counting",
            '\'How many times does the letter "i" appear in the text: "solicit"?\' '
            '(reasoning-gym letter_counting; level "easy": 1-3 words; "standard": 5-15 words)',
            "reasoning-gym's letter_counting scorer on the reply's answer: 1.0 right count, else "
            "the library's partial credit",
            False,
            "counting a letter in a text (reasoning-gym)",
            (
                "letter counting(?: tasks?| problems?)?",
                "counting letters",
                "count(?:ing)? (?:the )?letters",
                "(?:the )?strawberry (?:problem|task|test)",
            ),
            letter_counting.MAX_TOKENS,
            tuple(letter_counting.LEVELS),
            letter_counting.DEFAULT_LEVEL,
        ),
        TaskInfo(
            "mastermind",
            "TextArena's Mastermind: crack a hidden code from black/white-peg feedback, one "
            'guess ("[2 1]") per turn (level "tiny": 2 digits of 1..4, 6 guesses; "easy": 3 of '
            '1..5, 8; "standard": TextArena\'s Mastermind-v0, 4 of 1..6, 20; "hard": 4 of 1..8, 30)',
            "TextArena's own reward: 1 for cracking the code, else (black + 0.5 x white) / code "
            "length of the last valid guess, 0.0 without one",
            True,
            "the multi-turn Mastermind code-breaking game (TextArena)",
            (
                "master ?mind(?: games?| tasks?)?",
                "(?:the )?code ?break(?:ing|er)(?: games?)?",
                "(?:the )?code guessing games?",
                "bulls and cows",
                "text ?arena(?: games?| tasks?)?",
                "(?:the |a )?multi turn games?",
            ),
            mastermind.MAX_TOKENS,
            tuple(mastermind.LEVELS),
            mastermind.DEFAULT_LEVEL,
        ),
        TaskInfo(
            "bfcl",
            "a request and the functions offered as OpenAI tools, from the Berkeley Function "
            "Calling Leaderboard's data (bfcl-eval), e.g. \"Find the area of a triangle with a "
            'base of 10 units and height of 5 units." with calculate_triangle_area(base, height, '
            'unit); category "simple" (one function, one call; the default), "multiple" '
            '(several functions, one call), "parallel" (several calls), "parallel_multiple", '
            '"multi_turn_base" (conversations against BFCL\'s executable backends; needs a '
            "context of 10k tokens or more)",
            "BFCL's own AST checker on the reply's tool_calls: 1.0 when it accepts them (the "
            "right functions with the right argument values), else 0.0; no or malformed call 0.0 "
            "(multi-turn: BFCL's multi-turn checker on the backends' states and results)",
            False,
            "function calling (BFCL, the Berkeley Function Calling Leaderboard)",
            (
                "bfcl(?: tasks?| benchmark)?",
                "berkeley function calling(?: leaderboard| benchmark)?",
                "(?:the )?gorilla (?:leaderboard|benchmark)",
                "function calling(?: tasks?| benchmark)?",
                "tool calling(?: tasks?| benchmark)?",
            ),
            bfcl.MAX_TOKENS,
            tuple(bfcl.CATEGORIES),
            bfcl.DEFAULT_CATEGORY,
            "category",
            level_words=(
                (r"multiple (?:functions|tools)", "multiple"),
                (r"parallel (?:function |tool )?calls", "parallel"),
                (r"multi[\s_-]?turn", "multi_turn_base"),
            ),
        ),
    )
}
# reasoning-gym datasets a question may name only as "<name> dataset/task" (or
# "reasoning-gym <name>"): their names are everyday words ("products", "dice") or letters
AMBIGUOUS_DATASET_NAMES = frozenset({"ab", "bf", "aiw", "acre", "composite", "products", "dice"})


@functools.cache
def reasoning_gym_datasets() -> tuple[str, ...]:
    """Every reasoning-gym dataset a study can train on by name (imports reasoning-gym)."""
    return tuple(reasoning_gym.dataset_names())


def task_info(name: str) -> TaskInfo | None:
    """A shipped task's TaskInfo; for any other reasoning-gym dataset one built from the
    library (`swarm.tasks.family(name)` serves it at its default difficulty); else None."""
    if name in TASKS:
        return TASKS[name]
    if name not in reasoning_gym_datasets():
        return None
    words = name.replace("_", " ")
    return TaskInfo(
        name,
        f"reasoning-gym's {name} dataset at the library's default difficulty; the reply ends "
        '"Answer: <answer>"',
        f"reasoning-gym's own {name} scorer on the reply's answer (1.0 right; some datasets "
        "give partial credit)",
        False,
        f"reasoning-gym's {words} dataset",
        (words,) if name not in AMBIGUOUS_DATASET_NAMES else (),
        reasoning_gym.MAX_TOKENS,
    )


def task_params(family: str, level: str | None) -> dict[str, Any]:
    """The keyword arguments that draw `family`'s tasks at `level` (its `level_knob`); {}
    without a level. A level the family does not have is a ResearcherError naming its levels."""
    if level is None:
        return {}
    info = task_info(family)
    if info is None or not info.levels:
        raise ResearcherError(f"{family} has no difficulty levels (asked for {level!r})")
    if level not in info.levels:
        raise ResearcherError(
            f"{family} has no {info.level_knob} {level!r}; its {info.level_knob}s are "
            f"{', '.join(info.levels)} (default {info.default_level})"
        )
    return {info.level_knob: level}


def task_words(family: str, reading: Reading) -> str:
    """A task as a study runs it: "countdown", or "countdown (level tiny)" at a level the
    reading names."""
    level = reading.task_levels.get(family)
    info = task_info(family)
    return f"{family} ({info.level_knob if info else 'level'} {level})" if level else family


def reading_task_params(reading: Reading) -> dict[str, dict[str, Any]]:
    """Family -> the `tasks()` keyword arguments of each level the reading names (a
    Design's `task_params`)."""
    return {family: task_params(family, level) for family, level in reading.task_levels.items()}


def is_task(name: str) -> bool:
    return task_info(name) is not None


def tasks_in_words() -> str:
    """The shipped tasks as a list for messages, with the reasoning-gym rule."""
    return f"{', '.join(TASKS)}, or any reasoning-gym dataset by its name"


# no task named: one the bundled model learns in 20 steps (docs/workflow.md)
DEFAULT_TASK = "chain_sum"
WORKFLOW_TASK = WORKFLOW_FAMILY  # Reading.task for the user's own workflow
# what people ask to vary that no run setting is: refused by name, never read as a neighbour
UNSUPPORTED_SETTINGS = (
    r"(?:learning rate |lr )?schedul\w*",
    "warm ?up",
    "cosine",
    "(?:lr |learning rate )?decay",
    "optimi[sz]ers?",
    r"adam\w*",
    "sgd",
    "momentum",
    "curriculum",
    "entropy (?:bonus|coefficient|coef|term|regulari[sz]ation|loss)",
    # methods this trainer does not have: offline self-training on filtered samples
    r"rejection sampling(?: fine ?tuning)?|\brft\b|expert iteration|\bstar\b(?= (?:training|method))",
    # how the work is spread is no training setting: it changes wall time, not what trains
    r"(?:\d+|one|two|four|eight|more|fewer|several|multiple) (?:gpus?|nodes|rollout workers?|"
    r"workers?|clients?|actors?)\b|rollout workers?",
    # each run of a study trains one policy (teams train in `swarm run`, not as a factor)
    r"(?:two|several|multiple|\d+) polic(?:y|ies) trained together|polic(?:y|ies) (?:trained )?"
    r"together|multi ?(?:policy|agent) training|(?:planner|solver|verifier) and (?:the )?"
    r"(?:executor|verifier|critic) polic(?:y|ies)",
    "dropout",
    "reward shaping",
    r"format(?:ting)? rewards?|(?:bonus|extra|shaped) rewards? for (?:the |an? )?(?:answer |output )?"
    r"format\w*|format(?:ting)? bonus(?:es)?",  # a task's reward is its own
    r"length penalt(?:y|ies)",
    "value (?:function|head|model)",
    "critic",
    # one optimizer update per batch: no PPO epochs / GRPO's μ inner iterations to vary
    r"(?:ppo|optimi[sz]ation|update|inner) epochs?(?: per (?:batch|step|rollout))?",
    r"epochs? per (?:batch|step|rollout)",
    r"(?:inner|ppo|policy) (?:updates|iterations|steps) per (?:batch|step|rollout)",
    r"updates? per batch",
    # tasks are drawn fresh every step: no fixed dataset to pass over again
    r"(?:(?:the )?number of |\d+ |two |three |four |more |multiple |several )?(?:training )?"
    r"epochs?(?! per)(?: over (?:the )?(?:data|dataset|training (?:set|data)))?",
    r"(?:ppo |number of )?mini ?batch(?:es| size)?(?: per (?:batch|step|rollout|update))?",
    r"num(?:ber of)? (?:ppo |inner )?iterations",
    # sampling settings the rollouts do not vary (temperature and max_tokens are factors)
    r"top ?[pk]",
    r"min ?p",
    "nucleus sampling",
    r"(?:repetition|frequency|presence) penalty",
    "beam search",
    # the update takes the whole batch, split into micro-batches by tokens (micro_batch_tokens)
    r"gradient accumulation(?: steps)?",
    r"per device (?:train )?batch size",
    r"mask(?:ed|ing)?(?: out)? (?:the )?truncated (?:completions|responses|samples|episodes)|"
    r"(?:drop\w*|filter\w*|discard\w*|skip\w*|remov\w*|ignor\w*)(?: out)? (?:the )?(?:truncated|"
    r"overlong|too long|cut off) (?:completions|responses|samples|episodes|answers|outputs)",
    # the KL is a term of the loss here, at a coefficient: where it goes is no setting
    r"kl (?:penalty |term )?in (?:the )?(?:reward|loss)|kl as (?:a |part of the )?reward",
    # sampling n and keeping the best is no training setting (the group size is the samples)
    r"best of ?n|best of \d+",
    # algorithms the trainer does not have (GRPO, RLOO, REINFORCE++ and Dr. GRPO's
    # scale_rewards are factors; DAPO's clip-higher reads as clip_eps)
    r"gspo|group sequence policy optimi[sz]ation",
    r"dapo(?!'?s? clip)",
    # offline preference optimization: no reward-free preference losses here
    r"dpo|direct preference optimi[sz]ation|ipo|kto|orpo|simpo",
    "vapo",
    "remax",
    # LoRA variants and targets, and the evaluation's own decoding: none is a setting
    r"dora",  # QLoRA reads as LoRA (its 4-bit base is not done here)
    r"lora (?:on|for|in) (?:the |only the )?(?:attention|mlp|all|some)(?:\s\w+){0,2}?\s(?:layers?|"
    r"modules?)|lora target(?: modules?)?",
    r"(?:eval\w*|test\w*|held ?out) (?:at |with )?(?:temperature|greedy|decoding)|"
    r"evaluat\w* at temperature",
    r"(?:in|with|using|train\w* in) (?:bf16|fp16|fp32|bfloat16|float16|mixed precision)",
    # PPO the algorithm (a learned value critic); its clip and epochs are named on their own
    r"ppo(?![\s_-]*(?:clip\w*|epochs?|style|loss|objective|ratios?|iterations?|updates?))",
    # DAPO's dynamic sampling resamples until no group has all-equal rewards; this trainer
    # drops them instead (zero_variance_groups): the refusal says how to ask that
    r"(?:dapo'?s? )?dynamic sampling",
    r"k ?[123] (?:kl )?estimators?|kl (?:divergence )?estimators?|estimators? (?:of|for) (?:the )?kl",
    r"truncated importance sampling|importance sampling (?:correction|weights?|ratios?)",
    r"overlong (?:filtering|reward shaping|penalty|punishment|masking)",
    r"(?:bf16|fp16|fp32|bfloat16|float16|float32) (?:vs\.?|versus|or|instead of) "
    r"(?:bf16|fp16|fp32|bfloat16|float16|float32)|(?:mixed|numerical|training) precision",
    r"sft|supervised fine tuning|warm ?start\w*",
    r"(?:learned |trained |better |a |the )?reward models?",
    # the shipped tasks' prompts are their own (a workflow's prompt PARAM is varied instead)
    r"chain of thought prompt\w*|cot prompt\w*|prompt(?:ing)? (?:strateg\w*|engineering|templates?)",
    r"(?:reward|advantage) (?:std )?normali[sz]ation (?:across|over) (?:the )?(?:whole )?batch",
    r"(?:token|sequence|sample) level (?:loss(?:es)?|normali[sz]ation|aggregation|averag\w*)",
    "loss aggregation",
    r"(?:sequence|token) level (?:importance )?ratios?",
    # the clip is symmetric and LoRA's alpha is 2 x its rank: neither is a setting here
    r"asymmetric (?:clip\w*|clip range|ppo clip)",
    r"lora(?: adapters?)?'?s? alpha",
)
# benchmarks people name that this planner does not ship: refused by name, not misread
UNSHIPPED_TASKS = (
    "gsm8k",
    "math500",
    "humaneval",
    "mbpp",
    "swe bench",
    "alfworld",
    "webshop",
    "aime",
    "mmlu",
    "gpqa",
    "hellaswag",
    "livecodebench",
    "big bench(?: hard)?",
    "olympiad ?bench",
    # games and datasets people train agents on that no shipped task is
    "wordle",
    "chess",
    "tic tac toe",
    "blocks ?world",
    "hotpot ?qa",
    "trivia ?qa",
    "natural questions",
    "web ?arena",
    "tau ?bench",
    r"code generation|program synthesis|coding (?:tasks?|problems?|benchmarks?)",
)

FactorKind = Literal["real", "int", "choice", "lora", "task_mix", "base_model", "param"]
TASK_DEFAULT = "<the task's own>"  # a default that depends on the task (max_tokens)


def on_by_default(spec: Factor) -> bool:
    """Whether the factor's default is its "on" state and its alternative "off": tree merging
    (vs none), std scaling (vs none), full fine-tuning (vs a LoRA rank)."""
    if spec.kind == "lora":
        return spec.default == "full"
    return spec.kind == "choice" and spec.alternative == "none" and spec.default != "none"


LORA_LR = 1e-4  # LoRA adapters train with a higher lr than full fine-tuning, as usual


@dataclass(frozen=True)
class Factor:
    """One thing a study can vary. `default` is the control when a question names one
    level; `raised`/`lowered` are the levels tried for "a higher X"/"a lower X" when no
    number is given; `alternative` is the level tried when X is named with no level at
    all ("does a KL penalty help?")."""

    name: str
    kind: FactorKind
    what: str  # in words: "the KL coefficient"
    default: Level
    synonyms: tuple[str, ...]
    where: Literal["run", "workflow_params", "tasks"] = "run"
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself is out of bounds
    high_open: bool = False
    choices: tuple[str, ...] = ()
    values: dict[str, Level] = field(default_factory=dict)  # regex fragment -> level it names
    raised: Level = None
    lowered: Level = None
    alternative: Level = None
    values_need_name: bool = False  # level words too common to name the factor on their own

    def default_for(self, task: str) -> Level:
        if self.default == TASK_DEFAULT:
            info = task_info(task)
            return info.max_tokens if info else None
        return self.default

    def bounds_text(self) -> str:
        low = f"{'>' if self.low_open else '>='} {self.low:g}" if self.low is not None else ""
        high = f"{'<' if self.high_open else '<='} {self.high:g}" if self.high is not None else ""
        return " and ".join(part for part in (low, high) if part)

    def in_bounds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            return False
        return True


def _bounds(annotated: Any) -> dict[str, Any]:
    """low/high/low_open/high_open from a `swarm.protocol` Annotated type's metadata."""
    found: dict[str, Any] = {}
    for info in typing.get_args(annotated)[1:]:
        for bound in getattr(info, "metadata", []):
            if isinstance(bound, annotated_types.Gt):
                found.update(low=float(bound.gt), low_open=True)
            elif isinstance(bound, annotated_types.Ge):
                found.update(low=float(bound.ge), low_open=False)
            elif isinstance(bound, annotated_types.Lt):
                found.update(high=float(bound.lt), high_open=True)
            elif isinstance(bound, annotated_types.Le):
                found.update(high=float(bound.le), high_open=False)
    return found


def _choices(name: str) -> tuple[str, ...]:
    return typing.get_args(protocol.RunSettings.model_fields[name].annotation)


# verbs that spend tokens: "uses more tokens" is cost, not the completion budget
_SPENDING = "use uses used using spend spends cost costs need needs burn burns generate generates"
_SPENDING += (
    " produce produces consume consumes emit emits take takes on"  # "train on fewer tokens"
)
_NOT_SPENT = "".join(rf"(?<!{verb}\s)" for verb in _SPENDING.split())

_FACTOR_LIST = (
    Factor(
        "lr",
        "real",
        "the learning rate",
        2e-5,
        ("learning rates?", "lr", "step sizes?", "learning_rate"),
        raised=1e-4,
        lowered=5e-6,
        alternative=1e-4,
        **_bounds(protocol.Lr),
    ),
    Factor(
        "kl_coef",
        "real",
        "the KL coefficient",
        0.0,
        (
            "kl(?: penalty| penalties| coefficient| coef| term| regulari[sz]ation| loss)?",
            "kl_coef",
            "kullback leibler(?: penalty)?",
            "beta",
        ),
        raised=0.1,
        lowered=0.0,
        alternative=0.05,
        **_bounds(protocol.KlCoef),
    ),
    Factor(
        "group_size",
        "int",
        "the GRPO group size",
        4,
        (
            "group sizes?",
            "groups? of",
            "(?:bigger|larger|smaller) groups?",
            "(?:samples|rollouts|completions|generations|responses|answers) per (?:prompt|task|question)",
            "num generations",
            # terse: "grp size", "gs=8", "g=16" (the GRPO paper's G), "n=16" (samples per prompt)
            "gro?u?ps? (?:size|sz)|group sz",
            r"gs(?= ?=? ?\d)",
            r"[gn](?= ?= ?\d+\b(?! ?(?:seeds?|runs?|replicates?|repeats?|trials?)))",
            r"n samples(?= ?=? ?\d)",
            # "how big should the group be?"
            r"(?<=the\s)groups?(?=\s(?:be|is|are|get)\b)",
        ),
        raised=8,
        lowered=2,
        alternative=8,
        **_bounds(protocol.GroupSize),
    ),
    Factor(
        "batch_groups",
        "int",
        "the number of groups per training step",
        4,
        (
            "batch sizes?",
            "batch groups",
            r"bs(?= ?(?:=|of)? ?\d)",
            "groups per (?:batch|step)",
            "grps per (?:batch|step)",
            "group per (?:batch|step)",
            "number of groups",
            "batch(?:es)? of(?= \\d+ groups)",
            "(?:prompts|tasks) per (?:batch|step|update|iteration)",
            "bigger batch(?:es)?",
            "larger batch(?:es)?",
            "smaller batch(?:es)?",
            "batch(?:es)?",  # "doubling the batch"
        ),
        raised=8,
        lowered=2,
        alternative=8,
        **_bounds(protocol.BatchGroups),
    ),
    Factor(
        "clip_eps",
        "real",
        "the PPO clipping epsilon",
        0.2,
        (
            "clip(?:ping)? eps(?:ilon)?",
            "clip(?:ping)? ranges?",
            "clip(?:ping)? ratios?",  # verl's clip_ratio
            "clip_eps",
            "ppo clip(?:ping)?",
            "clip higher",
            r"eps(?:ilon)? high",  # DAPO's upper clip (the clip here is symmetric)
            r"clip(?= (?:of |at |= ?)?\d)",  # "clip 0.3 vs clip 0.2"
            "clipping",
            "epsilon",
            "ε",
        ),
        raised=0.3,
        lowered=0.1,
        alternative=0.1,
        **_bounds(protocol.ClipEps),
    ),
    Factor(
        "weight_decay",
        "real",
        "weight decay",
        0.0,
        (
            "weight decay",
            "l2 regulari[sz]ation",
            r"l2 (?:penalty|weight penalty|reg\b)",
            r"wd(?= ?(?:=|of|\d))",
        ),
        raised=0.1,
        lowered=0.0,
        alternative=0.01,
        **_bounds(protocol.WeightDecay),
    ),
    Factor(
        "max_grad_norm",
        "real",
        "the gradient-norm clip",
        1.0,
        (
            "(?:max )?grad(?:ient)? norm(?: clip(?:ping)?)?",
            "grad(?:ient)?s? clip\\w*",
            "clip\\w* (?:the )?grad(?:ient)?s?",
            "clip norm",
        ),
        raised=10.0,
        lowered=0.1,
        alternative=0.1,
        **_bounds(protocol.MaxGradNorm),
    ),
    Factor(
        "max_staleness",
        "int",
        "the staleness limit (policy versions a sample may lag)",
        1,
        (
            "(?:max )?staleness",
            "off policy lag",
            "policy lag",
            "stale samples",
            "off policy(?:ness)?",
            # "4 versions stale", "a lag of 2 policy versions", "asynchrony"
            r"(?:policy )?versions? (?:stale|behind|of lag)",
            r"lag of(?= \d+ (?:policy )?versions?)",
            r"asynchron\w*|async(?:hronous)? (?:training|rollouts?)",
        ),
        raised=4,
        lowered=0,
        alternative=4,
        values={  # "dropping stale samples": none may lag; "keeping" them: the raised limit
            r"(?:drop\w*|discard\w*|reject\w*|filter\w* out|throw\w* away|throw\w* out|skip\w*) "
            r"(?:all |the )?stale (?:samples|rollouts|episodes|data)": 0,
            r"(?:keep\w*|allow\w*|accept\w*|us(?:e|es|ing)|train\w* on) (?:the )?stale "
            r"(?:samples|rollouts|episodes|data)": 4,
            # "fully on-policy training": no sample may lag a version
            r"(?:fully |strictly |purely |pure )?on policy(?: training| rl| updates?)?": 0,
            r"(?:fully |strictly )?synchronous(?: training| rl| updates?)?": 0,
        },
        **_bounds(protocol.MaxStaleness),
    ),
    Factor(
        "max_steps",
        "int",
        "the number of training steps",
        20,
        (
            "(?:max(?:imum)? )?(?:training )?steps",
            "max_steps",
            "train(?:ing)? (?:for )?longer",
            r"train(?:s|ing)?(?= (?:for )?(?:\d+(?:\.\d+)? ?(?:x|times)|twice|three times|half) "
            r"(?:longer|as long|shorter))",
            "more training",
            "longer runs?",
            "longer training",
            "training length",
            "step budget",
        ),
        raised=40,
        lowered=10,
        alternative=40,
        **_bounds(protocol.StepCount),
    ),
    Factor(
        "algorithm",
        "choice",
        "the advantage estimator",
        "grpo",
        ("(?:rl )?algorithms?", r"advantage estimat\w*", r"baselines? estimat\w*"),
        choices=_choices("algorithm"),
        values={
            # with the misspellings seen in questions: "GPRO", "RLO", "RLOOO"
            "grpo|gpro": "grpo",
            "rloo|rlo|rlooo": "rloo",
            # RLOO spelt out: REINFORCE with a leave-one-out baseline
            r"reinforce (?:with )?(?:an? |the )?leave one out(?: baselines?)?|"
            r"leave one out(?: baselines?)?": "rloo",
            r"reinforce(?:\+\+)?": "reinforce",
            # the plain policy gradient is REINFORCE (the advantage its own reward)
            r"(?:vanilla|plain|simple) (?:policy gradients?|pg)": "reinforce",
        },
        alternative="rloo",
    ),
    Factor(
        "merge",
        "choice",
        "how an episode's calls are merged into training sequences",
        "tree",
        ("merging", "merge", "packing"),
        choices=_choices("merge"),
        values={
            "(?:prefix )?trees?(?: merging| packing)?": "tree",
            "timelines?(?: merging)?": "timeline",
            "(?:no|without) (?:merging|packing)|unmerged|per call(?: training)?|one sample "
            "per call|merge ?[=:]? ?none|none merge": "none",
        },
        alternative="none",
    ),
    Factor(
        "zero_variance_groups",
        "choice",
        "what happens to groups whose rewards are all equal",
        "drop",
        (
            "zero variance groups?",
            "zero var groups?",
            "zero_variance_groups",
            "all equal groups?",
            "zero (?:advantage|reward variance|std) groups?",  # every advantage is 0
            # "all-correct and all-wrong groups" (DAPO's dynamic sampling filters them)
            "all correct (?:and|or|/) all (?:wrong|incorrect) groups?",
            "(?:solved|unsolved) (?:and|or) (?:unsolved|solved) groups?",
            # "all-zero reward groups", "groups that are all zero": no advantage to learn from
            "all (?:zero|0|one|1|wrong|correct|failed)(?: reward)? groups?",
            "groups? (?:that are |are |were |where |whose rewards are |with )?all (?:zero|0|one|1|the same)(?: rewards?)?",
        ),
        choices=_choices("zero_variance_groups"),
        values={
            "keep(?:ing|s)?": "keep",
            "drop(?:ping|s)?|filter(?:ing|s|ed)?(?: out)?|(?:remov|discard|skipp)(?:e|es|ed|ing)": "drop",
        },
        alternative="keep",
        values_need_name=True,
    ),
    Factor(
        "scale_rewards",
        "choice",
        "the advantage's scaling (group: the group-centred reward divided by the group's std, "
        "as GRPO; none: not divided, as Dr. GRPO)",
        "group",
        ("scale rewards",),  # TRL's name ("scale_rewards")
        choices=_choices("scale_rewards"),
        # words that name the division read as "group" ("does std normalization help?" tries
        # it against "none", as "does dropping zero-variance groups help?" tries "keep")
        values={
            "(?:group )?std normali[sz]ation": "group",
            "(?:reward|advantage) (?:std )?(?:normali[sz]ation|scaling)": "group",
            "(?:reward|advantage) whitening": "group",
            "normali[sz]ing (?:the )?(?:rewards|advantages)(?: by (?:the )?std)?": "group",
            "(?:dividing|divided|division) by (?:the )?(?:group'?s? )?std": "group",
            "std scaling": "group",
            "scal(?:e|es|ed|ing) (?:the )?(?:rewards|advantages) by (?:the )?(?:group'?s? )?std": "group",
            "(?:without|no|not) (?:the )?(?:(?:dividing|divided|division) by (?:the )?)?"
            "(?:group'?s? )?std(?: normali[sz]ation| scaling| division)?": "none",
            "(?:without|no) (?:reward|advantage) (?:std )?(?:normali[sz]ation|scaling)": "none",
            "(?:only )?(?:mean )?cent(?:r|er)(?:ed|ing)(?: only)?(?: the)?(?: rewards| advantages)?": "none",
            r"dr\.? ?grpo": "none",
            # taken away: "removing / turning off / dropping std normalization"
            "(?:remov\w*|turn\w* off|disabl\w*|drop\w*|skip\w*) (?:the )?(?:group'?s? )?"
            "std(?: normali[sz]ation| scaling| division)?": "none",
            "(?:remov\w*|turn\w* off|disabl\w*|drop\w*|skip\w*) (?:the )?(?:std )?"
            "(?:division|dividing) by (?:the )?(?:group'?s? )?std": "none",
            "scale rewards ?(?:=|to|of)? ?[\"']?group": "group",
            "scale rewards ?(?:=|to|of)? ?[\"']?none": "none",
            # TRL's booleans: scale_rewards=False is no std division
            "scale rewards ?(?:=|to)? ?(?:false|off|no)": "none",
            "scale rewards ?(?:=|to)? ?(?:true|on|yes)": "group",
        },
        alternative="none",
    ),
    Factor(
        "partial_groups",
        "choice",
        "what happens to groups a crashed client left incomplete",
        "train",
        ("partial groups?", "partial_groups", "incomplete groups?"),
        choices=_choices("partial_groups"),
        values={"train(?:ing)? on|keep(?:ing|s)?": "train", "drop(?:ping|s)?": "drop"},
        alternative="drop",
        values_need_name=True,
    ),
    Factor(
        "lora",
        "lora",
        'LoRA adapters ("full": every parameter trained)',
        "full",
        ("lora rank", "lora r", "ranks?", "adapter rank"),
        low=1,
        high=4096,
        values={
            "full(?: parameter)? fine ?tun(?:ing|e)|full(?: parameter)? training|full parameters?": "full",
            "(?:q)?lora|low rank(?: adapters?| adaptation)?|adapters?|peft|parameter efficient(?: fine ?tuning)?": 16,
        },
        raised=64,
        lowered=4,
        alternative=16,
    ),
    Factor(
        "temperature",
        "real",
        "the rollout sampling temperature",
        1.0,
        # "sampling at 0.3 instead of 0.7": a temperature by its number
        ("(?:sampling |rollout )?temperatures?", "temp", r"t(?= ?= ?\d)", r"sampl\w*(?= at \d)"),
        values={r"greedy(?: sampling| decoding| rollouts?)?": 0.0},
        where="workflow_params",
        low=0.0,
        high=2.0,
        raised=1.2,
        lowered=0.7,
        alternative=0.7,
    ),
    Factor(
        "max_tokens",
        "int",
        "the completion budget per model call (max_tokens)",
        TASK_DEFAULT,
        (
            "max(?:imum)? (?:new |completion )?tokens",
            "max_tokens",
            "(?:max(?:imum)? )?completion lengths?",
            "(?:max(?:imum)? )?(?:response|generation|output) lengths?",
            "token budgets?",
            r"(?:generation|completion|response|output) (?:length )?(?:limits?|caps?)",
            r"truncat\w* at(?= \d+ tokens)",
            "(?:completion|generation|response|output|answer) budgets?",
            "token (?:limits?|caps?|budgets?)",
            # "do more tokens help?": the budget, unless the tokens are spent ("uses more
            # tokens" is cost)
            _NOT_SPENT
            + "(?:more|fewer|extra) (?:completion |generation |output |response )?tokens",
            "(?:longer|shorter) (?:completions|responses|answers|outputs)",
            # "giving the model 256 tokens instead of 128": a number of tokens set against
            # another is the budget
            r"(?<=\d\s)tokens(?= (?:instead of|rather than|vs\.?|versus|over|not) \d)",
            r"(?<=\d\s)tokens(?= per (?:completion|response|answer|generation|call))",
            # "how many tokens should I allow per completion?" (allowed, not spent: "how many
            # tokens per completion does RLOO use" is cost)
            r"(?<=how\smany\s)tokens(?=(?:\s\w+){0,8}?\s(?:allow\w*|giv\w*|need\w*|permit\w*)\b)"
            r"(?=(?:\s\w+){0,5}\s(?:per|for each|for every|in each|in an?|an?) "
            r"(?:completion|response|answer|generation|model call|call|reply)\b)",
            # "how many tokens per completion?": the budget, unless they are spent ("how many
            # tokens per completion does RLOO use?" is cost)
            r"(?<=how\smany\s)tokens(?=\s(?:per|for each|in each|in an?|does each|do|does) "
            r"(?:\w+\s)?(?:completion|response|answer|generation|reply)s?\b)"
            r"(?!(?:\s\w+){0,6}?\s(?:use|uses|used|using|spend\w*|generat\w*|consum\w*|produc\w*|"
            r"cost\w*|emit\w*|output\w*)\b)",
            r"(?<=how\smany\s)(?:completion|response|output|generation|answer)\stokens"
            r"(?=(?:\s\w+){0,5}?\s(?:allow\w*|giv\w*|need\w*|permit\w*)\b)",
            # "capping completions at 32 tokens", "limiting responses to 32 tokens"
            r"(?:limit\w*|capp?(?:ed|ing|s)?|restrict\w*|truncat\w*) (?:the )?(?:model'?s )?"
            r"(?:completions?|responses?|answers?|outputs?|generations?|replies|reply)",
        ),
        where="workflow_params",
        low=1,
        high=protocol.MAX_TOKENS,
    ),
    Factor(
        "max_turns",
        "int",
        "the guessing game's turn budget (guesses per game)",
        None,  # None: each game's own budget, enough for a binary search (5 to 8)
        (
            "(?:max )?turns",
            "max_turns",
            "turn (?:budget|limit)s?",
            "number of (?:turns|guesses)",
            "guesses(?: per game)?",
            "guess budget",
        ),
        where="workflow_params",
        low=1,
        high=100,
        raised=12,
        lowered=2,
        alternative=2,
    ),
    Factor(
        "task_mix",
        "task_mix",
        "the task mix",
        None,
        (
            "mix(?:es|ed|ing)?(?: in)?",
            "mixtures?",
            "multi ?task(?: training| learning| mixing)?",
            "task mix(?:ing|ture)?",
            "combin(?:e|es|ed|ing) (?:the |two |several )?tasks",
            "cocktail(?: of tasks)?",
            "co ?training",
            # "30% of the batch is countdown": a share of the training data is a mix
            "(?:(?:(?:a|one|two|three) )?(?:half|thirds?|quarters?|fifths?|tenths?) )?of "
            "(?:the |each |every |our |a )?(?:batch(?:es)?|data|prompts|episodes|training "
            "data|training) (?:is|are|comes? from|drawn from|from|being)",
            "joint training",
            "train(?:ing)? on (?:both|several|two|multiple) tasks",
            r"jointly on (?:both |several |two |multiple |many |all )?(?:the )?tasks",
            r"(?:several|multiple|many|two) tasks? at (?:the )?same time",
        ),
        where="tasks",
    ),
    Factor(
        "base_model",
        "base_model",
        "the base model",
        None,
        (
            "model sizes?",
            "size of the model",
            "(?:bigger|larger|smaller|different) (?:base )?models?",
            "scal(?:e|ing)(?: up)? the model",
            "model scale",
            "parameter count",
            "base models?",
        ),
    ),
)
FACTORS: dict[str, Factor] = {factor.name: factor for factor in _FACTOR_LIST}
WORKFLOW_PREFIX = "workflow:"


def describe_level(factor: str, level: Level) -> str:
    """A level in words: "0.5", "full", "r=16", "arithmetic 50% + calculator 50%"."""
    if factor == "task_mix" and isinstance(level, dict):
        return " + ".join(f"{task} {weight:.0%}" for task, weight in level.items())
    if factor == "lora" and isinstance(level, int):
        return f"r={level}"
    if factor == "max_turns" and level is None:
        return "each game's own budget"
    if isinstance(level, float):
        return f"{level:g}"
    if isinstance(level, str) and factor.startswith(WORKFLOW_PREFIX):
        return repr(level if len(level) <= 60 else level[:57] + "...")
    return str(level)


# -- validating a reading -----------------------------------------------------------------


def _same(a: Level, b: Level) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def distinct_levels(levels: list[Level]) -> list[Level]:
    """`levels` without repeats (5e-6 and 0.000005 are one level), in order."""
    kept: list[Level] = []
    for level in levels:
        if not any(_same(level, seen) for seen in kept):
            kept.append(level)
    return kept


def _check_level(factor: Factor, level: Level, served: list[str]) -> Level:
    """The level, normalised (an integral float of an int factor becomes an int), or a
    ResearcherError naming what is wrong with it."""
    name = factor.name
    if factor.kind == "lora" and isinstance(level, dict) and set(level) <= {"r", "alpha"}:
        level = level.get("r")  # {"r": 16, "alpha": 32}, as POST /runs takes it: the rank
    if factor.kind in ("real", "int") or (factor.kind == "lora" and level != "full"):
        if factor.name == "max_turns" and level is None:
            return None
        if isinstance(level, bool) or not isinstance(level, int | float):
            expected = "a number" if factor.kind == "real" else "a whole number"
            if factor.kind == "lora":
                expected = '"full" or a LoRA rank (a whole number)'
            raise ResearcherError(f"{name} level {level!r} is not {expected}")
        if factor.kind != "real":
            if isinstance(level, float) and not level.is_integer():
                raise ResearcherError(f"{name} level {level:g} is not a whole number")
            level = int(level)
        if not factor.in_bounds(float(level)):
            raise ResearcherError(
                f"{name} level {level:g} is out of bounds: {name} must be {factor.bounds_text()}"
            )
        return level
    if factor.kind in ("choice", "lora"):
        allowed = factor.choices or ("full",)
        if level not in allowed:
            raise ResearcherError(
                f"{name} level {level!r} is not one of {', '.join(map(repr, allowed))}"
            )
        return level
    if factor.kind == "task_mix":
        if not isinstance(level, dict) or not level:
            raise ResearcherError(f"task_mix level {level!r} is not a {{task: weight}} mix")
        unknown = sorted(t for t in level if not is_task(t))
        if unknown:
            raise ResearcherError(
                f"task_mix level {level!r} names {', '.join(unknown)}, not a shipped task "
                f"({tasks_in_words()})"
            )
        try:
            protocol.check_task_mix({k: float(v) for k, v in level.items()})
        except (TypeError, ValueError) as error:
            raise ResearcherError(f"task_mix level {level!r}: {error}") from None
        return {k: float(v) for k, v in level.items()}
    if factor.kind == "base_model":
        if level not in served:
            raise ResearcherError(
                f"base_model level {level!r} is not served (served: {', '.join(served) or 'none'})"
            )
        return level
    raise AssertionError(factor.kind)


def _check_param_level(key: str, default: Any, level: Level) -> Level:
    """A workflow PARAMS level: of its default's type (any type when the default is None)."""
    if default is None or level is None:
        return level
    expected = type(default)
    if expected is float and isinstance(level, int) and not isinstance(level, bool):
        return float(level)
    if not isinstance(level, expected) or (expected is int and isinstance(level, bool)):
        raise ResearcherError(
            f"workflow:{key} level {level!r} is not a {expected.__name__} like its "
            f"default {default!r}"
        )
    sampling = FACTORS.get(key.lower()) if key.lower() in ("temperature", "max_tokens") else None
    if sampling is not None and isinstance(level, int | float) and not sampling.in_bounds(level):
        # the workflow passes it to the policy's chat call: the gateway would refuse every one
        raise ResearcherError(
            f"workflow:{key} level {level:g} is out of bounds: as the policy's sampling "
            f"{key.lower()} it must be {sampling.bounds_text()}"
        )
    return level


def check_reading(
    reading: Reading, *, served_models: list[str], workflow_params: dict[str, Any] | None = None
) -> Reading:
    """`reading` checked against the catalogue and returned normalised (levels of int
    factors as ints, the control first); a ResearcherError names the first problem."""
    task = reading.task
    if workflow_params is not None:
        if task != WORKFLOW_TASK:
            raise ResearcherError(
                f"task {task!r}: a study of your own workflow judges task {WORKFLOW_TASK!r}"
            )
    elif not is_task(task):
        raise ResearcherError(
            f"task {task!r} is not a shipped task ({tasks_in_words()}); study your own agent "
            f"with --workflow FILE"
        )
    for named in reading.tasks:
        if not is_task(named) and named != WORKFLOW_TASK:
            raise ResearcherError(f"tasks names {named!r}, not a shipped task ({tasks_in_words()})")
    levels = list(reading.levels)
    if reading.factor.startswith(WORKFLOW_PREFIX):
        key = reading.factor[len(WORKFLOW_PREFIX) :]
        if workflow_params is None or key not in workflow_params:
            declared = ", ".join(workflow_params or {}) or "none"
            raise ResearcherError(
                f"factor {reading.factor!r}: the workflow declares no PARAMS key {key!r} "
                f"(declared: {declared})"
            )
        levels = [_check_param_level(key, workflow_params[key], level) for level in levels]
        control = _check_param_level(key, workflow_params[key], reading.control)
    else:
        factor = FACTORS.get(reading.factor)
        if factor is None:
            known = ", ".join([*FACTORS, "workflow:<PARAM>"])
            raise ResearcherError(f"unknown factor {reading.factor!r}; known: {known}")
        if factor.name == "max_turns" and task != "guess_number":
            raise ResearcherError(
                f"max_turns is a setting of the guessing game only (task guess_number), "
                f"not of {task!r}"
            )
        if factor.name == "task_mix" and task == WORKFLOW_TASK:
            raise ResearcherError("task_mix mixes shipped tasks; a workflow study has one task")
        served = list(served_models)
        levels = [_check_level(factor, level, served) for level in levels]
        control = _check_level(factor, reading.control, served)
    levels = distinct_levels(levels)
    if len(levels) < 2:
        raise ResearcherError(
            f"{reading.factor} needs at least two distinct levels to compare (got {levels!r})"
        )
    if not any(_same(control, level) for level in levels):
        raise ResearcherError(f"the control {control!r} is not one of the levels {levels!r}")
    levels = [control] + [level for level in levels if not _same(level, control)]
    if reading.direction in MARGIN_DIRECTIONS:
        if reading.margin is None or not reading.margin > 0:
            raise ResearcherError(f"a {reading.direction} question needs a positive margin")
    elif reading.margin is not None:
        raise ResearcherError(
            f"margin {reading.margin} is set but direction is {reading.direction!r}: a margin "
            f"belongs to an equivalence or non-inferiority test only"
        )
    if reading.threshold is not None and reading.outcome != "learning_speed":
        raise ResearcherError("a threshold belongs to the learning_speed outcome only")
    if reading.steps is not None and reading.steps < 1:
        raise ResearcherError(f"steps must be at least 1 (got {reading.steps})")
    tasks = list(dict.fromkeys([task, *reading.tasks]))
    for family, level in reading.task_levels.items():
        if family not in tasks:
            raise ResearcherError(f"task_levels names {family!r}, which is not among the tasks")
        task_params(family, level)
    return reading.model_copy(update={"levels": levels, "control": control, "tasks": tasks})


# -- words for the outcome and the direction (regex fragments, matched in this order) -----

OUTCOME_WORDS: tuple[tuple[str, str], ...] = (
    (
        "cost",
        # not "does it cost accuracy", "cost more than 2 points": a loss of accuracy
        r"cheap\w*|costs?(?!(?: (?:us|me|any|much|nothing|no|in|more than|over|at least|[\d.]+|points?|"
        r"percentage|of|the|some|a|few|#+))* ?(?:accuracy|points?|performance|rewards?|scores?)\b)|"
        r"costl\w*|expensive|wall[\s-]?(?:clock|time)|(?<!\d\s)(?<!per[\s-])tokens?(?![\s-]level)|compute|"
        r"gpu[\s-]hours?|throughput|time per step|training time|faster to train|"
        r"(?:training|wall[\s-]?clock) speed|speed of training|steps per (?:second|minute|hour)|"
        r"sav(?:e|es|ed|ing) (?:\w+ )?time|(?:takes?|took|needs?) less time|"
        r"(?:takes?|took|taking|needs?) (?:longer|more time|less time) to train|"
        r"slower to train|train(?:s|ing)? (?:(?:my|our|the|a|this|your) [\w-]+ )?(?:faster|slower|quicker)|"
        r"speeds? up (?:the )?training|slows? down (?:the )?training|"
        r"(?:slows?|speeds?) (?:the )?training (?:down|up)\b",
    ),
    (
        "learning_speed",
        r"learn\w*\b.{0,40}?\b(?:faster|slower|quicker|sooner|more (?:quickly|slowly))|"
        r"(?:slows?|slowed|slowing|slower)(?: down)? (?:the )?(?:learning|convergence)|"
        r"speeds? up (?:the )?(?:learning|convergence)|sample[\s-]efficien\w*|"
        r"how (?:quickly|fast|soon) (?:the )?(?:training )?(?:rewards?|accuracy|scores?) "
        r"(?:climbs?|rises?|grows?|goes up|improves?|increases?)|"
        r"speeds? (?:it|that|this|things) up|slows? (?:it|that|this|things) down|"
        r"learning speed|speed of learning|(?:faster|slower|quicker) (?:learning|convergence)|"
        r"converge\w* (?:faster|slower|sooner)|how (?:many|much) (?:training )?steps|"
        r"steps to (?:learn|reach|converge)|learn\w* (?:\w+ )?(?:as )?(?:quickly|fast)|"
        r"as (?:fast|quickly) as|(?:as |more |less )?(?:fast|quick|slow)(?:er)? to learn|"
        r"area under (?:the )?(?:training[\s-])?(?:reward[\s-])?(?:learning[\s-])?curve|\bauc\b|"
        r"(?:slow|fast|quick)\w* to converge|(?:longer|more (?:training )?steps|fewer (?:training )?"
        r"steps) (?:than [^?.,;]{1,30}? )?to (?:converge|reach|learn|get to)|sluggish|"
        r"(?:how much |\bmuch )(?:faster|quicker|slower|sooner)\b.{0,40}?\blearn\w*|"
        r"(?:no|not) (?:slower|later) than|delay\w* (?:reaching|getting|hitting|learning|"
        r"convergence)|"
        # "grp size 8 vs 4 in 30 steps - faster?": a comparison over steps, then the word
        r"\bsteps?\s*[-–—:,]\s*(?:is it |which is )?(?:faster|quicker|sooner|slower)\b",
    ),
    (
        "final_train_reward",
        r"train(?:ing)? rewards?|final rewards?|rewards? during training|train(?:ing)? scores?|"
        r"rewards? at the end(?: of training)?|end[\s-]of[\s-]training rewards?",
    ),
)
EQUIVALENT_WORDS = (
    # not "twice as fast as", "3x as fast as": a multiple is a difference
    r"(?<!twice )(?<!times )(?<!x )as (?:good|well|accurate|fast|effective|strong|cheap|quickly|"
    r"(?:sample[\s-])?efficient) as|match(?:es|ed|ing)?|competitive with|"
    r"equally (?:good|well|fast|quick\w*|sample[\s-]efficient|efficient|accurate|effective|strong)|"
    r"at least as (?:good|accurate|effective|strong)\b|"
    r"as (?:fast|quick|easy) to (?:learn|train) as|"
    r"same as|the same (?:#+ )?(?:held[\s-]?out )?(?:accuracy|results?|performance|reward|score)|"
    r"keeps? (?:the )?(?:[\w-]+ ){0,2}(?:accuracy|results?|performance|rewards?|scores?) (?:the same|unchanged)|no worse|not worse|comparabl\w*|on par|equivalent\w*|just as|"
    r"indistinguishable|keeps? up with|loses? (?:nothing|no accuracy)|suffic\w*|"
    r"(?:do|does|did|perform\w*|work\w*|learn\w*|train\w*|scor\w*) (?:just |about )?as well\b|"
    r"as well as\b(?! (?:#|on|for|in)\b)|as (?:well|good)[\s-](?:suited|fit\w*|matched) (?:as|to)\b|\bas (?:good|accurate|effective|strong)\b(?! as)|"
    r"costs? (?:us |me )?nothing|"
    r"without (?:hurting|harming|losing|degrading|costing)|get away with|safe to (?:use|cut|drop)|"
    r"(?:is|are|be) (?:[\w#.-]+ ){0,2}?safe\b|"
    r"los(?:e|es|ing) (?:no more than|not more than|at most|less than)|"
    r"(?:good )?enough|no difference|irrelevant|(?:does ?n[o']?t|doesn't|not) matter|"
    r"(?:doesn't|don't|didn't|not|never) (?:hurt|harm|degrad|worsen|slow)\w*|"
    r"(?:no|not|never) (?:slower|later)\b|"
    r"non[\s-]?inferior\w*|harmless|neither better nor worse|no different|not (?:significantly |"
    r"meaningfully |statistically )?different|(?:does ?n[o']?t|not|never) make (?:a|any) difference|"
    r"similar (?:[\w-]+ )?(?:accuracy|results?|performance|rewards?|scores?)|(?:about|roughly) the same"
)
GREATER_WORDS = (
    r"help\w*|improv\w*|better|boost\w*|speeds? up|faster|quicker|sooner|outperform\w*|"
    r"beneficial|advantageous|"
    r"(?:twice|\d+x|\w+ times) as (?:fast|quick\w*)|speeds? (?:\w+ )?up|go(?:es)? up|"
    # "does 8 groups per step fix it?", "do 40 steps get us further?", "does it replicate?"
    r"(?:fix|solve|cure)s? (?:it|this|that|the (?:collapse|problem|issue|plateau|instability|"
    r"degradation|drop))\b|(?:gets?|take)s? (?:us |me |it )?further|replicat\w*|"
    r"beats?|benefit\w*|gains?|higher (?:[\w-]+ ){0,2}(?:accuracy|rewards?|scores?|pass ?@)|"
    r"more accurate|"
    r"(?:increas|rais)\w* (?:the )?(?:[\w'’-]+ ){0,3}(?:accuracy|rewards?|scores?)|"
    r"(?:increas|rais)\w* (?:the )?(?:auc|area under)\b|"
    r"stronger|superior|worth it|worthwhile|useful|more (?:[\w-]+[ -])?efficient|"
    r"easier to (?:learn|train)|"
    r"break\w* (?:through|out of|past)|break\w* (?:the |a )?plateau|unstick\w*|"
    r"(?:accuracy|rewards?|scores?)\b[^?.]{0,30}?\b(?:higher|better)\b|"
    r"(?:accuracy|rewards?|scores?) (?:is |are |gets? )?(?:higher|better)|"
    r"(?:area|auc|curve)\b[^?.]{0,30}?\b(?:larger|bigger|higher|greater)\b"
)
LESS_WORDS = (
    r"hurt\w*|harm\w*|worse|degrad\w*|slow\w*|damag\w*|sluggish|(?:takes?|took|taking|needs?) longer|"
    r"delay\w*|(?:prevent|stop|keep|block)\w* (?:\w+ ){0,2}from (?:learning|improving)|"
    r"lower (?:the )?(?:final |training |held[- ]out |test )*(?:accuracy|reward|score)|"
    r"lower (?:my |our |the |its )(?:[\w'’-]+ ){0,3}(?:accuracy|rewards?|scores?)|"
    r"reduc\w* (?:the )?(?:final |training |held[- ]out |test )*(?:accuracy|reward|score|performance)|"
    r"cheaper|cuts?|cutting|sav(?:e|es|ing)|"
    r"(?:cost(?:s|ing)?|los(?:e|es|ing)) (?:(?:us|me|any|much|more than|over|at least|[\d.]+|points?|percentage|of|"
    r"the|some|a|few|#+) )*(?:accuracy|points?|performance|rewards?|scores?)\b|"
    r"less (?:[\w-]+[ -])?(?:accurate|efficient)|destabili[sz]\w*|break\w*(?! (?:through|out|past|the plateau|a plateau))|weaker|inferior|"
    r"underperform\w*|fall\w* behind|lag\w* behind|"
    r"(?:harder|more difficult|tougher) to (?:learn|train)|"
    r"(?:accuracy|rewards?|scores?) (?:is |are |gets? )?(?:lower|worse)|"
    # "does chain_sum accuracy drop?", "make accuracy fall" (not "without an accuracy drop")
    r"(?<!an )(?<!no )(?<!any )(?:accuracy|rewards?|scores?|performance) (?:drop|fall|declin|"
    r"decreas|go(?:es)? down|suffer)\w*\b(?! (?:of|by|after|before|at|around|when|once|past|"
    r"beyond|from|since|in|during)\b)|"
    r"too (?:high|low|large|small|big|strong|weak|much|little|long|short)"
)
TWO_SIDED_WORDS = (
    r"matter\w*|differ\w*|chang\w*|affect\w*|what does|what do|effects?|impacts?|influenc\w*|"
    r"sensitiv\w*|which|best|optimal|compar\w*|\bvs\b|versus|or not|how does|how do|role of"
)
# any direction word at all: whether a clause says which way (or that) an outcome moves
DIRECTION_WORDS = rf"\b(?:{GREATER_WORDS}|{LESS_WORDS}|{EQUIVALENT_WORDS}|{TWO_SIDED_WORDS})"
