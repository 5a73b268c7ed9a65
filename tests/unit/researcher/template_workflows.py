"""Test helpers: the template planner's first design for a question, and a generated workflow
loaded as a module, as `swarm run` would import it."""

from __future__ import annotations

import importlib.util

from researcher.plan import Framing
from researcher.planner.reader import read_question
from researcher.planner.template import TemplatePlanner

SERVED = ["m-135M"]


def designed(question: str, served: list[str] = SERVED):
    """(planner, framing, design) of the template planner's first design for `question`."""
    planner = TemplatePlanner()
    reading = read_question(question, served_models=served)
    framing = Framing(question=question, family=reading.factor, summary="s", model=served[0],
                      planner="template", served_models=served, reading=reading)  # fmt: skip
    hypothesis = planner.hypotheses(framing, notes=[])[0]
    design = planner.design(framing, hypothesis, budget_s=1200, seeds=1, step_seconds=12, notes=[])
    return planner, framing, design


def load_workflow(source: str, tmp_path, name: str):
    """`source` written to tmp_path/<name>.py and imported."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
