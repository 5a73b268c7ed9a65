"""`trainer.openmp`: the gateway bounds libgomp's spin before torch loads (a lone engine on a
busy machine otherwise spins away its partner thread's time: docs/engine.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.openmp import SPIN_COUNT, bound_openmp_spinning

REPO = Path(__file__).resolve().parents[3]


def _python(code: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**base, "PYTHONPATH": str(REPO), **(env or {})},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_bound_is_set_when_the_user_chose_none():
    env: dict[str, str] = {}
    bound_openmp_spinning(env)
    assert env == {"GOMP_SPINCOUNT": SPIN_COUNT}


def test_a_users_spin_or_wait_policy_is_kept():
    for chosen in ({"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": "ACTIVE"}):
        env = dict(chosen)
        assert bound_openmp_spinning(env) is False
        assert env == chosen


@pytest.mark.slow
def test_it_says_whether_torch_will_see_it():
    before = _python("from trainer.openmp import bound_openmp_spinning as b; print(b())")
    after = _python(
        "import torch\nfrom trainer.openmp import bound_openmp_spinning as b; print(b())"
    )
    assert (before, after) == ("True", "False")


@pytest.mark.slow
def test_gateway_serve_bounds_the_spin_before_torch_loads(tmp_path):
    """What the environment holds at the moment `gateway serve` first imports torch (the
    import is stopped there: nothing loads)."""
    probe = f"""
import importlib.abc, json, os, sys
seen = {{}}
class Stop(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not seen:
            seen["GOMP_SPINCOUNT"] = os.environ.get("GOMP_SPINCOUNT")
            raise ImportError("stopped at torch by the test")
sys.meta_path.insert(0, Stop())
from gateway.__main__ import cli
try:
    cli(["serve", "--model", "tiny", "--state-dir", {str(tmp_path)!r}], standalone_mode=False)
except BaseException:
    pass
print(json.dumps(seen))
"""
    assert json.loads(_python(probe, cwd=tmp_path)) == {"GOMP_SPINCOUNT": SPIN_COUNT}
