"""Student's t distribution: the upper tail and quantiles, for any real degrees of freedom.

The analysis needs t quantiles at Welch–Satterthwaite (non-integer) degrees of freedom and
the project does not depend on scipy; this is the regularized incomplete beta function by
its continued fraction (Numerical Recipes §6.4), and bisection on it. Pure math, no state.
"""

from __future__ import annotations

import math

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


def t_quantile(p: float, df: float) -> float:
    """The t with P(T ≤ t) = p, for 0 < p < 1 and df > 0."""
    assert 0 < p < 1 and df > 0, (p, df)
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_upper_tail(high, df) > 1 - p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_upper_tail(mid, df) > 1 - p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2
