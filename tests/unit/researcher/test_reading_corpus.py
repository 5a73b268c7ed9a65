"""The template reader reads each question of a corpus as the question asks: its factor, its
levels (control first), its task, its outcome, its direction and margin — and refuses the
questions it must refuse, saying why. Every question quoted in README.md, docs/ and the old
planner's family examples is in the corpus and reads (is not refused)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from researcher.errors import NotAboutTraining, UnmappableQuestion, UnreadableQuestion
from researcher.planner.reader import read_question

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOL_360 = "HuggingFaceTB/SmolLM2-360M-Instruct"
QWEN_7B = "Qwen/Qwen2.5-7B-Instruct"
ONE = [SMOL]
TWO = [SMOL, SMOL_360]
THREE = [QWEN_7B, SMOL_360, SMOL]
ROOT = Path(__file__).resolve().parents[3]
MIX = {"arithmetic": 0.5, "calculator": 0.5}
ARITH = {"arithmetic": 1.0}


class Q(NamedTuple):
    question: str
    factor: str
    levels: list[Any]  # control first
    task: str
    outcome: str = "heldout_accuracy"
    direction: str = "greater"
    margin: float | None = None
    extra: dict[str, Any] = {}  # other Reading fields to check: tasks, steps, threshold
    served: list[str] = ONE


H, LS, TR, COST = "heldout_accuracy", "learning_speed", "final_train_reward", "cost"
G, L, TWO_SIDED, EQ = "greater", "less", "two_sided", "equivalent"

CORPUS: list[Q] = [
    # -- the examples -----------------------------------------------------------------
    Q(
        "does a KL penalty of 0.5 slow learning on the easy single-turn task?",
        "kl_coef",
        [0.0, 0.5],
        "learnable",
        LS,
        L,
    ),
    Q(
        "does a larger GRPO group size (8 vs 2) help on arithmetic?",
        "group_size",
        [2, 8],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "is LoRA as good as full fine-tuning on the easy task?",
        "lora",
        ["full", 16],
        "learnable",
        H,
        EQ,
        0.05,
    ),
    Q(
        "does mixing in the tool-use task hurt held-out arithmetic?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        L,
        extra={"tasks": ["arithmetic", "calculator"]},
    ),
    Q(
        "does temperature 1.2 during rollouts help exploration on guess_number?",
        "temperature",
        [1.0, 1.2],
        "guess_number",
        H,
        G,
    ),
    Q(
        "does clipping epsilon 0.1 vs 0.3 matter for arithmetic?",
        "clip_eps",
        [0.1, 0.3],
        "arithmetic",
        H,
        TWO_SIDED,
    ),
    Q(
        "how many training steps does SmolLM2 need to learn to say banana?",
        "max_steps",
        [10, 20, 40],
        "learnable",
        H,
        G,
    ),
    Q("does multi-task mixing help 7B?", "task_mix", [ARITH, MIX], "arithmetic", H, G),
    Q(
        "does RLOO learn arithmetic as well as GRPO within 20 steps?",
        "algorithm",
        ["grpo", "rloo"],
        "arithmetic",
        LS,
        EQ,
        0.05,
        {"steps": 20},
    ),
    # -- README, docs and the old planner's family examples ---------------------------------
    Q("does multi-task mixing help?", "task_mix", [ARITH, MIX], "arithmetic", H, G),
    Q(
        "does mixing calculator into arithmetic training help?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        G,
    ),
    Q("do more turns help in multi-turn training?", "max_turns", [None, 12], "guess_number", H, G),
    Q(
        "does a longer turn budget help guess_number?",
        "max_turns",
        [None, 12],
        "guess_number",
        H,
        G,
    ),
    Q("is LoRA as good as full fine-tuning?", "lora", ["full", 16], "arithmetic", H, EQ, 0.05),
    Q("does a KL penalty help?", "kl_coef", [0.0, 0.05], "arithmetic", H, G),
    Q("what does kl_coef do to arithmetic?", "kl_coef", [0.0, 0.1], "arithmetic", H, TWO_SIDED),
    Q("does a bigger GRPO group size help?", "group_size", [4, 8], "arithmetic", H, G),
    Q("group size 4 vs 8 on arithmetic?", "group_size", [4, 8], "arithmetic", H, TWO_SIDED),
    Q("does a higher learning rate help?", "lr", [2e-5, 1e-4], "arithmetic", H, G),
    Q("lr 1e-4 vs 2e-5 on arithmetic?", "lr", [2e-5, 1e-4], "arithmetic", H, TWO_SIDED),
    Q("is RLOO better than GRPO?", "algorithm", ["grpo", "rloo"], "arithmetic", H, G),
    Q("GRPO vs PPO on arithmetic?", "algorithm", ["grpo", "rloo"], "arithmetic", H, TWO_SIDED),
    Q(
        "do bigger models learn arithmetic faster?",
        "base_model",
        [SMOL, SMOL_360],
        "arithmetic",
        LS,
        G,
        served=TWO,
    ),
    Q(
        "135M vs 360M on arithmetic?",
        "base_model",
        [SMOL, SMOL_360],
        "arithmetic",
        H,
        TWO_SIDED,
        served=TWO,
    ),
    # -- the old planner's test questions ------------------------------------------------------
    Q("Is a cocktail of tasks better than one task?", "task_mix", [ARITH, MIX], "arithmetic", H, G),
    Q(
        "Should I combine tasks when training?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        TWO_SIDED,
    ),
    Q("What group size is best for GRPO?", "group_size", [4, 2, 8], "arithmetic", H, TWO_SIDED),
    Q("Does a KL penalty help on guess_number?", "kl_coef", [0.0, 0.05], "guess_number", H, G),
    Q("Does giving the model more guesses help?", "max_turns", [None, 12], "guess_number", H, G),
    # -- what the old planner misread ---------------------------------------------------------
    Q(
        "does a learning rate of 5e-6 learn the guessing game faster than 0.00002?",
        "lr",
        [2e-5, 5e-6],
        "guess_number",
        LS,
        G,
    ),
    Q(
        "do learning rates 1e-6, 1e-5 and 1e-4 change held-out arithmetic accuracy?",
        "lr",
        [1e-6, 1e-5, 1e-4],
        "arithmetic",
        H,
        TWO_SIDED,
    ),
    Q(
        "is max_staleness 4 as good as 1 on the easy task?",
        "max_staleness",
        [1, 4],
        "learnable",
        H,
        EQ,
        0.05,
    ),
    Q(
        "does training with 8 groups per batch instead of 4 help on arithmetic?",
        "batch_groups",
        [4, 8],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does tree merging cut the wall time of training on the guessing game compared with no merging?",
        "merge",
        ["none", "tree"],
        "guess_number",
        COST,
        L,
    ),
    Q(
        "does RLOO reach a higher training reward than GRPO on the calculator task?",
        "algorithm",
        ["grpo", "rloo"],
        "calculator",
        TR,
        G,
    ),
    # -- numbers as written ---------------------------------------------------------------------
    Q(
        "does a five times larger learning rate help arithmetic?",
        "lr",
        [2e-5, 1e-4],
        "arithmetic",
        H,
        G,
    ),
    Q("does twice the group size help?", "group_size", [4, 8], "arithmetic", H, G),
    Q(
        "does halving the learning rate hurt the guessing game?",
        "lr",
        [2e-5, 1e-5],
        "guess_number",
        H,
        L,
    ),
    Q(
        "does doubling the batch size speed up learning on arithmetic?",
        "batch_groups",
        [4, 8],
        "arithmetic",
        LS,
        G,
    ),
    Q(
        "does LoRA r=4, 16 and 64 matter on the easy task?",
        "lora",
        [4, 16, 64],
        "learnable",
        H,
        TWO_SIDED,
    ),
    Q("does lr 3e-4 help on math?", "lr", [2e-5, 3e-4], "arithmetic", H, G),
    Q("does a learning rate of 0.000005 help?", "lr", [2e-5, 5e-6], "arithmetic", H, G),
    Q("does a learning rate of 5e-6 help?", "lr", [2e-5, 5e-6], "arithmetic", H, G),
    Q("does lr 5e-6 vs 0.000005 differ?", "lr", [2e-5, 5e-6], "arithmetic", H, TWO_SIDED),
    Q(
        "is REINFORCE worse than GRPO on word problems?",
        "algorithm",
        ["grpo", "reinforce"],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does a KL coefficient of 0.1 reduce accuracy on sums?",
        "kl_coef",
        [0.0, 0.1],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does lr 1e-7 and 2e-5 matter for the number game?",
        "lr",
        [2e-5, 1e-7],
        "guess_number",
        H,
        TWO_SIDED,
    ),
    Q("does max tokens 128 vs 64 help arithmetic?", "max_tokens", [64, 128], "arithmetic", H, G),
    Q(
        "does a longer completion length help the calculator task?",
        "max_tokens",
        [96, 192],
        "calculator",
        H,
        G,
    ),
    Q("does weight decay help on arithmetic?", "weight_decay", [0.0, 0.01], "arithmetic", H, G),
    Q("does gradient clipping at 0.5 help?", "max_grad_norm", [1.0, 0.5], "arithmetic", H, G),
    Q(
        "does off-policy lag of 4 hurt learning speed on arithmetic?",
        "max_staleness",
        [1, 4],
        "arithmetic",
        LS,
        L,
    ),
    Q(
        "does keeping zero-variance groups help?",
        "zero_variance_groups",
        ["drop", "keep"],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does the sampling temperature matter on the easy task?",
        "temperature",
        [1.0, 0.7],
        "learnable",
        H,
        TWO_SIDED,
    ),
    Q(
        "is temperature 0.7 as good as 1.0 within 3 points on arithmetic?",
        "temperature",
        [1.0, 0.7],
        "arithmetic",
        H,
        EQ,
        0.03,
    ),
    Q(
        "how many steps does RLOO need to learn arithmetic compared with GRPO?",
        "algorithm",
        ["grpo", "rloo"],
        "arithmetic",
        LS,
        TWO_SIDED,
        extra={"threshold": 0.8},
    ),
    Q(
        "does a larger group size at the same batch size help?",
        "group_size",
        [4, 8],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does training on calculator help held-out arithmetic?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        G,
        extra={"tasks": ["arithmetic", "calculator"]},
    ),
    Q(
        "does mixing 25% calculator into arithmetic hurt?",
        "task_mix",
        [ARITH, {"arithmetic": 0.75, "calculator": 0.25}],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does a 70/30 mix of arithmetic and calculator help?",
        "task_mix",
        [ARITH, {"arithmetic": 0.7, "calculator": 0.3}],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does training for 100 steps instead of 50 help on arithmetic?",
        "max_steps",
        [50, 100],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does training longer help on the guessing game?",
        "max_steps",
        [20, 40],
        "guess_number",
        H,
        G,
    ),
    Q("does the learning rate matter?", "lr", [2e-5, 1e-4], "arithmetic", H, TWO_SIDED),
    Q("does lr 2e-5 vs 1e-4 make training cheaper?", "lr", [2e-5, 1e-4], "arithmetic", COST, L),
    Q(
        "does merging timelines make training faster?",
        "merge",
        ["tree", "timeline"],
        "arithmetic",
        COST,
        L,
    ),
    Q(
        "does the tool use task benefit from 8 samples per prompt?",
        "group_size",
        [4, 8],
        "calculator",
        H,
        G,
    ),
    Q(
        "does mixing in the guessing game help the calculator task?",
        "task_mix",
        [{"calculator": 1.0}, {"calculator": 0.5, "guess_number": 0.5}],
        "calculator",
        H,
        G,
    ),
]

REFUSALS: list[tuple[str, type[UnmappableQuestion], str]] = [
    ("what is the capital of France?", NotAboutTraining, "not a question about training"),
    ("write me a poem", NotAboutTraining, "not a question about training"),
    ("hello", NotAboutTraining, "not a question about training"),
    ("asdf qwer zxcv", NotAboutTraining, "not a question about training"),
    ("Which GPU should I buy?", NotAboutTraining, "not a question about training"),
    ("does the model learn better?", UnreadableQuestion, "no run setting or task named"),
    ("does lr 5 help on arithmetic?", UnreadableQuestion, "lr must be > 0 and <= 1"),
    ("does group size 2.5 help?", UnreadableQuestion, "not a whole number"),
    ("does clip range 1.5 help?", UnreadableQuestion, "clip_eps must be > 0 and < 1"),
    ("does a larger group size and a smaller lr help?", UnreadableQuestion, "varies one at a time"),
    ("does countdown benefit from a KL penalty?", UnreadableQuestion, "'countdown' is not a task"),
    ("do bigger models learn arithmetic faster?", UnreadableQuestion, "serve at least two"),
]


def _check(reading: Any, case: Q) -> None:
    got = {
        "factor": reading.factor,
        "levels": reading.levels,
        "control": reading.control,
        "task": reading.task,
        "outcome": reading.outcome,
        "direction": reading.direction,
        "margin": reading.margin,
    }
    want = {
        "factor": case.factor,
        "levels": case.levels,
        "control": case.levels[0],
        "task": case.task,
        "outcome": case.outcome,
        "direction": case.direction,
        "margin": case.margin,
    }
    for key, value in case.extra.items():
        got[key] = getattr(reading, key)
        want[key] = value
    assert got == want, f"{case.question!r}: {reading.assumptions}"
    assert [type(level) for level in reading.levels] == [type(level) for level in case.levels]


@pytest.mark.parametrize("case", CORPUS, ids=[case.question for case in CORPUS])
def test_each_question_of_the_corpus_reads_as_asked(case: Q) -> None:
    reading = read_question(case.question, served_models=case.served)
    _check(reading, case)
    assert reading.summary and reading.summary.endswith(".")


@pytest.mark.parametrize(("question", "error", "says"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_questions_that_must_be_refused_are_refused_saying_why(
    question: str, error: type[UnmappableQuestion], says: str
) -> None:
    with pytest.raises(error) as raised:
        read_question(question, served_models=ONE)
    assert says in str(raised.value)


def test_the_corpus_holds_at_least_150_questions() -> None:
    assert len(CORPUS) + len(REFUSALS) >= 150


def _quoted_questions() -> list[str]:
    """Every question README.md and docs/*.md pass to `researcher start` or `plan`."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        found += re.findall(r"researcher (?:start|plan) \"([^\"]+\?)\"", text)
    return sorted(set(found))


def test_every_question_quoted_in_readme_and_docs_is_in_the_corpus_and_reads() -> None:
    quoted = _quoted_questions()
    assert quoted, "README.md quotes the demo question"
    in_corpus = {case.question for case in CORPUS}
    for question in quoted:
        assert question in in_corpus, f"{question!r} (quoted in the docs) is not in the corpus"
        read_question(question, served_models=ONE)
