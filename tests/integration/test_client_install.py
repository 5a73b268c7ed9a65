"""The client-only install (client/pyproject.toml, the `swarmrl-client` distribution) for
real: built into a fresh venv with pip as configured on this machine (the same indexes and
find-links `make install` uses), it has no torch, `swarm --help` works, its reasoning-gym
families import without reasoning-gym, and its `swarm run` trains a run on a real
`gateway serve --model tiny` started from the main venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import shared_tiny, wait_for

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
WORKFLOW = Path(__file__).parent / "workflows" / "length_reward.py"


def _client_env() -> dict[str, str]:
    """This process's environment without what would let the venv see the repository or the
    main venv (PYTHONPATH, VIRTUAL_ENV); pip's own settings (PIP_*) stay."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    """A fresh venv with only `pip install ./client` in it, built from a copy of client/ and
    swarm/ (pip builds in the source tree; the copy keeps the checkout clean). Its bin dir."""
    tmp = tmp_path_factory.mktemp("client-install")
    source = tmp / "src"
    shutil.copytree(
        REPO / "client", source / "client", ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    shutil.copytree(REPO / "swarm", source / "swarm", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(source / "client")],
        capture_output=True, text=True, timeout=600, env=_client_env(), cwd=tmp,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin"


def _python(bin_dir: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_dir / "python"), "-c", code],
        capture_output=True, text=True, timeout=120, env=_client_env(), cwd=bin_dir.parent,
    )  # fmt: skip


def test_the_client_venv_has_swarm_and_no_torch(client_venv):
    no_torch = _python(client_venv, "import torch")
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr
    where = _python(client_venv, "import swarm, sys; print(swarm.__file__)")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(client_venv.parent)  # not the checkout
    listed = subprocess.run(
        [str(client_venv / "pip"), "list", "--format=freeze"],
        capture_output=True, text=True, timeout=120, env=_client_env(),
    )  # fmt: skip
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "swarmrl-client" in names
    assert not names & {"torch", "transformers", "numpy", "fastapi", "swarmrl", "reasoning-gym"}


def test_swarm_help_works_in_the_client_venv(client_venv):
    helped = subprocess.run(
        [str(client_venv / "swarm"), "--help"],
        capture_output=True, text=True, timeout=120, env=_client_env(),
    )  # fmt: skip
    assert helped.returncode == 0, helped.stderr
    assert "run" in helped.stdout and "eval" in helped.stdout


def test_reasoning_gym_families_import_without_reasoning_gym_and_say_what_to_install(
    client_venv,
):
    drawn = _python(client_venv, "import swarm.tasks.countdown as c; list(c.tasks('train', n=1))")
    assert drawn.returncode != 0
    assert "pip install" in drawn.stderr and "reasoning-gym" in drawn.stderr


def test_swarm_run_from_the_client_venv_trains_a_run_on_a_real_gateway(
    client_venv, tmp_path, shared_tiny_gateway
):
    gw = shared_tiny(shared_tiny_gateway)  # its run: "client-only"
    created = httpx.post(
        f"{gw.url}/runs",
        timeout=120,
        json={
            "name": "client-only",
            "policies": {"policy": {"base_model": "tiny"}},
            "lr": 1e-3,
            "group_size": 2,
            "batch_groups": 1,
            "max_steps": 1,
            "max_staleness": 4,
            "zero_variance_groups": "keep",  # a tie on the length reward still trains
        },
    )
    assert created.status_code == 201, created.text
    workflow = tmp_path / "length_reward.py"
    shutil.copy(WORKFLOW, workflow)  # beside nothing of the repository
    done = subprocess.run(
        [str(client_venv / "swarm"), "run", str(workflow), "--gateway", gw.url,
         "--run", "client-only", "--max-episodes", "8", "--concurrency", "2"],
        capture_output=True, text=True, timeout=300, env=_client_env(), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run = wait_for(
        lambda: (
            (info := httpx.get(f"{gw.url}/runs/client-only").json())["status"] != "running" and info
        )
    )
    assert (run["status"], run["step"]) == ("finished", 1)
    assert run["episodes_finished"] >= 2 and run["samples_trained"] > 0
    assert run["policies"]["policy"]["version"] >= 1
