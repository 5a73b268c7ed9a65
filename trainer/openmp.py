"""How long torch's OpenMP threads spin before they sleep: bounded, before torch loads.

Owns: `bound_openmp_spinning` — sets `GOMP_SPINCOUNT` (libgomp, the OpenMP runtime of
torch's CPU wheels) to `SPIN_COUNT` in this process's environment, unless the user set it
or `OMP_WAIT_POLICY`. libgomp reads it once, when torch first loads it, so a process must
call this before `import torch`; afterwards it changes nothing and says so.

Why: libgomp's default spin at a barrier is 300,000 iterations (milliseconds) — but only
while the process's OpenMP threads number no more than its cores; beyond that it throttles
itself to a short spin. A gateway serving one engine (a fresh gateway's base model, or an
ended run's policy that the evaluation reloaded alone) spins long, and on a machine whose
cores other processes keep busy a spinning thread burns the time slice its partner needs:
a batch of 8 greedy 24-token completions of the tiny model took 16.9 s alone vs 0.16 s
once a second engine had run (which throttles every team); with the bound, 0.17 s in both
cases (docs/engine.md, "Spinning on a busy machine"). The bound is libgomp's own
throttled regime — the one a gateway already decodes in once two engines have computed —
made the rule, whatever the number of engines. The price, on an otherwise idle machine
with one engine, is the short spin's wake-ups (~1.7x slower decoding, measured in
docs/engine.md); `GOMP_SPINCOUNT=300000` brings libgomp's default back.

Knows nothing of torch (it must run before torch loads), engines or the gateway.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

SPIN_COUNT = "1000"  # iterations, ~tens of µs: libgomp's throttled spin
USER_SETTINGS = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")


def bound_openmp_spinning(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set `GOMP_SPINCOUNT=SPIN_COUNT` unless the user chose a spin or wait policy.
    True when the bound applies to torch loaded later in this process; False when the user
    chose one, or torch is loaded already (too late: libgomp has read its settings)."""
    env = os.environ if environ is None else environ
    if any(name in env for name in USER_SETTINGS):
        return False
    env["GOMP_SPINCOUNT"] = SPIN_COUNT
    return "torch" not in sys.modules
