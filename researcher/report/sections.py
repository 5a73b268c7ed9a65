"""The report's "how sure is it" and "how to reproduce it" sections, as plain values.

- `answer`: the plain-language answer for the top (`Analysis.answer`, or `plain_answer` for
  studies analysed before answers were stored);
- `sureness`: per design, the minimum detectable effect, the pilot, the stopping rule and
  how many looks and seeds the study took;
- `dropped_batches`: per run, the batches the trainer took but trained nothing from;
- `reproducibility`: per run its arm, seed, how it ended, the steps it trained of its
  max_steps, workflow file (a link relative to the report), `POST /runs` settings and
  checkpoint, and the `researcher rerun` command.

Every field may be missing in an old study: a missing one gives None or an empty list,
never an error. Reads only the `ReportContext`; knows nothing of the database or gateway.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from researcher.answer import plain_answer
from researcher.plan import Analysis, Design, Pilot
from researcher.report.context import ReportContext, ReproRun
from researcher.sequential import describe as describe_stopping


def answer(ctx: ReportContext) -> str | None:
    """The last analysed design's plain-language answer, or None when nothing was analysed."""
    if not ctx.analyses or not ctx.designs:
        return None
    index = min(len(ctx.analyses), len(ctx.designs)) - 1
    analysis = ctx.analyses[index]
    if analysis.answer:
        return analysis.answer
    try:
        return plain_answer(ctx.framing, ctx.designs[index], analysis)
    except (KeyError, ValueError, IndexError, TypeError) as error:  # an odd old record
        return f"Can't tell: the answer could not be put in words ({error})."


def _number(value: float | None) -> str | None:
    return None if value is None else f"{value:.3g}"


def pilot_rows(pilot: Pilot | None) -> list[tuple[str, str]]:
    """The pilot as (label, value) rows; [] when the design had no pilot."""
    if pilot is None:
        return []
    rows = [("learned?", pilot.learned + (f" — {pilot.evidence}" if pilot.evidence else ""))]
    if pilot.runs:
        rows.append(("runs", f"{', '.join(pilot.runs)} ({pilot.steps} steps each)"))
    if pilot.step_seconds is not None:
        rows.append(("seconds per training step", f"{pilot.step_seconds:.3g} (measured)"))
    if pilot.seed_sd is not None:
        rows.append(("seed-to-seed SD", _number(pilot.seed_sd)))
    if pilot.item_sd is not None:
        rows.append(("item-to-item SD", _number(pilot.item_sd)))
    retuned = "; ".join(
        f"{name} {old} → {new}" for name, (old, new, *_) in pilot.retuned.items()
    ) if pilot.retuned else "nothing (it learned at the planned settings)"  # fmt: skip
    rows.append(("retuned", retuned))
    rows.append(("kept", "its runs count as the control's first seeds" if pilot.kept
                 else "its runs were not counted (settings changed after it)"))  # fmt: skip
    return rows


def sureness(ctx: ReportContext, design: Design, analysis: Analysis | None) -> dict[str, Any]:
    """How sure one design's verdict can be: MDE, pilot, stopping rule, looks and seeds."""
    same = [
        d
        for d in ctx.designs
        if d.arms and {a.name for a in d.arms} == {a.name for a in design.arms}
    ]
    seeds = sorted({s for d in same for s in d.seeds})
    compared = analysis.comparisons[0].n_seeds if analysis and analysis.comparisons else None
    took = (f"look {design.look} of up to {design.max_looks}; "
            f"{len(design.seeds)} seed{'s' if len(design.seeds) != 1 else ''} per arm planned "
            f"at this look ({', '.join(map(str, design.seeds))})")  # fmt: skip
    if compared is not None:
        took += f", {compared} usable per arm in the comparison"
    if len(seeds) > len(design.seeds):
        took += f"; seeds used over all looks: {', '.join(map(str, seeds))}"
    mde = None
    if design.mde is not None:
        mde = f"{design.mde:.3g}" + (f" — {design.mde_basis}" if design.mde_basis else "")
    return {
        "mde": mde,
        "min_effect": f"{design.min_effect:g}",
        "pilot": pilot_rows(design.pilot),
        "stopping": describe_stopping(design.max_looks, design.direction),
        "took": took,
        "parallel_runs": design.parallel_runs,
    }


def dropped_batches(ctx: ReportContext) -> list[dict[str, Any]]:
    """Runs that dropped whole batches, with how many and why; [] when none did."""
    rows = []
    for r in ctx.results:
        if r.dropped_batches:
            reasons = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in
                                sorted(r.dropped_batches.items()))  # fmt: skip
            rows.append({"run": r.run, "arm": r.arm, "seed": r.seed,
                         "total": sum(r.dropped_batches.values()), "reasons": reasons})  # fmt: skip
    return rows


def _link(path: str, out_dir: Path) -> str:
    """The workflow file as a link from the report's folder (relative when absolute)."""
    if not os.path.isabs(path):
        return path
    try:
        return Path(os.path.relpath(path, out_dir)).as_posix()
    except ValueError:  # another drive
        return Path(path).as_posix()


def _run_end(run: ReproRun, analysed: str | None) -> str:
    """How the run ended: the study's record ("stopped (its share of the training budget
    (300 s) is spent)"), unless the analysis found it failed (no training step); before
    studies kept it, the analysis' status."""
    if analysed == "failed" or run.status is None:
        return analysed or "not analysed"
    if run.status == "stopped" and run.stop_reason:
        return f"stopped ({run.stop_reason.splitlines()[0]})"
    return run.status


def _steps_trained(run: ReproRun) -> str:
    """ "14 of 40": the last step the run logged of its max_steps; "—" when unknown."""
    planned = run.settings.get("max_steps")
    if run.steps_done is None:
        return "—"
    return f"{run.steps_done} of {planned}" if planned else str(run.steps_done)


def reproducibility(ctx: ReportContext, out_dir: Path) -> dict[str, Any]:
    """The reproducibility table's rows and the command that replays the final design."""
    status = {r.run: r.status for r in ctx.results}
    rows = [
        {
            "run": run.run,
            "arm": run.arm,
            "seed": run.seed,
            "status": _run_end(run, status.get(run.run)),
            "steps": _steps_trained(run),
            "workflow": run.workflow_path,
            "link": _link(run.workflow_path, out_dir),
            "settings": run.settings,
            "checkpoint": run.checkpoint,
        }
        for run in ctx.runs
    ]
    return {
        "rows": rows,
        "command": f"researcher rerun {ctx.study_id}" if ctx.designs else None,
        "replays": ctx.replays,
        "replays_report": _link(ctx.replays_report, out_dir) if ctx.replays_report else None,
    }
