"""What bench/learnability.py recorded for the bundled model reaches the plan: the reading's
assumptions quote the judged task's row at its level (the default level when none is named),
warn when nothing was learned there and name a level that did learn; a record of another
model says nothing; "can the model learn X?" is refused with the measured row."""

from __future__ import annotations

import pytest

from researcher.planner import learnability
from researcher.planner.catalogue import task_info
from researcher.planner.learnability import Measured, Record, with_prior
from researcher.planner.reader import UnreadableQuestion, read_question
from researcher.planner.template import TemplatePlanner

MODEL = "bundled-135m"


@pytest.fixture
def record(tmp_path, monkeypatch):
    rows = [
        Measured(family="countdown", level="easy", steps=20, untrained=[0, 0], trained=[0, 1],
                 n=[64, 64]),
        Measured(family="countdown", level="tiny", steps=20, untrained=[2, 2], trained=[20, 24],
                 n=[64, 64]),
        Measured(family="arithmetic", level=None, steps=20, untrained=[4, 4], trained=[11, 12],
                 n=[64, 64]),
    ]  # fmt: skip
    path = tmp_path / "learnability.json"
    path.write_text(Record(model=MODEL, command="c", settings="s", rows=rows).model_dump_json())
    monkeypatch.setattr(learnability, "RECORD", path)
    learnability.measurements.cache_clear()
    yield path
    learnability.measurements.cache_clear()


def test_a_task_where_nothing_was_learned_warns_and_names_a_level_that_learned(record):
    reading = with_prior(read_question("does KL help on countdown?", served_models=[MODEL]), MODEL)
    note = reading.assumptions[-1]
    assert "countdown (level easy) went 0.00 → 0.01" in note
    assert "likely find that no arm learned" in note
    assert "level tiny went 0.03 → 0.34" in note


def test_a_harder_level_than_one_where_nothing_learned_warns_naming_that_level(record):
    rows = [Measured(family="countdown", level="tiny", steps=20, untrained=[0, 0],
                     trained=[1, 0], n=[64, 64])]  # fmt: skip
    record.write_text(Record(model=MODEL, command="c", settings="s", rows=rows).model_dump_json())
    learnability.measurements.cache_clear()
    question = "does KL help on countdown?"  # its default level, easy: harder than tiny
    note = with_prior(read_question(question, served_models=[MODEL]), MODEL).assumptions[-1]
    assert note.startswith("not measured at level easy; at the easier level tiny")
    assert "went 0.00 → 0.01" in note and "a study at easy will likely find that no arm" in note
    learned = [Measured(family="countdown", level="tiny", steps=20, untrained=[2, 2],
                        trained=[20, 24], n=[64, 64])]  # fmt: skip
    record.write_text(
        Record(model=MODEL, command="c", settings="s", rows=learned).model_dump_json()
    )
    learnability.measurements.cache_clear()
    said = with_prior(read_question(question, served_models=[MODEL]), MODEL).assumptions
    assert not any("not measured at level" in a for a in said)  # easier learned: no inference


def test_a_task_that_learned_is_quoted_without_a_warning(record):
    tiny = with_prior(
        read_question("does KL help on tiny countdown?", served_models=[MODEL]), MODEL
    )
    assert "countdown (level tiny) went 0.03 → 0.34" in tiny.assumptions[-1]
    assert "no arm learned" not in tiny.assumptions[-1]
    plain = with_prior(read_question("does KL help on arithmetic?", served_models=[MODEL]), MODEL)
    assert "arithmetic went 0.06 → 0.18 [0.12, 0.26]" in plain.assumptions[-1]


def test_another_model_or_an_unmeasured_task_adds_nothing(record):
    reading = read_question("does KL help on countdown?", served_models=[MODEL])
    assert with_prior(reading, "other-7b") == reading
    chain = read_question("does KL help on chain_sum?", served_models=[MODEL])
    assert with_prior(chain, MODEL) == chain


def test_the_template_planner_frames_with_the_prior(record):
    framing = TemplatePlanner().frame("does KL help on countdown?", served_models=[MODEL])
    assert any("likely find that no arm learned" in a for a in framing.reading.assumptions)


def test_can_the_model_learn_a_task_is_refused_with_what_was_measured(record):
    with pytest.raises(UnreadableQuestion, match="countdown at level tiny.*0.03 → 0.34"):
        read_question("can the model learn tiny countdown?", served_models=[MODEL])
    with pytest.raises(UnreadableQuestion, match="compares no two settings"):
        read_question("could a 135M model learn chain_sum in 30 steps?", served_models=[MODEL])


def test_the_shipped_record_is_for_the_bundled_model_and_well_formed():
    learnability.measurements.cache_clear()
    shipped = learnability.measurements()
    assert shipped is not None and shipped.model == "smollm2-135m"
    for row in shipped.rows:
        assert len(row.untrained) == len(row.trained) == len(row.n) >= 1
        assert all(0 <= k <= n for k, n in zip(row.trained, row.n, strict=True))


def test_a_question_naming_no_task_is_judged_on_the_task_that_learned_most_clearly():
    # the default study must compare arms that learn: of the shipped record's families
    # without a level to name, the default task's trained interval clears its untrained one
    # by the widest margin among the tasks that learned
    learnability.measurements.cache_clear()
    shipped = learnability.measurements()
    reading = read_question("does a higher learning rate help?", served_models=[shipped.model])
    level = reading.task_levels.get(reading.task) or task_info(reading.task).default_level
    row = learnability.measured(reading.task, level, shipped.model)
    assert row is not None, f"the default task {reading.task} at {level} was never measured"
    _, untrained_low, untrained_high = row.rate(row.untrained)
    _, trained_low, _ = row.rate(row.trained)
    assert trained_low > untrained_high, f"{reading.task}: {learnability.describe(row)}"
    gains = {
        (r.family, r.level): r.rate(r.trained)[1] - r.rate(r.untrained)[2]
        for r in shipped.rows
        if r.family not in ("learnable",)  # the demo's toy task is chosen by name, not by default
    }
    assert gains[(reading.task, level)] == max(gains.values()), gains
