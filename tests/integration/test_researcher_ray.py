"""The researcher with its clients as Ray jobs, end to end: `researcher start --launcher ray`
against the session's local Ray cluster (`ray_cluster`, tests/raycluster.py), with the
embedded gateway serving `tiny` (2 arms × 1 seed), like the local study test.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher_ray.py

The clients ran as jobs under our submission ids (seen through Ray's own job API), ended,
and left their logs in the study's logs folder; the rows read like a local study's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_researcher import (
    PHASES,
    QUESTION,
    assert_nothing_left_running,
    engine_of,
    finish,
    home,  # noqa: F401 - the fixture: SWARMRL_HOME, and nothing left running after
    only_study,
    recorded,
    researcher,
    start_researcher,
    tail,
)

pytestmark = pytest.mark.slow

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def test_a_study_runs_its_clients_as_ray_jobs(home: Path, ray_cluster):  # noqa: F811
    from ray.job_submission import JobSubmissionClient

    process = start_researcher(home, "start", QUESTION, "--budget", "90s", "--model", "tiny",
                               "--seeds", "1", "--launcher", "ray",
                               "--ray-address", ray_cluster.dashboard_url)  # fmt: skip
    code = finish(process, home, timeout=240)
    assert code == 0, tail(home / "researcher.log")

    engine = engine_of(home)
    study_id = only_study(engine)
    study, report, experiments, processes, events = recorded(engine, study_id)
    assert study.status == "finished" and study.finished_at, study
    assert report is not None and Path(report.html_path).is_file()
    assert len(experiments) == 2, experiments
    assert set(PHASES) <= {e.phase for e in events}
    assert not [e for e in events if e.kind == "error"], [e.message for e in events]
    study_dir = Path(study.directory)
    settings = json.loads((study_dir / "settings.json").read_text())
    assert settings["launcher"] == "ray" and settings["ray_address"] == ray_cluster.dashboard_url

    # every client was a Ray job under the id named after its experiment and attempt
    assert processes and {p.experiment_id for p in processes} == {
        e.id for e in experiments if e.run_name
    }
    for p in processes:
        assert p.launcher == "ray" and p.pid is None, p
        assert p.job_id == f"swarmrl-{p.experiment_id}-a{p.attempt}", p
        assert p.host == ray_cluster.dashboard_url and p.exit_status is not None, p
    jobs = {
        job.submission_id: job for job in JobSubmissionClient(ray_cluster.dashboard_url).list_jobs()
    }
    for p in processes:
        assert p.job_id in jobs, sorted(jobs)
        assert str(jobs[p.job_id].status.value) in TERMINAL, jobs[p.job_id]
        assert str(study_dir) in jobs[p.job_id].entrypoint  # this machine: the absolute workflow
    # their logs, mirrored from the job server, in the study's logs folder
    for p in processes:
        log_path = Path(p.log_path)
        assert log_path.parent == study_dir / "logs", log_path
        assert f"Running entrypoint for job {p.job_id}" in log_path.read_text()
        assert "swarm" in log_path.read_text().split(p.job_id, 1)[1], tail(log_path)
        assert log_path.with_suffix(".exit").read_text().strip() == str(p.exit_status)
    launched = [e for e in events if e.phase == "launch" and "run at step" in e.message]
    assert launched and all("Ray job swarmrl-" in e.message for e in launched), launched

    status = researcher(home, "status", study_id)
    assert status.returncode == 0 and "finished" in status.stdout, status.stderr
    assert_nothing_left_running(study_dir)
