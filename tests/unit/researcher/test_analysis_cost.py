"""nodes.evaluate.training_cost: a run's wall time and tokens from what the researcher recorded."""

from __future__ import annotations

from experiments_db.studies import ClientProcessRow, MetricSnapshotRow
from researcher.nodes.evaluate import training_cost


def snapshot(step: int, name: str, value: float, at: float) -> MetricSnapshotRow:
    return MetricSnapshotRow(experiment_id="e", step=step, name=name, value=value, at=at)


def launch(attempt: int, started_at: float) -> ClientProcessRow:
    return ClientProcessRow(experiment_id="e", attempt=attempt, launcher="local", host="",
                            command=[], log_path="x.log", started_at=started_at)  # fmt: skip


def test_wall_time_runs_from_the_first_client_start_to_the_last_recorded_step():
    snapshots = [
        snapshot(1, "reward/mean", 0.1, 1010.0), snapshot(1, "tokens", 300, 1010.0),
        snapshot(2, "reward/mean", 0.2, 1042.5), snapshot(2, "tokens", 500, 1042.5),
        snapshot(2, "loss", 0.3, 1050.0),
    ]  # fmt: skip
    cost = training_cost(snapshots, [launch(0, 1000.0), launch(1, 1030.0)])
    assert cost == {"wall_s": 42.5, "tokens": 800}


def test_no_launch_or_no_step_gives_no_cost():
    assert training_cost([], [launch(0, 1000.0)]) == {"wall_s": None, "tokens": None}
    unstarted = training_cost([snapshot(1, "reward/mean", 0.1, 1010.0)], [launch(0, 0.0)])
    assert unstarted["wall_s"] is None
