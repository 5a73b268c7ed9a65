"""The stopping rule for a study that looks at its data more than once.

Owns the per-look error rates of a comparison that is re-judged after each round (each
round adds a seed per arm, up to `max_looks` rounds) and stops at the first verdict. Tested
at the full 5% at every look, such optional stopping calls a true null "supported" far more
often than 5% of the time (three looks: about 10% for a two-sided question;
`tests/unit/researcher/test_sequential.py` shows it). Pure arithmetic: it knows nothing of
runs, designs or the analysis that applies it.

The rule is **alpha spending** with the **Kim–DeMets power spending function**
α(t) = α·t² (ρ = 2, an O'Brien–Fleming-like shape: little error is spent at the first,
smallest look, most at the last), the looks equally spaced in information (t_k = k/K). Look k
is tested at the error it spends, α_k = α(t_k) − α(t_{k−1}); the α_k sum to α, so by the
union bound the chance of any false verdict over all looks is at most α *whatever the
dependence between looks*. That matters here: a round re-trains its seeds, so successive
looks share seeds only as far as training is deterministic in its seed, and group-sequential
boundaries derived for nested data (which allow larger α_k) could overshoot α on fresh data.
With one look (`max_looks=1`) the rule is exactly the single-look rule.

α is the error of the single-look rule: 2.5% on each side of the 95% interval for greater,
less and two-sided questions (the two sides together 5%), and 5% for each one-sided test of
an equivalence (TOST) question, whose single-look interval is 90%.

    from researcher.sequential import look_level, describe
    look_level(2, 3, "greater")   # 0.9833...: the verdict interval's level at look 2 of 3
"""

from __future__ import annotations

from collections.abc import Callable

SPENDING_POWER = 2.0  # ρ of α(t) = α·t^ρ
# non-inferiority is one one-sided 5% test: the 90% interval's worse end ("nonsuperior" is
# its mirror on a scale where lower is better, steps to a threshold)
SINGLE_LOOK_LEVEL = {
    "greater": 0.95,
    "less": 0.95,
    "two_sided": 0.95,
    "equivalent": 0.90,
    "noninferior": 0.90,
    "nonsuperior": 0.90,
}


def spent_share(look: int, max_looks: int) -> float:
    """The share of the study's α that look `look` of `max_looks` spends: t_k^ρ − t_{k−1}^ρ
    with t_k = k/K. The shares over all looks sum to 1."""
    if max_looks < 1 or not 1 <= look <= max_looks:
        raise ValueError(f"look must be in 1..max_looks (got look {look} of {max_looks})")
    return (look / max_looks) ** SPENDING_POWER - ((look - 1) / max_looks) ** SPENDING_POWER


def look_level(look: int, max_looks: int, direction: str) -> float:
    """The nominal two-sided level of the interval the verdict reads at this look: the
    95% interval (greater, less, two-sided) or the 90% TOST interval (equivalent) of a
    single look, widened so that its error is this look's share of the study's."""
    if direction not in SINGLE_LOOK_LEVEL:
        raise ValueError(f"unknown direction {direction!r}")
    return 1 - (1 - SINGLE_LOOK_LEVEL[direction]) * spent_share(look, max_looks)


def spending(
    interval_at: Callable[[float], tuple[float, float]], look: int, max_looks: int
) -> Callable[[float], tuple[float, float]]:
    """`interval_at` (a level → the interval at that level) with every level's error scaled to
    this look's share: a rule that asks for its single-look interval (95%, 90% TOST, or a
    Bonferroni-widened one) gets the look's instead."""
    share = spent_share(look, max_looks)
    if share == 1.0:
        return interval_at
    return lambda level: interval_at(1 - (1 - level) * share)


def describe(max_looks: int, direction: str, seeds_per_look: int = 1) -> str:
    """The rule in words for the decision rule and the report."""
    if max_looks <= 1:
        return "One look: the verdict is read once, when the planned seeds have finished."
    levels = ", ".join(f"{look_level(k, max_looks, direction):.2%}"
                       for k in range(1, max_looks + 1))  # fmt: skip
    interval = {
        "equivalent": "90% TOST interval",
        "noninferior": "90% interval (its lower end: a one-sided 5% test)",
        "nonsuperior": "90% interval (its upper end: a one-sided 5% test)",
    }.get(direction, "95% interval")
    return (
        f"Sequential seeds: an inconclusive look is followed by another that adds "
        f"{'one more seed' if seeds_per_look == 1 else f'{seeds_per_look} more seeds'} per "
        f"arm (the earlier seeds' runs are kept), up to {max_looks} looks, stopping at the "
        f"first verdict. To keep the chance "
        f"of a false verdict over all looks within that of one look, the verdict reads the "
        f"{interval} widened by Kim–DeMets power (ρ = 2, O'Brien–Fleming-like) alpha spending "
        f"over up to {max_looks} looks: levels {levels} at looks 1–{max_looks}, before any "
        f"split between treatments (the looks' error rates add up to one look's, so they hold "
        f"however the looks' seeds overlap)."
    )
