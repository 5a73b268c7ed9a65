"""Start a study from the UI: `python -m researcher.cli start …` as a detached process.

The child gets the UI's own `$SWARMRL_HOME` and database URL, runs in its own session (so
closing the UI does not stop it), and writes its output to `$SWARMRL_HOME/ui/start-*.log`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence

from researcher.settings import swarmrl_home


def start_command(
    question: str,
    *,
    budget: str,
    model: str,
    seeds: int,
    ask: bool,
    workflow: str | None = None,
    client_env: Sequence[str] = (),
) -> list[str]:
    command = [sys.executable, "-m", "researcher.cli", "start", question, "--budget", budget,
               "--model", model, "--seeds", str(seeds)]  # fmt: skip
    if workflow:
        command += ["--workflow", workflow]
    for name in client_env:
        command += ["--client-env", name]
    return [*command, "--ask"] if ask else command


def spawn_study(command: list[str], *, db_url: str) -> int:
    """Launch `command` detached; returns its pid."""
    log_dir = swarmrl_home() / "ui"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, SWARMRL_HOME=str(swarmrl_home()), SWARMRL_DB_URL=db_url)
    log = open(log_dir / f"start-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log", "ab")  # noqa: SIM115
    with log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)  # fmt: skip
    return process.pid
