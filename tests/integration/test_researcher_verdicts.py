"""The researcher reaches the verdict the data hold, end to end: `researcher start` with its
embedded gateway serving the `tiny` model, on a user workflow whose reward is scripted —
the untrained model scores 0.2, a trained policy `TRAINED` plus its `bonus` PARAMS (a
little noise on top, so groups vary and train). The model itself cannot learn anything in
a few steps; the script stands in for "the policy learned", so what is tested is the study:
pilot, sizing, looks, baseline, learned-or-not and the decision rule.

- a real effect (bonus 0.3 vs 0, both arms above the baseline) → "supported";
- no effect (bonus 0.001 vs 0: a difference far below the smallest that counts) → "refuted";
- arms that cannot learn (every policy scores the untrained 0.2) → "not testable", with
  the pilot's evidence and its retune in the record.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher_verdicts.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_researcher import (  # noqa: F401  (`home`: a fixture)
    assert_nothing_left_running,
    engine_of,
    finish,
    home,
    only_study,
    recorded,
    start_researcher,
    tail,
)

pytestmark = pytest.mark.slow

AGENT = '''
"""A scripted agent: its reward says whether the policy "learned", not what it said."""

import random

PARAMS = {{"bonus": 0.0, "attempts": 1}}
TRAINED = {trained}


def tasks(split="train"):
    if split not in ("train", "test"):
        raise ValueError(f"no split {{split!r}}")
    return [{{"id": f"{{split}}-{{i}}"}} for i in range(40)]


async def rollout(task, episode):
    await episode.openai().chat.completions.create(
        model=episode.model, max_tokens=2, messages=[{{"role": "user", "content": "Hi."}}]
    )
    noise = random.uniform(0.0, 0.01)
    if "/" not in episode.model:  # the untrained base model (the baseline)
        return 0.2 + noise
    return TRAINED + PARAMS["bonus"] + noise
'''


def _study(home: Path, question: str, trained: float) -> tuple:  # noqa: F811
    agent = home / "agent.py"
    agent.write_text(AGENT.format(trained=trained))
    # 6 minutes: a study ends at its verdict, not at its budget; the slack is for a loaded
    # box, where a run costs 40-50 s and 4 minutes left the comparison unaffordable
    process = start_researcher(home, "start", question, "--workflow", str(agent),
                               "--budget", "6m", "--model", "tiny")  # fmt: skip
    code = finish(process, home, timeout=600)
    log = tail(home / "researcher.log", 200)
    assert code == 0, log
    engine = engine_of(home)
    study, report, experiments, processes, events = recorded(engine, only_study(engine))
    assert study.status == "finished", (study, log)
    assert_nothing_left_running(Path(study.directory))
    return study, report, experiments, events, log


def _verdict(events) -> str:
    return next(e.message for e in reversed(events) if e.phase == "analyse").split()[-1]


def test_a_real_effect_is_supported_with_both_arms_above_the_baseline(home: Path):  # noqa: F811
    study, report, experiments, events, log = _study(
        home, "does a bonus of 0.3 raise my agent's reward?", trained=0.6
    )
    assert _verdict(events) == "supported", log
    messages = " ".join(e.message for e in events)
    assert "pilot: the control learned" in messages
    assert "detects with 80% power" in messages  # the minimum detectable effect, stated
    text = Path(report.markdown_path).read_text()
    assert "untrained" in text and "learned" in text


def test_no_effect_is_refuted(home: Path):  # noqa: F811
    study, report, experiments, events, log = _study(
        home, "does a bonus of 0.001 raise my agent's reward?", trained=0.6
    )
    assert _verdict(events) == "refuted", log


def test_arms_that_cannot_learn_are_not_testable_with_the_pilots_evidence(home: Path):  # noqa: F811
    study, report, experiments, events, log = _study(
        home, "do 2 attempts instead of 1 help my agent?", trained=0.2
    )
    assert _verdict(events) == "not_testable", log
    messages = " ".join(e.message for e in events)
    assert "pilot: the control did not learn" in messages
    assert "retuned: lr" in messages  # what the question leaves free, changed and said
    assert "not testable" in Path(report.markdown_path).read_text()
