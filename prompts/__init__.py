"""Jinja2 templates: planner prompts (`planner/`), workflow code (`workflows/`), reports
(`reports/`). Data, plus `render` — the one way the rest of the project fills them.

`render("workflows/mix.py.j2", **variables)` uses StrictUndefined (a missing variable is an
error, never an empty string) and autoescapes only HTML templates (`*.html.j2`). Must not
import anything of ours.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parent


def _autoescape(name: str | None) -> bool:
    return bool(name) and name.endswith((".html.j2", ".html"))


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        autoescape=_autoescape,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(name: str, **variables: Any) -> str:
    """The template `name` (a path under prompts/, e.g. "planner/frame.j2") filled in."""
    return environment().get_template(name).render(**variables)
