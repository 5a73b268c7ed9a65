"""Intervals for a difference of arm means, and the pre-registered rules that read them.

Student's t distribution (upper tail and quantiles at any real degrees of freedom, by the
regularized incomplete beta function's continued fraction — Numerical Recipes §6.4 — since
the project does not depend on scipy), an arm's scores with the variance of their mean,
Welch intervals of a difference, and `judge`: the verdict of a difference in a direction.
Pure math over plan records; the analysis (`researcher.analysis`) decides what to compare.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from researcher.outcomes import run_score
from researcher.plan import Design, RunResult

# said beside an interval of one seed per arm: it is over held-out items, not seeds
ONE_SEED_INTERVAL = (
    ": this interval is over the held-out items of one seed per arm, not over seeds — "
    "seed-to-seed variation is unknown, so it is no evidence of no effect"
)

_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""

    def floor(v: float) -> float:
        return v if abs(v) > _TINY else _TINY

    c, d = 1.0, 1 / floor(1 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 400):
        even = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m))
        d, c = 1 / floor(1 + even * d), floor(1 + even / c)
        h *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))
        d, c = 1 / floor(1 + odd * d), floor(1 + odd / c)
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * regularized_beta(df / 2, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1 - tail


def t_density(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def t_quantile(p: float, df: float) -> float:
    """The t with P(T ≤ t) = p, for 0 < p < 1 and df > 0: Newton's method from the normal
    quantile's Cornish–Fisher correction, kept inside a bracket by bisection."""
    assert 0 < p < 1 and df > 0, (p, df)
    if p < 0.5:
        return -t_quantile(1 - p, df)
    tail = 1 - p
    z = NormalDist().inv_cdf(p)
    t = z + (z**3 + z) / (4 * df)
    low, high = 0.0, math.inf
    for _ in range(100):
        excess = t_upper_tail(t, df) - tail  # > 0: t is below the quantile
        if excess > 0:
            low = t
        else:
            high = t
        step = excess / t_density(t, df)
        t_next = t + step
        if not low < t_next < high:  # Newton left the bracket: bisect (or double)
            t_next = (low + high) / 2 if math.isfinite(high) else 2 * max(t, 1.0)
        if abs(t_next - t) < 1e-12 * max(1.0, t):
            return t_next
        t = t_next
    return t


LEVEL = 0.95  # the interval every arm and comparison reports
ALPHA = 1 - LEVEL
Interval = tuple[float, float]


@dataclass
class ArmScores:
    """One arm's runs, their scores, and the variance of the arm's mean with its df."""

    runs: list[RunResult]
    scores: np.ndarray
    var_mean: float
    df: float  # degrees of freedom of var_mean; 0 when it cannot be estimated

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))

    def interval(self, level: float = LEVEL) -> Interval:
        return t_interval(self.mean, self.var_mean, self.df, level)


def t_interval(centre: float, var: float, df: float, level: float) -> Interval:
    if var <= 0 or df <= 0:
        return centre, centre
    half = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(var)
    return centre - half, centre + half


def item_variance(result: RunResult) -> float:
    """The variance of one seed's held-out mean from its items alone. Scored 1/0: binomial,
    the proportion shrunk by half an item either way so a seed that solved all or none still
    counts as uncertain. Any other scores (a user workflow's own rewards, e.g. 0.0–1.1):
    their sample variance over the items, divided by their number."""
    outcomes = result.eval_outcomes
    n = len(outcomes)
    if n > 1 and any(v not in (0.0, 1.0) for v in outcomes):
        return float(np.var(outcomes, ddof=1)) / n
    p = (sum(outcomes) + 0.5) / (n + 1)
    return p * (1 - p) / n


def arm_scores(design: Design, runs: list[RunResult], unit: str) -> ArmScores:
    """Scores and the variance of their mean: the seeds' sample variance over n (df n − 1);
    for held-out accuracy at least the items' binomial variance (then df from the items)."""
    scores = np.array([run_score(design, r, unit) for r in runs])
    n = len(scores)
    seed_var = float(np.var(scores, ddof=1)) if n > 1 else 0.0
    if design.outcome == "heldout_accuracy":
        item_var = float(np.mean([item_variance(r) for r in runs]))
        if n < 2 or seed_var < item_var:
            items = sum(len(r.eval_outcomes) for r in runs)
            return ArmScores(runs, scores, item_var / n, max(1, items - n))
    return ArmScores(runs, scores, seed_var / n, n - 1 if seed_var > 0 else 0)


def welch(treatment: ArmScores, control: ArmScores) -> tuple[float, float]:
    """The variance of the difference of means and its Welch–Satterthwaite df."""
    var = treatment.var_mean + control.var_mean
    parts = [(a.var_mean**2 / a.df) for a in (treatment, control) if a.var_mean > 0 and a.df > 0]
    return var, (var**2 / sum(parts)) if parts and var > 0 else 0.0


def judge(
    direction: str,
    difference: float,
    interval_at: Callable[[float], Interval],
    *,
    min_effect: float,
    margin: float,
    comparisons: int = 1,
) -> tuple[str, Interval]:
    """The verdict of one difference by the pre-registered rule, and the interval it used.

    `interval_at(level)` gives the difference's two-sided interval at `level`. With k
    comparisons the superiority intervals are Bonferroni-widened to 1 − 0.05/k.
    - greater: supported when the interval lies above 0 and the difference ≥ min_effect;
      refuted when its upper end is below min_effect.
    - less: the mirror: supported when it lies below 0 and the difference ≤ −min_effect;
      refuted when its lower end is above −min_effect.
    - two_sided: supported when it excludes 0 and |difference| ≥ min_effect; refuted when
      it lies within ±min_effect.
    - equivalent (TOST): supported when the 90% interval lies inside ±margin (two one-sided
      5% tests; each comparison must pass, so no widening); refuted when the (widened) 95%
      interval lies entirely outside ±margin.
    - noninferior: supported when the 90% interval's lower end is above −margin (one
      one-sided 5% test; each comparison must pass, so no widening); refuted when the
      (widened) 95% interval lies entirely below −margin. "nonsuperior" is its mirror for a
      score where lower is better (steps to a threshold): upper end below +margin.
    """
    low, high = wide = interval_at(1 - ALPHA / comparisons)
    if direction == "equivalent":
        tost_low, tost_high = tost = interval_at(1 - 2 * ALPHA)
        if -margin < tost_low and tost_high < margin:
            return "supported", tost
        return ("refuted" if low > margin or high < -margin else "inconclusive"), tost
    if direction in ("noninferior", "nonsuperior"):
        one_low, one_high = one_sided = interval_at(1 - 2 * ALPHA)
        if direction == "noninferior":
            supported, refuted = one_low > -margin, high < -margin
        else:
            supported, refuted = one_high < margin, low > margin
        return ("supported" if supported else "refuted" if refuted else "inconclusive"), one_sided
    if direction == "less":
        supported, refuted = high < 0 and difference <= -min_effect, low > -min_effect
    elif direction == "two_sided":
        supported = (low > 0 or high < 0) and abs(difference) >= min_effect
        refuted = -min_effect < low and high < min_effect
    else:
        supported, refuted = low > 0 and difference >= min_effect, high < min_effect
    return ("supported" if supported else "refuted" if refuted else "inconclusive"), wide
