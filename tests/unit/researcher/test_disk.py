"""A study keeps within its disk budget by deleting scored runs' weights, oldest first."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from researcher.disk import DELETED, KEEP_SHARE, keep_within_disk_budget
from researcher.gateway_api import GatewayRefused

MB = 10**6


class FolderGateway:
    """Checkpoints as files in the study folder, as an embedded gateway keeps them."""

    def __init__(self, root: Path, runs: dict[str, int]):
        self.root = root
        for run, size in runs.items():
            (root / run / "step-4").mkdir(parents=True)
            (root / run / "step-4" / "model.safetensors").write_bytes(b"\0" * size)
        self.deleted: list[tuple[str, int]] = []

    def checkpoints(self, run: str) -> list[dict]:
        if run == "remote-only":
            raise GatewayRefused("GET → 404", status=404, code="run_not_found")
        return [{"step": 4}] if (self.root / run / "step-4").exists() else []

    def delete_checkpoint(self, run: str, step: int) -> None:
        shutil.rmtree(self.root / run / f"step-{step}")
        self.deleted.append((run, step))


def _ctx(tmp_path: Path, runs: dict[str, int], budget: int):
    events: list[tuple] = []
    gateway = FolderGateway(tmp_path, runs)
    ctx = SimpleNamespace(
        settings=SimpleNamespace(disk_budget_bytes=budget), directory=tmp_path, gateway=gateway,
        event=lambda *a, **k: events.append((a, k)),
    )  # fmt: skip
    return ctx, gateway, events


def test_under_half_the_budget_nothing_is_deleted(tmp_path):
    ctx, gateway, events = _ctx(tmp_path, {"a": 2 * MB, "b": 2 * MB}, budget=10 * MB)
    assert keep_within_disk_budget(ctx, ["a", "b"]) == []
    assert gateway.deleted == [] and events == []


def test_the_oldest_scored_runs_go_until_the_folder_is_under_half_its_budget(tmp_path):
    runs = {"a": 3 * MB, "b": 3 * MB, "c": 3 * MB, "d": 3 * MB}
    ctx, gateway, events = _ctx(tmp_path, runs, budget=14 * MB)
    deleted = keep_within_disk_budget(ctx, ["a", "b", "c"])  # d is not scored yet
    assert deleted == ["a", "b"]  # 12 MB → 9 → 6 MB ≤ 7 MB (half of 14)
    assert gateway.deleted == [("a", 4), ("b", 4)]
    assert (tmp_path / "d" / "step-4").exists() and (tmp_path / "c" / "step-4").exists()
    (args, kwargs), _ = events
    assert DELETED in args[2] and kwargs["data"] == {"deleted_weights": "a"}
    assert "12 MB of its 14 MB disk budget; now 9 MB" in kwargs["reason"]
    assert sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file()) <= KEEP_SHARE * 14 * MB


def test_a_run_the_gateway_does_not_know_is_a_problem_not_a_failure(tmp_path):
    ctx, gateway, events = _ctx(tmp_path, {"a": 6 * MB}, budget=8 * MB)
    assert keep_within_disk_budget(ctx, ["remote-only", "a"]) == ["a"]
    assert events[0][0][1] == "problem" and "could not be deleted" in events[0][0][2]
