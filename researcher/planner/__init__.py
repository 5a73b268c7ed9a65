"""Planners: who frames the question, proposes hypotheses and designs, writes the workflow
code and decides. `make_planner` picks one from the `--planner` option.

- `TemplatePlanner` ("template", the default): deterministic, from the task catalogue.
- `LLMPlanner` (an http(s) URL): any OpenAI-compatible chat endpoint; the key comes from
  SWARMRL_PLANNER_API_KEY (else OPENAI_API_KEY), the model from SWARMRL_PLANNER_MODEL.

Must not know about LangGraph, the gateway's HTTP API or the database.
"""

from __future__ import annotations

import os

from researcher.errors import ResearcherError
from researcher.planner.base import Planner
from researcher.planner.template import TemplatePlanner

__all__ = ["Planner", "TemplatePlanner", "make_planner"]


def make_planner(
    spec: str | None, *, api_key: str | None = None, model: str | None = None
) -> Planner:
    """None or "template" → TemplatePlanner; "http(s)://…" → LLMPlanner on that endpoint."""
    if spec is None or spec.strip() == "template":
        return TemplatePlanner()
    spec = spec.strip()
    if spec.startswith(("http://", "https://")):
        from researcher.planner.llm import LLMPlanner

        key = (
            api_key or os.environ.get("SWARMRL_PLANNER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        )
        name = model or os.environ.get("SWARMRL_PLANNER_MODEL")
        if not name:
            raise ResearcherError(
                f"the LLM planner at {spec} needs a model name: set SWARMRL_PLANNER_MODEL"
            )
        return LLMPlanner(spec, key or "none", name)
    raise ResearcherError(
        f"unknown planner {spec!r}: use 'template' (the built-in planner) or the URL of an "
        f"OpenAI-compatible endpoint, e.g. https://api.openai.com/v1"
    )
