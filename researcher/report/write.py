"""Render a `ReportContext` into report.md, a self-contained report.html and figures/*.png.

The templates are `prompts/reports/report.md.j2` and `report.html.j2`, rendered with the
project's template environment (`prompts.environment`: StrictUndefined, HTML autoescaped)
plus the report's filters. This module turns the context
into the plain values the templates show — formatted numbers, the conclusion and why,
per-arm tables, failed runs, the timeline — so the templates hold layout only.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

import prompts
from researcher.analysis import rule_words
from researcher.intervals import ONE_SEED_INTERVAL
from researcher.learning import EQUAL_REWARDS, stopped_for_equal_rewards
from researcher.outcomes import (
    cost_unit,
    describe_direction,
    describe_outcome,
    direction_words,
    heldout_metric,
    outcome_label,
    run_score,
    short_label,
    unscored_reason,
    usable,
)
from researcher.plan import Analysis, Design, Level, RunResult
from researcher.report import figures, sections
from researcher.report.context import ReportContext, RunEpisodes
from researcher.settings import format_size

# a run that lost this share of its training episodes to aborts gets a caveat beside the
# verdict: it trained on a biased part of the tasks, and each failure cost a group
ABORTED_CAVEAT_SHARE = 0.20


# beside a 1-seed comparison's interval: what it is over, so a narrow one around 0 is not
# read as "no effect"


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    figures: list[Path]


def utc(at: float | None) -> str:
    if at is None:
        return "—"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(max(0.0, seconds)))
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    parts = [f"{d}d"] * bool(d) + [f"{h}h"] * bool(h) + [f"{m}m"] * bool(m) + [f"{s}s"] * bool(s)
    return " ".join(parts[:2]) or "0s"


def md_cell(value: Any) -> str:
    """A value safe inside one Markdown table cell."""
    return re.sub(r"\s*\n\s*", " ", str(value)).replace("|", "\\|")


def fence(code: str) -> str:
    """A backtick fence longer than any backtick run inside `code`."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


@cache
def _environment() -> jinja2.Environment:
    """The project's template environment (`prompts.environment`: StrictUndefined, HTML
    autoescaped by name) with the report's filters added."""
    env = prompts.environment().overlay()
    env.filters.update(
        utc=utc,
        duration=duration,
        size=format_size,
        cell=md_cell,
        fence=fence,
        pretty_json=lambda v: json.dumps(v, indent=2, sort_keys=True, default=str),
        compact_json=lambda v: json.dumps(v, sort_keys=True, default=str),
    )
    return env


def _conclusion(ctx: ReportContext) -> dict[str, Any]:
    analysis = ctx.analyses[-1] if ctx.analyses else None
    uncertainty = [
        f"{c.treatment} − {c.control}: {c.difference:+.3f} (95% CI {c.ci_low:+.3f} to "
        f"{c.ci_high:+.3f}, {c.effect_measure} {c.effect_size:+.2f}, {c.n_seeds} seed"
        f"{'s' if c.n_seeds != 1 else ''} per arm)" + (ONE_SEED_INTERVAL if c.n_seeds == 1 else "")
        for c in (analysis.comparisons if analysis else [])
    ]
    if analysis:
        uncertainty.insert(0, f"Judged on {analysis.outcome_label}")
        uncertainty.extend(f"{arm}: {v.reason}" for arm, v in analysis.learned.items())
    verdict = analysis.verdict if analysis else None
    if ctx.decision and ctx.decision.conclusion:
        text, found = _beside_baseline(ctx.decision.conclusion, analysis), True
    elif analysis:
        text, found = _beside_baseline(analysis.summary, analysis), True
    else:
        if ctx.decision:
            why = ctx.decision.reason
        elif not ctx.designs:
            why = "no experiment was designed"
        elif not any(usable(r) for r in ctx.results):
            why = "no run finished with held-out results"
        else:
            why = "the runs were not analysed"
        if ctx.finished_at is None:
            why += " (the study has not finished)"
        text, found = f"no conclusion: {why}", False
    caveats = _episode_caveats(ctx)
    if caveats:
        text = f"{text} {caveats}"
    return {
        "text": text,
        "found": found,
        "verdict": verdict.replace("_", " ") if verdict else None,
        "verdict_class": verdict,
        "baseline": _baseline_line(analysis) if analysis else None,
        "uncertainty": uncertainty,
        "reason": ctx.decision.reason if ctx.decision and found else None,
    }


def _run_words(e: RunEpisodes) -> str:
    return f"run `{e.run}` ({e.arm}, seed {e.seed})"


def _aborted_words(e: RunEpisodes) -> str:
    """ "159 of 634 training episodes aborted (25%) — most often: rollout raised … at
    w.py:20 (task train1): 159"."""
    text = (
        f"{e.aborted} of {e.finished + e.aborted} training episodes aborted ({e.aborted_share:.0%})"
    )
    if not e.causes:
        return text + " (its client's log names no cause)"
    return text + " — most often: " + "; ".join(f"{c}: {n}" for c, n in e.causes[:3])


def _episode_problems(ctx: ReportContext) -> list[str]:
    """Per run, the episodes its rollout failed on, and a run stopped because every
    group's rewards were equal with the reward its client saw."""
    lines = []
    for e in ctx.episodes:
        if e.aborted:
            lines.append(f"{_run_words(e)}: {_aborted_words(e)}")
        if stopped_for_equal_rewards(e.stop_reason) and e.recent_reward is not None:
            check = "; check what rollout returns" if ctx.framing.workflow else ""
            lines.append(
                f"{_run_words(e)} stopped: {EQUAL_REWARDS}; the mean reward of its client's "
                f"last {e.recent_n} episodes was {e.recent_reward:.3f}{check}"
            )
    return lines


def _episode_caveats(ctx: ReportContext) -> str:
    """Sentences for beside the verdict: runs that lost ABORTED_CAVEAT_SHARE or more of
    their episodes, and the reward of runs stopped because every group's were equal."""
    parts = []
    lossy = [e for e in ctx.episodes if e.aborted_share >= ABORTED_CAVEAT_SHARE]
    if lossy:
        parts.append(
            "Caveat: the rollout failed on many training episodes — "
            + "; ".join(f"{_run_words(e)}: {_aborted_words(e)}" for e in lossy)
            + ". Those runs trained only on the episodes that finished."
        )
    equal = [e for e in ctx.episodes
             if stopped_for_equal_rewards(e.stop_reason) and e.recent_reward is not None]  # fmt: skip
    if equal:
        parts.append(
            f"The runs stopped because {EQUAL_REWARDS}; the mean reward their clients saw: "
            + ", ".join(f"{_run_words(e)} {e.recent_reward:.3f}" for e in equal)
            + "."
        )
    return " ".join(parts)


def _baseline_line(analysis: Analysis) -> str | None:
    """The untrained policy's held-out score in words, or None when it was not evaluated."""
    if analysis.baseline is None:
        return None
    low, high = analysis.baseline_ci or (analysis.baseline, analysis.baseline)
    return (f"{analysis.baseline:.3f} [{low:.3f}, {high:.3f}] held-out, the untrained "
            f"{analysis.baseline_model or 'base model'} on the same {analysis.baseline_n} items")  # fmt: skip


def _beside_baseline(text: str, analysis: Analysis | None) -> str:
    """The conclusion, opening with the untrained baseline when no arm beat it (and the
    conclusion's first sentence does not already say so)."""
    if analysis is None or analysis.baseline is None or not analysis.learned:
        return text
    if any(v.verdict == "learned" for v in analysis.learned.values()):
        return text
    if "baseline" in re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]:
        return text
    return (f"No arm beat the untrained baseline ({analysis.baseline:.3f} held-out, "
            f"{analysis.baseline_model or 'the base model'} before training). {text}")  # fmt: skip


def _seed_line(design: Design, r: RunResult, unit: str) -> str:
    why = unscored_reason(design, r, unit)
    if why is None:
        score = run_score(design, r, unit)
        line = f"seed {r.seed}: " + (
            f"{score:.3f}" if design.outcome == "heldout_accuracy" else f"{score:.3g}"
        )
        if design.outcome != "heldout_accuracy" and usable(r):
            line += f" (held-out {heldout_metric(r):.3f})"
        return line
    return f"seed {r.seed}: {r.status}{f' ({why})' if why and r.status == 'finished' else ''}"


def _experiments(ctx: ReportContext) -> list[dict[str, Any]]:
    experiments = []
    for i, design in enumerate(ctx.designs):
        analysis = ctx.analyses[i] if i < len(ctx.analyses) else None
        results = ctx.results_of(design)
        unit = cost_unit(results)
        arms = []
        for arm in design.arms:
            runs = sorted((r for r in results if r.arm == arm.name), key=lambda r: r.seed)
            scored = [r for r in runs if unscored_reason(design, r, unit) is None]
            if analysis and arm.name in analysis.arm_means:
                low, high = analysis.arm_ci[arm.name]
                mean = f"{analysis.arm_means[arm.name]:.3f} [{low:.3f}, {high:.3f}]"
            elif scored:
                mean = f"{np.mean([run_score(design, r, unit) for r in scored]):.3f} (not analysed)"
            else:
                mean = "no finished runs"
            heldout = [heldout_metric(r) for r in runs if usable(r)]
            learning = analysis.learned.get(arm.name) if analysis else None
            arms.append(
                {
                    "name": arm.name,
                    "role": arm.role,
                    "description": arm.description,
                    "level": _level(arm.level) if arm.level is not None else "—",
                    "tasks": ", ".join(
                        f"{design.task_words(k)} {v:g}" for k, v in arm.tasks.items()
                    ),
                    "run": arm.run,
                    "mean": mean,
                    "heldout": f"{np.mean(heldout):.3f}" if heldout else "—",
                    "seeds": "; ".join(_seed_line(design, r, unit) for r in runs) or "—",
                    "learned": learning.verdict if learning else "—",
                    "learned_why": learning.reason if learning else "not analysed",
                }
            )
        margin = design.margin if design.margin is not None else design.min_effect
        experiments.append(
            {
                "design": design,
                "analysis": analysis,
                "arms": arms,
                "outcome": outcome_label(design, unit),
                "column": short_label(design),
                "judged_on_heldout": design.outcome == "heldout_accuracy",
                "direction": direction_words(design),
                "rule": rule_words(design, margin),
                "trend": analysis.trend if analysis else None,
                "baseline": _baseline_line(analysis) if analysis else None,
                "baseline_mean": (
                    f"{analysis.baseline:.3f} [{analysis.baseline_ci[0]:.3f}, "
                    f"{analysis.baseline_ci[1]:.3f}]"
                )
                if analysis and analysis.baseline is not None and analysis.baseline_ci
                else None,
                "baseline_model": analysis.baseline_model if analysis else None,
                "budget_split": ", ".join(f"{k} {v:.0%}" for k, v in design.budget_split.items())
                or "—",
                "sure": sections.sureness(ctx, design, analysis),
            }
        )
    return experiments


def _level(level: Level) -> str:
    if isinstance(level, dict):
        return ", ".join(f"{k} {_level(v)}" for k, v in level.items()) or "{}"
    if isinstance(level, float):
        return f"{level:g}"
    return "default" if level is None else str(level)


def _reading(ctx: ReportContext) -> dict[str, Any] | None:
    """The question as read (factor, levels, task, outcome, direction); None for a study
    framed before readings existed."""
    reading = ctx.framing.reading
    if reading is None:
        return None
    design = ctx.designs[0] if ctx.designs else None
    same = design is not None and design.outcome == reading.outcome
    margin = reading.margin if reading.margin is not None else (design.margin if same else None)
    words = (
        design.task_words if design is not None else str
    )  # with a level: "countdown (level tiny)"
    return {
        "factor": reading.factor,
        "levels": " · ".join(_level(level) for level in reading.levels),
        "control": _level(reading.control),
        "task": words(reading.task)
        + (f" (the question also names "
           f"{', '.join(words(t) for t in reading.tasks if t != reading.task)})"
           if any(t != reading.task for t in reading.tasks) else ""),
        "outcome": outcome_label(design, cost_unit(ctx.results)) if same else describe_outcome(
            reading.outcome, threshold=reading.threshold),
        "direction": f"{reading.direction} — " + describe_direction(
            reading.direction, outcome=reading.outcome, threshold=reading.threshold, margin=margin),
        "margin": f"±{margin:g}" if margin is not None else None,
        "steps": reading.steps,
        "threshold": reading.threshold,
        "assumptions": reading.assumptions,
        "summary": reading.summary,
        "workflow": ctx.framing.workflow,
    }  # fmt: skip


def _view(ctx: ReportContext, out_dir: Path) -> dict[str, Any]:
    problems = _episode_problems(ctx)
    return {
        "ctx": ctx.model_copy(update={"problems": [*problems, *ctx.problems]}),
        "answer": sections.answer(ctx),
        "dropped": sections.dropped_batches(ctx),
        "repro": sections.reproducibility(ctx, out_dir),
        "conclusion": _conclusion(ctx),
        "reading": _reading(ctx),
        "experiments": _experiments(ctx),
        "failed_runs": [r for r in ctx.results if r.status not in ("finished", "baseline")],
        "events": sorted(ctx.events, key=lambda e: e.at),
        "interventions": sorted(ctx.interventions, key=lambda i: i.at),
        "generated_at": utc(datetime.now(UTC).timestamp()),
        "wall_s": (ctx.finished_at - ctx.started_at) if ctx.finished_at else None,
        "budget_share": ctx.budget_used_s / ctx.budget_s if ctx.budget_s > 0 else None,
    }


def write_report(ctx: ReportContext, out_dir: Path) -> ReportFiles:
    """Write out_dir/report.md, out_dir/report.html and out_dir/figures/*.png."""
    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    speed = next((d for d in ctx.designs if d.outcome == "learning_speed"), None)
    curves = "Training reward per arm (mean over seeds; band: min–max over seeds)"
    if speed is not None:
        curves += f"; the legend gives each arm's {outcome_label(speed)}"
    drawn = [
        (curves, figures.reward_curves(ctx, fig_dir / "reward_curves.png")),
        (
            "Training reward per run (one line per seed; colour: arm)",
            figures.seed_curves(ctx, fig_dir / "seed_curves.png"),
        ),
        (
            "Held-out accuracy per arm (bar: mean over seeds; whiskers: 95% CI; dots: seeds; "
            "dashed line: the untrained baseline)",
            figures.heldout_accuracy(ctx, fig_dir / "heldout_accuracy.png"),
        ),
    ]
    judged = [d for d in ctx.designs if d.outcome != "heldout_accuracy"]
    if judged:
        label = outcome_label(judged[-1], cost_unit(ctx.results))
        drawn.append(
            (
                f"{label[0].upper()}{label[1:]} per arm — the outcome the question asked about "
                "(bar: mean over seeds; whiskers: 95% CI; dots: seeds)",
                figures.outcome_scores(ctx, fig_dir / "outcome.png"),
            )
        )
    view = _view(ctx, out_dir)
    md_figures = [{"caption": c, "src": p.relative_to(out_dir).as_posix()} for c, p in drawn]
    html_figures = [
        {"caption": c, "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()}
        for c, p in drawn
    ]
    markdown = out_dir / "report.md"
    html = out_dir / "report.html"
    markdown.write_text(
        _environment().get_template("reports/report.md.j2").render(**view, figures=md_figures)
    )
    html.write_text(
        _environment().get_template("reports/report.html.j2").render(**view, figures=html_figures)
    )
    return ReportFiles(markdown=markdown, html=html, figures=[p for _, p in drawn])
