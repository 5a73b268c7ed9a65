"""Every module of the swarm client imports with torch blocked, and pulls in nothing of ours
outside `swarm` — the SDK runs on a laptop with neither torch nor the gateway installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

BLOCKED_IMPORTS = """
import sys

class BlockTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
        return None

sys.meta_path.insert(0, BlockTorch())
import swarm, swarm.cli, swarm.client, swarm.episode, swarm.errors, swarm.progress
import swarm.protocol, swarm.runner, swarm.workflow
import swarm.tasks, swarm.tasks.answers, swarm.tasks.splits
import swarm.tasks.arithmetic, swarm.tasks.calculator, swarm.tasks.guess_number, swarm.tasks.learnable
import swarm.tasks.reasoning_gym, swarm.tasks.countdown, swarm.tasks.chain_sum
import swarm.tasks.basic_arithmetic, swarm.tasks.letter_counting, swarm.tasks.mastermind
import swarm.tasks.bfcl, swarm.tasks.bfcl_multi_turn
from swarm import Episode, SwarmClient
from swarm.workflow import load_workflow
for example in ("learnable", "arithmetic", "calculator", "guess_number", "team", "countdown", "reasoning_gym_any", "mastermind", "bfcl"):
    load_workflow(f"examples/{example}.py")
from swarm.tasks import countdown
task = next(countdown.tasks("test"))  # reasoning-gym itself loads and scores without torch
assert countdown.reward("Answer: " + task["answer"], task) == 1.0
import importlib.util
if importlib.util.find_spec("bfcl_eval"):  # BFCL's checker and backends run without torch
    from swarm.tasks import bfcl
    task = next(bfcl.tasks("test", category="multi_turn_base"))
    assert bfcl.multi_turn_reward([[turn] if turn else [] for turn in task["ground_truth"]], task) == 1.0
    assert bfcl.reward(None, next(bfcl.tasks("test"))) == 0.0
ours = {"trainer", "gateway", "experiments_db", "researcher", "prompts", "tests"}
leaked = sorted(name for name in sys.modules if name.split(".")[0] in ours | {"torch"})
assert not leaked, leaked
print("ok")
"""


@pytest.mark.slow
def test_the_swarm_client_and_its_tasks_import_with_torch_blocked():
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORTS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
