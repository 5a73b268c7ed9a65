"""Small helpers the nodes share: plan records from state, experiment ids, run names."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from experiments_db import crud
from experiments_db.studies import ExperimentRow
from researcher.context import StudyContext
from researcher.plan import Arm, Design, Framing, Hypothesis

LIVE = ("launching", "running")
DONE = ("finished", "failed", "stopped", "rejected")


def framing_of(state: dict[str, Any]) -> Framing:
    return Framing.model_validate(state["framing"])


def design_of(state: dict[str, Any]) -> Design:
    return Design.model_validate(state["design"])


def hypothesis_of(state: dict[str, Any]) -> Hypothesis:
    key = state["hypothesis"]
    return next(Hypothesis.model_validate(h) for h in state["hypotheses"] if h["key"] == key)


def arm_named(design: Design, name: str) -> Arm:
    return next(arm for arm in design.arms if arm.name == name)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "arm"


def experiment_id(study_id: str, round_: int, arm: str, seed: int) -> str:
    """Also the gateway run's name: at most 64 characters of [A-Za-z0-9_.-]."""
    name = f"{study_id}-r{round_}-{slug(arm)}-s{seed}"
    if len(name) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:6]
        name = f"{study_id}-r{round_}-{slug(arm)[:32]}-{digest}-s{seed}"
    return name


def code_version(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:12]


def round_experiments(ctx: StudyContext, state: dict[str, Any]) -> list[ExperimentRow]:
    wanted = set(state.get("experiments", []))
    with ctx.session() as session:
        rows = crud.experiments(session, study_id=ctx.study_id)
    return [row for row in rows if row.id in wanted]


def update_experiment(ctx: StudyContext, experiment_id: str, **fields: Any) -> ExperimentRow:
    with ctx.session() as session:
        return crud.update_experiment(session, experiment_id=experiment_id, **fields)


def log_tail(path: str | None, lines: int = 30) -> str:
    if not path:
        return ""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
