"""The report's matplotlib figures (Agg backend, PNG files): reward curves, held-out
accuracy, and — when a study is judged on another outcome — that outcome per arm.

Each function draws from a `ReportContext`, writes one PNG and returns its path. Missing
data never raises: a figure without anything to plot says so in its middle.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from researcher.analysis import curve_bands  # noqa: E402
from researcher.outcomes import (  # noqa: E402
    cost_unit,
    heldout_metric,
    run_score,
    short_label,
    unscored_reason,
    usable,
)
from researcher.plan import Analysis, Design, RunResult  # noqa: E402
from researcher.report.context import ReportContext  # noqa: E402

PANEL_W, PANEL_H, DPI = 6.0, 3.6, 110


def arm_colours(ctx: ReportContext) -> dict[str, str]:
    """One colour per arm, the same in every figure of the report."""
    names = [a.name for d in ctx.designs for a in d.arms] + [r.arm for r in ctx.results]
    palette = plt.get_cmap("tab10").colors
    ordered = list(dict.fromkeys(names))
    return {
        name: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, name in enumerate(ordered)
    }


def _panels(
    ctx: ReportContext,
) -> list[tuple[str, Design | None, Analysis | None, list[RunResult]]]:
    if not ctx.designs:
        return [("", None, None, ctx.results)]
    return [
        (
            f"{d.hypothesis}: {d.eval_task}" if len(ctx.designs) > 1 else "",
            d,
            ctx.analyses[i] if i < len(ctx.analyses) else None,
            ctx.results_of(d),
        )
        for i, d in enumerate(ctx.designs)
    ]


def _no_data(ax, message: str) -> None:
    ax.text(
        0.5,
        0.5,
        message,
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=11,
        color="0.35",
        wrap=True,
    )
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("0.8")


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def reward_curves(ctx: ReportContext, path: Path) -> Path:
    """Training reward per step, one colour per arm: the mean over seeds and the seeds' range."""
    panels = _panels(ctx)
    colours = arm_colours(ctx)
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(PANEL_W, PANEL_H * len(panels)), squeeze=False
    )
    for ax, (title, design, analysis, results) in zip(axes[:, 0], panels, strict=True):
        bands = curve_bands(results)
        order = [a.name for a in design.arms] if design else sorted(bands)
        drawn = [arm for arm in order if bands.get(arm)]
        if not drawn:
            _no_data(ax, "no data: no run logged a training step yet")
            ax.set_title(title or "training reward")
            continue
        speed = design is not None and design.outcome == "learning_speed"
        for arm in drawn:
            steps, mean, low, high = (np.array(v) for v in zip(*bands[arm], strict=True))
            seeds = len({r.seed for r in results if r.arm == arm and r.curve})
            label = f"{arm} (mean of {seeds} seed{'s' if seeds != 1 else ''})"
            if speed and analysis and arm in analysis.arm_means:
                what = "steps to threshold" if design.threshold is not None else "AUC"
                label += f", {what} {analysis.arm_means[arm]:.3g}"
            ax.plot(
                steps,
                mean,
                color=colours[arm],
                marker="o" if len(steps) < 3 else None,
                ms=3,
                label=label,
            )
            ax.fill_between(steps, low, high, color=colours[arm], alpha=0.2, linewidth=0)
        if speed and design.threshold is not None:
            ax.axhline(design.threshold, color="0.4", linestyle="--", linewidth=1,
                       label=f"threshold {design.threshold:g}")  # fmt: skip
        default_title = "training reward per arm (band: min–max over seeds)"
        if speed:
            default_title = "training reward " + (
                f"(legend: steps to reach {design.threshold:g})"
                if design.threshold is not None
                else f"(legend: learning speed, AUC of steps 1–{design.steps})"
            )
        ax.set(
            xlabel="training step",
            ylabel="mean training reward",
            title=title or default_title,
        )
        if speed and design.threshold is None:
            ax.axvspan(1, design.steps, color="0.5", alpha=0.06, linewidth=0)  # the AUC's steps
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    return _save(fig, path)


def heldout_accuracy(ctx: ReportContext, path: Path) -> Path:
    """Held-out accuracy per arm: bars at the mean over seeds, 95% CI whiskers, a dot per seed
    (the whiskers only where the study was judged on held-out accuracy), and the untrained
    policy's score on the same items as a dashed horizontal line."""

    def seeds_of(design: Design | None, results: list[RunResult]) -> dict[str, list[float]]:
        per_seed: dict[str, list[float]] = {}
        for r in results:
            if usable(r):
                per_seed.setdefault(r.arm, []).append(heldout_metric(r))
        return per_seed

    def title_of(design: Design | None) -> str:
        metric = design.metric if design else "accuracy"
        family = f" on {design.eval_task}" if design else ""
        if design is not None and design.outcome != "heldout_accuracy":
            return f"held-out {metric}{family} (bars: mean; not the judged outcome)"
        return f"held-out {metric}{family} (bars: mean, whiskers: 95% CI)"

    return _arm_bars(ctx, path, seeds_of, title_of, judged=lambda d: d.outcome == "heldout_accuracy",
                     unit_range=True, empty="no data: no run finished with held-out outcomes",
                     baseline=True)  # fmt: skip


def outcome_scores(ctx: ReportContext, path: Path) -> Path:
    """The judged outcome per arm (learning speed, final training reward or cost): bars at
    the mean over seeds, 95% CI whiskers, a dot per seed."""

    def seeds_of(design: Design | None, results: list[RunResult]) -> dict[str, list[float]]:
        per_seed: dict[str, list[float]] = {}
        if design is None:
            return per_seed
        unit = cost_unit(results)
        for r in results:
            if unscored_reason(design, r, unit) is None:
                per_seed.setdefault(r.arm, []).append(run_score(design, r, unit))
        return per_seed

    def title_of(design: Design | None) -> str:
        return f"{short_label(design)} (bars: mean, whiskers: 95% CI)" if design else ""

    return _arm_bars(ctx, path, seeds_of, title_of, judged=lambda d: True, unit_range=False,
                     empty="no data: no run has a score on this outcome")  # fmt: skip


def _arm_bars(
    ctx, path, seeds_of, title_of, *, judged, unit_range: bool, empty: str, baseline: bool = False
) -> Path:
    panels = _panels(ctx)
    colours = arm_colours(ctx)
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(PANEL_W, PANEL_H * len(panels)), squeeze=False
    )
    rng = np.random.default_rng(0)  # dot jitter only
    for ax, (title, design, analysis, results) in zip(axes[:, 0], panels, strict=True):
        per_seed = seeds_of(design, results)
        untrained = analysis.baseline if baseline and analysis is not None else None
        if analysis is not None and (design is None or not judged(design)):
            analysis = None  # its means and intervals are of another outcome
        arms = [a.name for a in design.arms] if design else sorted(per_seed)
        ax.set_title(title or title_of(design))
        if not arms or not per_seed:
            _no_data(ax, empty)
            continue
        values = [v for seeds in per_seed.values() for v in seeds]
        span = (max(values) - min(0.0, min(values))) or 1.0
        tops = []
        for x, arm in enumerate(arms):
            seeds = per_seed.get(arm, [])
            if not seeds:
                ax.text(x, 0.02 * (1 if unit_range else span), "no finished\nruns", ha="center",
                        va="bottom", fontsize=8, color="0.4")  # fmt: skip
                continue
            mean = (
                analysis.arm_means.get(arm, float(np.mean(seeds)))
                if analysis
                else float(np.mean(seeds))
            )
            ax.bar(x, mean, width=0.6, color=colours[arm], alpha=0.55, edgecolor=colours[arm])
            top = max(mean, *seeds)
            if analysis and arm in analysis.arm_ci:
                low, high = analysis.arm_ci[arm]
                top = max(top, high)
                ax.errorbar(
                    x,
                    mean,
                    yerr=[[max(0.0, mean - low)], [max(0.0, high - mean)]],
                    color="black",
                    capsize=6,
                    linewidth=1.2,
                )
            jitter = rng.uniform(-0.12, 0.12, len(seeds))
            ax.scatter(x + jitter, seeds, color="black", s=14, zorder=3)
            label_at = min(1.06, top + 0.02) if unit_range else top + 0.02 * span
            shown = f"{mean:.2f}" if unit_range else f"{mean:.3g}"
            ax.text(x, label_at, shown, ha="center", va="bottom", fontsize=8)
            tops.append(top)
        ax.set_xticks(range(len(arms)), arms)
        ax.set(xlim=(-0.6, len(arms) - 0.4))
        if untrained is not None:
            ax.axhline(untrained, color="0.3", linestyle="--", linewidth=1.2, zorder=4,
                       label=f"untrained baseline {untrained:.2f}")  # fmt: skip
            ax.legend(fontsize=8, loc="upper right")
        if unit_range:
            ax.set(ylabel=f"held-out {design.metric if design else 'accuracy'}", ylim=(0, 1.12))
        else:
            ax.set(
                ylabel=short_label(design), ylim=(min(0.0, min(values)), max(tops) + 0.15 * span)
            )
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def seed_curves(ctx: ReportContext, path: Path) -> Path:
    """Training reward per step for every run: one line per arm × seed, one colour per arm
    (seeds of an arm told apart by line style), so a seed that diverged or never moved shows."""
    panels = _panels(ctx)
    colours = arm_colours(ctx)
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(PANEL_W, PANEL_H * len(panels)), squeeze=False
    )
    for ax, (title, design, _, results) in zip(axes[:, 0], panels, strict=True):
        ax.set_title(title or "training reward per run (colour: arm; one line per seed)")
        runs = sorted((r for r in results if r.curve), key=lambda r: (r.arm, r.seed))
        if not runs:
            _no_data(ax, "no data: no run logged a training step yet")
            continue
        order = [a.name for a in design.arms] if design else []
        seen: dict[str, int] = {}
        for r in sorted(runs, key=lambda r: (order.index(r.arm) if r.arm in order else 99, r.seed)):
            steps, values = zip(*sorted(r.curve), strict=True)
            k = seen[r.arm] = seen.get(r.arm, -1) + 1
            ax.plot(steps, values, color=colours.get(r.arm, "0.3"), linestyle=styles[k % 4],
                    marker="o" if len(steps) < 3 else None, ms=3, linewidth=1.2,
                    label=f"{r.arm} seed {r.seed}" + ("" if r.status == "finished" else f" ({r.status})"))  # fmt: skip
        ax.set(xlabel="training step", ylabel="mean training reward")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best", ncol=2 if len(runs) > 6 else 1)
    return _save(fig, path)
