"""The plain-language answer at the top of a report: "Yes: …", "No: …" or "Can't tell: …".

`plain_answer(framing, design, analysis)` answers the question *as read* (the reading's
factor, levels, task, outcome and direction) in one paragraph: what was found, the key
number with its 95% interval and how many seeds it rests on, the untrained baseline when
it matters (did the arms beat it?), and *because* — which part of the pre-registered rule
decided, at which look of the stopping rule. The analyse node stores it in
`Analysis.answer`; the report calls it itself for studies analysed before answers existed.

Plain words over plan records (`researcher.plan`): it applies no statistics of its own and
knows nothing of the graph, the gateway, the database or the report's layout.
"""

from __future__ import annotations

from researcher.pilot import mean_run_seconds
from researcher.plan import (
    MARGIN_DIRECTIONS,
    Analysis,
    Arm,
    Comparison,
    Design,
    Framing,
    Level,
    Trend,
)
from researcher.planner.design_space import format_number, level_phrase

# a run setting's name in words, for "a learning rate of 4e-5"
FACTOR_WORDS = {
    "lr": "learning rate",
    "kl_coef": "KL coefficient",
    "group_size": "GRPO group size",
    "batch_groups": "batch size (groups per step)",
    "clip_eps": "clip range",
    "max_staleness": "staleness limit",
    "max_steps": "training length (steps)",
    "temperature": "sampling temperature",
    "max_tokens": "completion-length limit",
    "max_turns": "turn limit",
    "algorithm": "algorithm",
}
OPENING = {"supported": "Yes", "refuted": "No", "inconclusive": "Can't tell",
           "not_testable": "Can't tell"}  # fmt: skip


def plain_answer(framing: Framing, design: Design, analysis: Analysis) -> str:
    """One paragraph answering the question as read, starting "Yes:", "No:" or "Can't tell:"
    (inconclusive and not_testable are both "Can't tell"), with the key number, its interval,
    the baseline when it matters, and the rule that decided ("Because …")."""
    words = _Words(framing, design, analysis)
    verdict = analysis.verdict
    if verdict == "not_testable":
        body = words.not_testable()
    elif analysis.trend is not None and analysis.trend.verdict is not None:
        body = words.trend(analysis.trend)
    else:
        comparison = words.key_comparison()
        body = words.comparison(comparison) if comparison else words.no_comparison()
    if verdict != "not_testable":
        body += "".join(f" {caveat}" for caveat in analysis.caveats)
    return f"{OPENING[verdict]}: {body}"


class _Words:
    """The pieces of one answer; each method returns finished sentences."""

    def __init__(self, framing: Framing, design: Design, analysis: Analysis) -> None:
        self.framing, self.design, self.analysis = framing, design, analysis
        self.reading = framing.reading
        self.factor = self.reading.factor if self.reading else None
        self.task = (self.reading.task if self.reading else None) or design.eval_family
        if self.task == design.eval_family:
            self.task = design.eval_task  # with its level: "countdown (level tiny)"
        if self.task == "workflow":
            self.task = "your workflow"
        self.steps_outcome = design.outcome == "learning_speed" and design.threshold is not None
        self.unit = _cost_unit(analysis)

    # -- pieces -----------------------------------------------------------------------------

    def arm_words(self, name: str) -> str:
        arm = next((a for a in self.design.arms if a.name == name), None)
        if arm is None or self.factor is None or (arm.level is None and self.factor != "max_turns"):
            return name
        return self.level_words(arm.level)

    def level_words(self, level: Level) -> str:
        if (
            self.factor in FACTOR_WORDS
            and isinstance(level, int | float | str)
            and not isinstance(level, bool)
        ):
            value = format_number(level) if isinstance(level, int | float) else level
            return f"a {FACTOR_WORDS[self.factor]} of {value}"
        return level_phrase(self.factor or "", level)

    def control(self) -> Arm | None:
        return next((a for a in self.design.arms if a.role == "control"), None)

    def outcome_noun(self) -> str:
        d = self.design
        if d.outcome == "learning_speed":
            if self.steps_outcome:
                return f"training steps to reach a training reward of {d.threshold:g}"
            return f"mean training reward per step over steps 1–{d.steps}"
        if d.outcome == "final_train_reward":
            return "final training reward"
        if d.outcome == "cost":
            return "seconds of training wall time" if self.unit == "wall_s" else "tokens trained on"
        return f"held-out {d.metric} on {d.eval_task}"

    def difference_words(self, value: float, low: float, high: float) -> str:
        """'0.21 more mean training reward per step (95% CI 0.12 to 0.30)'."""
        more, less = (
            ("more", "fewer")
            if self.steps_outcome or self.design.outcome == "cost"
            else ("more", "less")
        )
        if self.design.outcome in ("heldout_accuracy", "final_train_reward"):
            more, less = "higher", "lower"
        way = more if value >= 0 else less
        return (f"{_num(abs(value))} {way} {self.outcome_noun()} (95% CI {_num(low)} to "
                f"{_num(high)})")  # fmt: skip

    def compared_words(self, treatment: str, control: str, verdict: str) -> str:
        """What the reading claims, as found (or not): 'a learning rate of 4e-5 learned …
        faster than 1e-5'."""
        t, c = self.arm_words(treatment), self.arm_words(control)
        on = f" on {self.task}"
        d, direction = self.design, self.design.direction
        if direction in MARGIN_DIRECTIONS:
            margin = format_number(d.margin if d.margin is not None else d.min_effect)
            label = self.outcome_label()
            # (supported, refuted, undecided) for each test against a margin
            supported, refuted, undecided = {
                "noninferior": (
                    f"{t} is no worse than {c}{on} on {label} (by more than {margin})",
                    f"{t} is worse than {c}{on} on {label}, by more than {margin}",
                    f"whether {t} is no worse than {c}{on} (by more than {margin})",
                ),
                "equivalent": (
                    f"{t} is as good as {c}{on} on {label}, within ±{margin}",
                    f"{t} is not as good as {c}{on} — they differ by more than ±{margin} on "
                    f"{label}",
                    f"whether {t} is as good as {c}{on} (within ±{margin})",
                ),
            }[direction]
            return {"supported": supported, "refuted": refuted}.get(verdict, undecided)
        if d.outcome == "learning_speed":
            verb = {"greater": "learned faster than", "less": "learned slower than",
                    "two_sided": "learned at a different pace from"}[direction]  # fmt: skip
        elif d.outcome == "cost":
            verb = {"greater": "cost more to train than", "less": "cost less to train than",
                    "two_sided": "cost a different amount to train from"}[direction]  # fmt: skip
        else:
            what = self.outcome_label()
            verb = {"greater": f"gave higher {what} than", "less": f"gave lower {what} than",
                    "two_sided": f"changed {what} compared with"}[direction]  # fmt: skip
        if verdict == "supported":
            return f"{t} {verb} {c}{on}"
        negated = {"learned": "did not learn", "cost": "did not cost", "gave": "did not give",
                   "changed": "did not change"}  # fmt: skip
        first, rest = verb.split(" ", 1)
        if verdict == "refuted":
            return f"{t} {negated[first]} {rest} {c}{on}"
        return f"whether {t} {_present(first)} {rest} {c}{on}"

    def outcome_label(self) -> str:
        d = self.design
        if d.outcome == "heldout_accuracy":
            return f"held-out {d.metric}"
        if d.outcome == "final_train_reward":
            return "final training reward"
        if d.outcome == "cost":
            return "training cost"
        return "learning speed"

    def seeds_words(self, n_seeds: int) -> str:
        return f"over {n_seeds} seed{'s' if n_seeds != 1 else ''} each"

    def look_words(self) -> str:
        d = self.design
        if d.max_looks <= 1:
            return "judged once, as planned"
        return (f"at look {d.look} of up to {d.max_looks} of the sequential rule (alpha "
                f"spending keeps the chance of a false verdict over all looks at 5%)")  # fmt: skip

    def baseline_words(self) -> str:
        """'both arms beat the untrained model (0.30 held-out)', or '' when not evaluated."""
        a = self.analysis
        if a.baseline is None:
            return ""
        score = f"{_num(a.baseline)} held-out"
        if not a.learned:
            return f"the untrained model scored {score}"
        beat = [self.arm_words(n) for n, v in a.learned.items() if v.verdict == "learned"]
        n = len(a.learned)
        if len(beat) == n:
            who = "both arms" if n == 2 else f"all {n} arms"
            return f"{who} beat the untrained model ({score})"
        if not beat:
            who = "neither arm" if n == 2 else "no arm"
            return f"{who} clearly beat the untrained model ({score})"
        return f"only {', '.join(beat)} clearly beat the untrained model ({score})"

    def because(self, comparison: Comparison, verdict: str) -> str:
        d = self.design
        m = format_number(d.min_effect)
        margin = format_number(d.margin if d.margin is not None else d.min_effect)
        interval = "interval"
        if comparison.decision_ci is not None:
            interval = "decision interval (widened for the look and the number of treatments)"
        reason = {
            ("greater", "supported"): f"the whole {interval} lies above 0 and the difference "
            f"reaches the smallest effect that counts ({m})",
            ("less", "supported"): f"the whole {interval} lies below 0 and the difference "
            f"reaches the smallest effect that counts (−{m})",
            ("two_sided", "supported"): f"the {interval} excludes 0 and the difference reaches "
            f"the smallest effect that counts (±{m})",
            ("equivalent", "supported"): f"the 90% {interval} lies inside the margin ±{margin} "
            "(two one-sided tests)",
            ("greater", "refuted"): f"the {interval}'s upper end lies below the smallest effect "
            f"that counts ({m})",
            ("less", "refuted"): f"the {interval}'s lower end lies above the smallest effect "
            f"that counts (−{m})",
            ("two_sided", "refuted"): f"the {interval} lies within ±{m}, the smallest effect "
            "that counts",
            ("equivalent", "refuted"): f"the {interval} lies entirely outside the margin ±{margin}",
            ("noninferior", "supported"): f"the 90% {interval} lies above −{margin}: the "
            f"treatment is at worst {margin} behind (a one-sided 5% test)",
            ("noninferior", "refuted"): f"the {interval} lies entirely below −{margin}",
        }.get((d.direction, verdict))
        if reason is None:  # inconclusive
            reason = (f"the {interval} is too wide to decide: it admits both no effect and one "
                      f"of the smallest size that counts ({m})")  # fmt: skip
            if d.direction == "equivalent":
                reason = (f"the {interval} neither lies inside ±{margin} nor entirely outside "
                          "it")  # fmt: skip
            if d.direction == "noninferior":
                reason = (f"the {interval} reaches below −{margin} without lying entirely "
                          "below it")  # fmt: skip
        return f"Because {reason}, {self.look_words()}."

    # -- answers ----------------------------------------------------------------------------

    def key_comparison(self) -> Comparison | None:
        comparisons = self.analysis.comparisons
        decided = [c for c in comparisons if c.verdict == self.analysis.verdict]
        return (decided or comparisons or [None])[0]

    def comparison(self, c: Comparison) -> str:
        verdict = self.analysis.verdict
        lead = self.compared_words(c.treatment, c.control, verdict)
        if verdict == "inconclusive":
            lead = f"this study could not tell {lead}"
        number = self.difference_words(c.difference, c.ci_low, c.ci_high)
        text = f"{lead} — {number} {self.seeds_words(c.n_seeds)}"
        if len(self.analysis.comparisons) > 1:
            others = [o for o in self.analysis.comparisons if o is not c]
            text += "; " + "; ".join(
                f"{self.arm_words(o.treatment)}: {_num(o.difference)} ({o.verdict or 'no verdict'})"
                for o in others
            )
        baseline = self.baseline_words()
        text += f"; {baseline}." if baseline else "."
        text = f"{text} {self.because(c, verdict)}"
        if verdict == "inconclusive":
            text += self.what_would_decide(c)
        return text

    def what_would_decide(self, c: Comparison) -> str:
        """For an inconclusive answer: what this design could detect and what more seeds
        cost (from the pilot's measured run cost), so the reader knows what to do next."""
        d = self.design
        words = ""
        if d.mde is not None:
            words += (f" This design could only detect a difference of {_num(d.mde)} or more "
                      f"with 80% power (its minimum detectable effect, stated before the "
                      f"comparison ran, for {_last_seeds(d)} seeds per arm "
                      f"at its last look).")  # fmt: skip
        if (run_s := mean_run_seconds(d, d.pilot)) is not None:
            minutes = len(d.arms) * run_s / 60
            words += (f" One more seed per arm costs about {minutes:.0f} min of budget here: "
                      "a study with a larger --budget adds seeds until the rule decides.")  # fmt: skip
        return words

    def trend(self, trend: Trend) -> str:
        verdict = self.analysis.verdict
        direction = {"greater": "raises", "less": "lowers", "two_sided": "changes"}.get(
            self.design.direction, "changes")  # fmt: skip
        factor = FACTOR_WORDS.get(self.factor or "", self.factor or trend.factor)
        levels = [a.level for a in self.design.arms if a.level is not None]
        span = (f" from {format_number(levels[0])} to {format_number(levels[-1])}"
                if len(levels) >= 2 and all(isinstance(v, int | float) for v in levels) else "")  # fmt: skip
        claim = f"raising the {factor}{span} {direction} {self.outcome_label()} on {self.task}"
        if verdict == "refuted":
            claim = (
                f"raising the {factor}{span} does not {direction.removesuffix('s')} "
                f"{self.outcome_label()} on {self.task}"
            )
        elif verdict != "supported":
            claim = f"this study could not tell whether {claim}"
        text = (f"{claim} — a fitted change of {_num(trend.change)} (slope {trend.slope:+.3g} "
                f"per unit of {trend.factor}, 95% CI {trend.ci_low:+.3g} to {trend.ci_high:+.3g}) "
                f"over {trend.n_runs} runs")  # fmt: skip
        baseline = self.baseline_words()
        text += f"; {baseline}." if baseline else "."
        m = format_number(self.design.min_effect)
        reason = {"supported": f"the trend's fitted change clears the smallest effect that counts ({m})",
                  "refuted": f"the trend's fitted change stays below the smallest effect that counts ({m})"}.get(
            verdict, "the trend's interval is too wide to decide")  # fmt: skip
        return (
            f"{text} Because {reason} (a dose-response rule over {len(levels)} "
            f"levels), {self.look_words()}."
        )

    def not_testable(self) -> str:
        a = self.analysis
        if a.failed_runs:
            return f"{a.failed_runs}."
        steps = max((v.steps for v in a.learned.values()), default=self.design.steps)
        steps = steps or self.design.steps
        comparison = self.key_comparison()
        question = (self.compared_words(comparison.treatment, comparison.control, "inconclusive")
                    if comparison else "how the arms compare")  # fmt: skip
        held = [f"{_num(v.heldout)} for {self.arm_words(n)}" for n, v in a.learned.items()
                if v.heldout is not None]  # fmt: skip
        scores = f" (held-out {'; '.join(held)}" if held else ""
        if scores and a.baseline is not None:
            scores += f" against the untrained model's {_num(a.baseline)})"
        elif scores:
            scores += ")"
        return (f"no arm learned {self.task} in {steps} training steps{scores}, so the study "
                f"cannot say {question}. Because a comparison of policies that did not learn "
                "says nothing about what the factor does to learning, the rule's verdict is "
                "not testable rather than inconclusive.")  # fmt: skip

    def no_comparison(self) -> str:
        return (f"no comparison could be drawn on {self.outcome_label()} — "
                f"{_first_sentence_about_problems(self.analysis.summary)}")  # fmt: skip


def _cost_unit(analysis: Analysis) -> str:
    return "tokens" if "token" in analysis.outcome_label else "wall_s"


def _last_seeds(design: Design) -> int:
    """Seeds per arm at the design's last look (each later look adds `seeds_per_look`)."""
    return len(design.seeds) + design.seeds_per_look * (design.max_looks - design.look)


def _num(value: float | None) -> str:
    if value is None:
        return "—"
    if value != 0 and (abs(value) >= 1000 or abs(value) < 0.01):
        return f"{value:.3g}"
    return f"{value:.2f}"


def _present(first: str) -> str:
    return {"learned": "learns", "cost": "costs", "gave": "gives", "changed": "changes"}[first]


def _first_sentence_about_problems(summary: str) -> str:
    marker = "No verdict can be drawn because "
    if marker in summary:
        return summary[summary.index(marker) + len(marker) :].split(".")[0] + "."
    return "the runs gave no usable scores."
