"""`check_reading` holds any reading (the template reader's or an LLM planner's) to the
catalogue, naming the first problem; the reader reads the user's own workflow and its PARAMS,
and its refusals say exactly what is missing and how to ask."""

from __future__ import annotations

from typing import Any

import pytest

from researcher.errors import (
    EmptyQuestion,
    NotAboutTraining,
    ResearcherError,
    UnmappableQuestion,
    UnreadableQuestion,
)
from researcher.plan import Reading
from researcher.planner.catalogue import FACTORS, TASKS, check_reading
from researcher.planner.reader import EXAMPLE_QUESTIONS, read_question
from swarm import protocol

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SERVED = [SMOL, "HuggingFaceTB/SmolLM2-360M-Instruct"]
PARAMS = {
    "system_prompt": "You are a helpful assistant.",
    "max_retries": 2,
    "use_tools": False,
    "temperature": 0.7,
}


def reading(**changes: Any) -> Reading:
    fields: dict[str, Any] = {
        "factor": "kl_coef",
        "levels": [0.0, 0.5],
        "control": 0.0,
        "task": "learnable",
        "outcome": "learning_speed",
        "direction": "less",
    }
    return Reading(**{**fields, **changes})


# -- check_reading ----------------------------------------------------------------------------


def test_a_valid_reading_passes_and_comes_back_with_the_control_first() -> None:
    checked = check_reading(reading(levels=[0.5, 0.0, 0.1]), served_models=SERVED)
    assert checked.levels == [0.0, 0.5, 0.1]
    assert checked.control == 0.0


def test_integral_levels_of_an_integer_factor_become_ints() -> None:
    checked = check_reading(
        reading(factor="group_size", levels=[2.0, 8.0], control=2.0), served_models=SERVED
    )
    assert checked.levels == [2, 8] and all(type(level) is int for level in checked.levels)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"factor": "learning_speed"}, "unknown factor 'learning_speed'"),
        ({"factor": "lr", "levels": [2e-5, 5.0], "control": 2e-5}, "lr must be > 0 and <= 1"),
        (
            {"factor": "clip_eps", "levels": [0.2, 1.0], "control": 0.2},
            "clip_eps must be > 0 and < 1",
        ),
        ({"factor": "group_size", "levels": [4, 2.5], "control": 4}, "not a whole number"),
        ({"factor": "group_size", "levels": [4, 0], "control": 4}, "group_size must be >= 1"),
        ({"factor": "lr", "levels": [2e-5, "fast"], "control": 2e-5}, "not a number"),
        ({"factor": "algorithm", "levels": ["grpo", "ppo"], "control": "grpo"}, "not one of"),
        ({"factor": "lora", "levels": ["full", "big"], "control": "full"}, "LoRA rank"),
        ({"levels": [0.5, 0.5], "control": 0.5}, "at least two distinct levels"),
        ({"levels": [5e-6, 0.000005], "control": 5e-6}, "at least two distinct levels"),
        ({"control": 0.1}, "the control 0.1 is not one of the levels"),
        ({"task": "minesweeper"}, "not a shipped task"),
        ({"tasks": ["learnable", "gsm8k"]}, "not a shipped task"),
        ({"direction": "equivalent"}, "needs a positive margin"),
        ({"direction": "equivalent", "margin": 0.0}, "needs a positive margin"),
        ({"margin": 0.05}, "belongs to an equivalence or non-inferiority test only"),
        ({"outcome": "cost", "threshold": 0.8}, "learning_speed outcome only"),
        ({"factor": "max_turns", "levels": [None, 2], "control": None}, "guessing game only"),
        (
            {"factor": "base_model", "levels": [SMOL, "Qwen/Qwen2.5-7B"], "control": SMOL},
            "not served",
        ),
        (
            {
                "factor": "task_mix",
                "levels": [{"learnable": 1.0}, {"learnable": 0.5, "minesweeper": 0.5}],
                "control": {"learnable": 1.0},
            },
            "not a shipped task",
        ),
        (
            {
                "factor": "task_mix",
                "levels": [{"learnable": 1.0}, {"learnable": -1.0}],
                "control": {"learnable": 1.0},
            },
            "finite and >= 0",
        ),
        ({"factor": "workflow:system_prompt", "levels": ["a", "b"], "control": "a"}, "no PARAMS"),
    ],
)
def test_check_reading_names_the_problem(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(ResearcherError) as raised:
        check_reading(reading(**changes), served_models=SERVED)
    assert says in str(raised.value)


def test_a_workflow_reading_is_checked_against_the_workflows_params() -> None:
    ok = reading(
        factor="workflow:max_retries", levels=[2, 5], control=2, task="workflow", tasks=["workflow"]
    )
    assert check_reading(ok, served_models=SERVED, workflow_params=PARAMS).levels == [2, 5]
    with pytest.raises(ResearcherError, match="is not a int like its default 2"):
        check_reading(
            ok.model_copy(update={"levels": [2, "five"]}),
            served_models=SERVED,
            workflow_params=PARAMS,
        )
    with pytest.raises(ResearcherError, match="declares no PARAMS key 'retries'"):
        check_reading(
            ok.model_copy(update={"factor": "workflow:retries"}),
            served_models=SERVED,
            workflow_params=PARAMS,
        )
    with pytest.raises(ResearcherError, match="judges task 'workflow'"):
        check_reading(
            ok.model_copy(update={"task": "arithmetic"}),
            served_models=SERVED,
            workflow_params=PARAMS,
        )


def test_the_catalogues_bounds_are_the_gateways() -> None:
    for name, annotated in [
        ("lr", protocol.Lr),
        ("kl_coef", protocol.KlCoef),
        ("clip_eps", protocol.ClipEps),
        ("group_size", protocol.GroupSize),
        ("batch_groups", protocol.BatchGroups),
        ("max_staleness", protocol.MaxStaleness),
        ("weight_decay", protocol.WeightDecay),
    ]:
        factor = FACTORS[name]
        from pydantic import TypeAdapter, ValidationError

        adapter = TypeAdapter(annotated)
        for value in (factor.low, factor.high):
            if value is None:
                continue
            accepted = True
            try:
                adapter.validate_python(int(value) if factor.kind == "int" else value)
            except ValidationError:
                accepted = False
            assert accepted == factor.in_bounds(value), (name, value)


def test_every_default_and_stated_level_of_the_catalogue_passes_its_own_check() -> None:
    for factor in FACTORS.values():
        if factor.kind in ("task_mix", "base_model"):
            continue
        task = "guess_number" if factor.name == "max_turns" else "arithmetic"
        default = factor.default_for(task)
        for other in (factor.raised, factor.lowered, factor.alternative):
            if other is None or other == default:
                continue
            check_reading(
                reading(factor=factor.name, levels=[default, other], control=default, task=task),
                served_models=SERVED,
            )


def test_every_task_has_a_description_and_synonyms() -> None:
    for info in TASKS.values():
        assert info.description and info.synonyms and info.max_tokens


# -- the user's own workflow --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "factor", "levels"),
    [
        (
            "does a step-by-step system prompt help my agent?",
            "workflow:system_prompt",
            [
                "You are a helpful assistant.",
                "You are a helpful assistant. Think step by step before you answer.",
            ],
        ),
        (
            'does the system prompt "Answer in one word." hurt my agent?',
            "workflow:system_prompt",
            ["You are a helpful assistant.", "Answer in one word."],
        ),
        ("does max retries 5 help?", "workflow:max_retries", [2, 5]),
        (
            "does a step-by-step prompt help?",
            "workflow:system_prompt",
            [
                "You are a helpful assistant.",
                "You are a helpful assistant. Think step by step before you answer.",
            ],
        ),
        ("do more retries help my agent?", "workflow:max_retries", [2, 4]),
        # two values named, neither the default: those two, the control as for a run setting
        ("does max_retries=3 vs max_retries=5 matter?", "workflow:max_retries", [3, 5]),
        ("does max retries 5 vs 3 help?", "workflow:max_retries", [3, 5]),
        (
            "does an empty system prompt hurt?",
            "workflow:system_prompt",
            ["You are a helpful assistant.", ""],
        ),
        ("does enabling use_tools help my agent?", "workflow:use_tools", [False, True]),
        ("does temperature 0.2 help my agent?", "workflow:temperature", [0.7, 0.2]),
        ("does lr 1e-4 help my agent?", "lr", [2e-5, 1e-4]),
        ("does my agent learn faster with group size 8?", "group_size", [4, 8]),
    ],
)
def test_a_workflow_question_reads_its_params_and_judges_the_workflow(
    question: str, factor: str, levels: list[Any]
) -> None:
    got = read_question(question, served_models=SERVED, workflow_params=PARAMS)
    assert (got.factor, got.levels, got.control, got.task) == (
        factor,
        levels,
        levels[0],
        "workflow",
    )


def test_a_count_that_is_off_by_default_is_turned_on_when_no_level_is_named() -> None:
    params = {"few_shot": 0, "noise": 0.0}
    got = read_question("does adding few-shot examples help my agent?", served_models=SERVED,
                        workflow_params=params)  # fmt: skip
    assert (got.factor, got.levels, got.control) == ("workflow:few_shot", [0, 1], 0)
    assert any("tried 1 against the default 0" in a for a in got.assumptions)
    with pytest.raises(UnreadableQuestion, match="default 0"):  # no lower count than none
        read_question("do fewer few-shot examples hurt?", served_models=SERVED,
                      workflow_params=params)  # fmt: skip
    with pytest.raises(UnreadableQuestion, match="default 0"):  # a real number has no scale
        read_question("does more noise help my agent?", served_models=SERVED,
                      workflow_params=params)  # fmt: skip


def test_a_text_param_without_a_value_to_try_is_refused_saying_which_value_to_give() -> None:
    with pytest.raises(UnreadableQuestion, match="names no value to try: put it in double quotes"):
        read_question(
            "does a different system prompt matter?", served_models=SERVED, workflow_params=PARAMS
        )


def test_a_workflow_without_a_test_split_is_refused() -> None:
    with pytest.raises(UnreadableQuestion, match="no test split"):
        read_question(
            "does lr 1e-4 help?",
            served_models=SERVED,
            workflow_params=PARAMS,
            workflow_has_test=False,
        )


def test_a_workflow_question_that_varies_nothing_lists_the_params() -> None:
    with pytest.raises(UnreadableQuestion) as raised:
        read_question("does my agent improve?", served_models=SERVED, workflow_params=PARAMS)
    assert "system_prompt, max_retries, use_tools, temperature" in str(raised.value)


def test_a_question_not_about_training_is_refused_as_such_even_with_a_workflow() -> None:
    with pytest.raises(NotAboutTraining):
        read_question(
            "what is the capital of France?", served_models=SERVED, workflow_params=PARAMS
        )


# -- refusals say what is missing and how to ask -----------------------------------------------


def test_an_unreadable_question_says_what_is_missing_and_shows_three_examples() -> None:
    with pytest.raises(UnreadableQuestion) as raised:
        read_question("does training work better?", served_models=SERVED)
    message = str(raised.value)
    assert "no run setting or task named" in message
    assert all(example in message for example in EXAMPLE_QUESTIONS)
    assert len(EXAMPLE_QUESTIONS) == 3


def test_the_example_questions_read() -> None:
    for example in EXAMPLE_QUESTIONS:
        read_question(example, served_models=SERVED)


def test_both_refusals_are_unmappable_questions_for_old_callers() -> None:
    assert issubclass(UnreadableQuestion, UnmappableQuestion)
    assert issubclass(NotAboutTraining, UnmappableQuestion)


def test_a_model_size_question_with_one_served_model_says_to_serve_two() -> None:
    with pytest.raises(UnreadableQuestion, match="serve at least two"):
        read_question("does a bigger model learn faster?", served_models=[SMOL])


def test_the_same_question_always_reads_the_same() -> None:
    question = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"
    first = read_question(question, served_models=SERVED)
    assert all(read_question(question, served_models=SERVED) == first for _ in range(3))


@pytest.mark.parametrize("question", ["", "   ", "?!", "42"])
def test_an_empty_question_is_refused_as_empty(question: str) -> None:
    with pytest.raises(EmptyQuestion):
        read_question(question, served_models=SERVED)


def test_check_reading_takes_a_lora_level_as_post_runs_writes_it_and_lists_the_judged_task() -> (
    None
):
    checked = check_reading(
        reading(factor="lora", levels=["full", {"r": 8, "alpha": 16}], control="full", tasks=[]),
        served_models=SERVED,
    )
    assert checked.levels == ["full", 8]
    assert checked.tasks == ["learnable"]


def test_a_workflow_sampling_setting_without_a_default_needs_both_levels() -> None:
    with pytest.raises(UnreadableQuestion, match="name both levels"):
        read_question(
            "does max_tokens 256 help my agent?", served_models=SERVED, workflow_params={}
        )
    got = read_question(
        "does max_tokens 256 vs 64 help my agent?", served_models=SERVED, workflow_params={}
    )
    assert (got.factor, got.levels, got.task) == ("max_tokens", [64, 256], "workflow")


@pytest.mark.slow
def test_any_jumble_of_catalogue_words_reads_or_is_refused_never_crashes() -> None:
    import random

    words = (
        "does a the KL penalty lr learning rate group size batch size of 0.5 1e-4 2e-5 8 vs 2 "
        "instead than as good as help hurt slow learning faster cheaper wall time tokens "
        "mixing in tool-use task arithmetic easy single-turn guessing game calculator LoRA "
        "r=16 full fine-tuning RLOO GRPO temperature 1.2 max tokens turns guesses steps within "
        "20 steps held-out on for into 135M 360M bigger model twice half five times larger "
        "-1 0 3 points 25% 70/30 which best or not matter same fixed at the system prompt "
        '"hi" 1.5x ten times smaller order of magnitude'
    ).split()
    rng = random.Random(0)
    read = 0
    for _ in range(1000):
        question = " ".join(rng.choice(words) for _ in range(rng.randint(1, 14))) + "?"
        for params in (None, {"system_prompt": "Be helpful.", "n": 3}):
            try:
                got = read_question(question, served_models=SERVED, workflow_params=params)
            except ResearcherError as error:  # a refusal, never a reader bug turned into one
                assert "the reader failed on this question" not in str(error), question
                continue
            read += 1
            checked = check_reading(got, served_models=SERVED, workflow_params=params)
            assert checked == got, question
    assert read > 300  # the jumble is not all refused: the test exercises the reader


def test_a_dr_grpo_reading_says_only_its_advantage_is_varied():
    reading = read_question("does Dr. GRPO beat GRPO on countdown?", served_models=[SMOL])
    assert reading.factor == "scale_rewards"
    assert any("not a run setting here" in a for a in reading.assumptions), reading.assumptions
    plain = read_question("does std normalization of advantages help on chain_sum?",
                          served_models=[SMOL])  # fmt: skip
    assert not any("Dr. GRPO" in a for a in plain.assumptions)


def test_a_result_sentence_naming_only_a_level_reads_and_a_reader_bug_is_a_clear_refusal(
    monkeypatch,
):
    """ "Accuracy with GRPO was 0.51." once crashed `researcher plan` with a ValueError
    traceback; any such bug now reads as a refusal that says what failed."""
    reading = read_question(
        "Is RLOO better than GRPO? Accuracy with GRPO was 0.51.", served_models=[SMOL]
    )
    assert (reading.factor, reading.levels) == ("algorithm", ["grpo", "rloo"])

    def broken(*args, **kwargs):
        raise ValueError("min() arg is an empty sequence")

    monkeypatch.setattr("researcher.planner.reading.read._read", broken)
    with pytest.raises(
        UnreadableQuestion, match=r"the reader failed on this question \(ValueError"
    ):
        read_question("does lr 1e-4 help chain_sum?", served_models=[SMOL])


def test_two_workflow_params_at_once_are_refused_even_when_one_is_named_without_its_unit():
    """ "timeout 30" names timeout_s: before, 30 became a second level of max_attempts."""
    params = {"max_attempts": 3, "run_tests": True, "timeout_s": 10.0}
    with pytest.raises(
        UnreadableQuestion, match=r"2 settings \(workflow:max_attempts, workflow:timeout_s\)"
    ):
        read_question("Does max_attempts 5 with timeout 30 help my agent?", served_models=[SMOL],
                      workflow_params=params)  # fmt: skip


def test_a_workflow_temperature_out_of_the_sampling_bounds_is_refused():
    params = {"top_k": 4, "temperature": 0.7}
    with pytest.raises(UnreadableQuestion, match="as the policy's sampling temperature"):
        read_question("Does temperature 5 help my agent?", served_models=[SMOL],
                      workflow_params=params)  # fmt: skip
