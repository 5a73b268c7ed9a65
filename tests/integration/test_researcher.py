"""The researcher end to end, on real processes: `researcher start` with its embedded
gateway serving the `tiny` model (2 arms × 1 seed), a study killed with SIGKILL mid-run and
carried on by `researcher resume`, and `researcher stop` from another process.

    .venv/bin/python -m pytest -q -m slow tests/integration/test_researcher.py

Every subprocess runs under a time limit; whatever a test leaves running (the embedded
gateway and the `swarm run` clients run in their own sessions) is found through /proc by
the study folder in its command line, and killed by pid when a test fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from experiments_db import crud
from experiments_db.db import make_engine, session_scope
from tests.integration.conftest import FinishedStudy, wait_for

pytestmark = pytest.mark.slow

QUESTION = "does multi-task mixing help?"
PHASES = ("frame", "hypotheses", "design", "write_code", "validate", "launch", "evaluate",
          "analyse", "decide", "report")  # fmt: skip
CHECK_RUN = re.compile(r"-check\d+$")  # validate's dry-run runs on the gateway


def researcher_env(home: Path, *, own_models: bool = False) -> dict[str, str]:
    """The researcher's environment: none of this session's SWARMRL_* settings but its home
    and, unless `own_models`, the session's converted-model cache (tests/conftest.py), which
    every gateway the tests start shares: a study's embedded gateway finds the bundled
    tokenizer there instead of extracting it from the GGUF again (~10 s, more on a loaded
    box). With `own_models` the study converts into `home/models`, as on a fresh install
    (the shared finished study, `finished_tiny_study`, does: that path stays tested)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARMRL_")}
    env["SWARMRL_HOME"] = str(home)
    if not own_models and os.environ.get("SWARMRL_MODEL_CACHE"):
        env["SWARMRL_MODEL_CACHE"] = os.environ["SWARMRL_MODEL_CACHE"]
    env["COLUMNS"] = "200"  # rich wraps less: ids stay on one line
    return env


def researcher(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a short `researcher` command to its end."""
    return subprocess.run(
        [sys.executable, "-m", "researcher.cli", *args],
        env=researcher_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_researcher(
    home: Path, *args: str, log: str = "researcher.log", own_models: bool = False
) -> subprocess.Popen:
    """Start a long `researcher` command; its output goes to `home/log`."""
    with (home / log).open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "researcher.cli", *args],
            env=researcher_env(home, own_models=own_models),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def finish(
    process: subprocess.Popen, home: Path, timeout: float, log: str = "researcher.log"
) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"researcher ran past {timeout:.0f} s:\n{tail(home / log)}")


def tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} unreadable)"


def processes_mentioning(text: str) -> dict[int, str]:
    """Live processes whose command line contains `text` (zombies have none)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found[int(entry.name)] = command
    return found


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """SWARMRL_HOME for one test; afterwards nothing started under it may be left running
    (killed, by pid, when a failing test left something)."""
    yield tmp_path
    for pid in processes_mentioning(str(tmp_path)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def engine_of(home: Path):
    return make_engine(f"sqlite:///{home}/researcher.db")


def only_study(engine) -> str:
    with session_scope(engine) as session:
        studies = crud.list_studies(session)
    assert len(studies) == 1, [s.id for s in studies]
    return studies[0].id


def recorded(engine, study_id: str) -> tuple:
    """The study's row, latest report, experiments, client processes and events."""
    with session_scope(engine) as session:
        return (
            crud.get_study(session, study_id=study_id),
            crud.latest_report(session, study_id=study_id),
            crud.experiments(session, study_id=study_id),
            crud.client_processes(session, study_id=study_id),
            crud.events(session, study_id=study_id),
        )


def start_until_running(home: Path, budget: str) -> tuple[subprocess.Popen, str]:
    """`researcher start` a study; returns once one of its experiments is running (its id)."""
    process = start_researcher(home, "start", QUESTION, "--budget", budget, "--model", "tiny",
                               "--seeds", "1")  # fmt: skip
    try:
        running = wait_for(lambda: process.poll() is None and running_experiment(home), timeout=180)
    except AssertionError:
        process.kill()
        process.wait()
        pytest.fail(f"no experiment started running:\n{tail(home / 'researcher.log')}")
    return process, running


def running_experiment(home: Path) -> str | None:
    """The id of an experiment the (single) study has running, once there is one."""
    if not (home / "researcher.db").exists():
        return None
    try:
        engine = engine_of(home)
        with session_scope(engine) as session:
            studies = crud.list_studies(session)
            if not studies:
                return None
            rows = crud.experiments(session, study_id=studies[0].id)
    except Exception:  # the schema is being created right now
        return None
    finally:
        if "engine" in locals():
            engine.dispose()
    return next((r.id for r in rows if r.status == "running"), None)


def gateway_runs(study_dir: Path) -> dict[str, float]:
    """Training runs (name → created_at) in the embedded gateway's own SQLite database (it
    is stopped by now), without validate's dry-run runs."""
    with sqlite3.connect(study_dir / "gateway" / "gateway.sqlite") as db:
        rows = db.execute("SELECT id, created_at FROM run").fetchall()
    return {name: created for name, created in rows if not CHECK_RUN.search(name)}


def assert_nothing_left_running(study_dir: Path) -> None:
    """The embedded gateway (`--state-dir <study>/gateway`) and the clients (run in the
    study folder, `--run <study id>-…`) are gone."""
    wait_for(lambda: not processes_mentioning(study_dir.name), timeout=20)


def test_a_study_runs_end_to_end_to_a_report(finished_tiny_study: FinishedStudy):
    # `researcher start "<question>" --budget 2m --model tiny --seeds 1` (2 arms x 1 seed),
    # run once per session (tests/integration/conftest.py) and read by the task-level test
    # too; test_researcher_rerun.py replays it. This module's QUESTION is run to its end by
    # the kill-and-resume and PostgreSQL tests below and by test_researcher_ray.py
    home, question = finished_tiny_study.home, finished_tiny_study.question
    assert finished_tiny_study.code == 0, tail(home / "researcher.log")
    # one study, counted the moment `researcher start` ended (before a rerun adds its own)
    assert len(finished_tiny_study.study_ids) == 1, finished_tiny_study.study_ids
    (study_id,) = finished_tiny_study.study_ids

    engine = engine_of(home)
    study, report, experiments, processes, events = recorded(engine, study_id)
    with session_scope(engine) as session:
        hypotheses = crud.hypotheses(session, study_id=study_id)
        snapshots = {e.id: crud.metric_snapshots(session, experiment_id=e.id) for e in experiments}
    assert study.status == "finished" and study.finished_at, study
    assert study.latest_finding
    assert report is not None and report.conclusion and report.planner
    assert hypotheses and all(h.status != "open" for h in hypotheses), hypotheses
    assert len(experiments) == 2 and {e.seed for e in experiments} == {0}, experiments
    for experiment in experiments:
        assert experiment.run_name == experiment.id
        assert snapshots[experiment.id], f"{experiment.id} has no metric snapshots"
    assert {p.experiment_id for p in processes} == {e.id for e in experiments}
    assert all(p.pid and p.exit_status is not None for p in processes), processes
    seen = {e.phase for e in events}
    assert set(PHASES) <= seen, f"phases without events: {set(PHASES) - seen}"
    assert seen & {"monitor", "act"}, seen  # each run ended, by itself or stopped by act
    assert not [e for e in events if e.kind == "error"], [e.message for e in events]

    study_dir = Path(study.directory)
    assert study_dir == home / "studies" / study_id
    html, markdown = Path(report.html_path), Path(report.markdown_path)
    assert html == study_dir / "report" / "report.html" and html.is_file()
    assert markdown.is_file() and markdown.suffix == ".md"
    assert list((study_dir / "report" / "figures").glob("*.png")), "no figures"
    assert question in html.read_text()
    assert question in markdown.read_text()

    status = researcher(home, "status", study_id)
    assert status.returncode == 0, status.stderr
    assert study_id in status.stdout and "finished" in status.stdout
    assert all(e.id in status.stdout for e in experiments), status.stdout
    listing = researcher(home, "list")
    assert listing.returncode == 0, listing.stderr
    assert study_id in listing.stdout and "finished" in listing.stdout
    shown = researcher(home, "report", study_id)
    assert shown.returncode == 0, shown.stderr
    assert str(html) in shown.stdout.replace("\n", "")
    again = researcher(home, "resume", study_id)
    assert again.returncode == 1 and "finished" in again.stderr  # a finished study stays so

    assert not (study_dir / "gateway.json").exists()
    assert_nothing_left_running(study_dir)


def test_a_study_killed_mid_run_resumes_without_launching_twice(home: Path):
    process, running = start_until_running(home, "2m")
    time.sleep(3)  # well into monitoring its first run
    killed_at = time.time()
    process.send_signal(signal.SIGKILL)  # the researcher only: gateway and clients live on
    process.wait(timeout=10)

    engine = engine_of(home)
    study_id = only_study(engine)
    with session_scope(engine) as session:
        study = crud.get_study(session, study_id=study_id)
    study_dir = Path(study.directory)
    assert study.status == "running"  # nobody had the chance to record anything else
    assert (study_dir / "gateway.json").exists()
    survivors = processes_mentioning(study_dir.name)
    assert any("gateway" in c and "serve" in c for c in survivors.values()), survivors
    assert any(running in c for c in survivors.values()), survivors  # its client

    resumed = start_researcher(home, "resume", study_id, log="resume.log")
    code = finish(resumed, home, timeout=240, log="resume.log")
    assert code == 0, tail(home / "resume.log")

    study, report, experiments, processes, events = recorded(engine, study_id)
    assert study.status == "finished", (study, tail(home / "resume.log"))
    assert report is not None and Path(report.html_path).is_file()
    assert [e for e in events if e.phase == "resume"], "no resume event"
    assert "adopted" in tail(home / "resume.log", 400)  # the gateway it left running

    # each experiment's run was created once: one launch event each, one run on the gateway
    launches = Counter(
        (e.data or {}).get("run") for e in events if e.phase == "launch" and "run at step" in e.message
    )  # fmt: skip
    launched = [e for e in experiments if e.run_name]
    assert launched and all(launches[e.id] == 1 for e in launched), launches
    runs = gateway_runs(study_dir)
    assert sorted(runs) == sorted(e.id for e in launched), runs
    assert runs[running] < killed_at  # the run it had running was not created again
    attempts = Counter((p.experiment_id, p.attempt) for p in processes)
    assert all(n == 1 for n in attempts.values()), attempts
    # the client of the killed researcher's run was adopted (or restarted as a new attempt)
    assert all(p.exit_status is not None for p in processes if p.pid), processes

    assert_nothing_left_running(study_dir)


def test_researcher_stop_from_another_process_stops_the_study(home: Path):
    process, _ = start_until_running(home, "3m")
    engine = engine_of(home)
    study_id = only_study(engine)

    asked = time.monotonic()
    stop = researcher(home, "stop", study_id)
    assert stop.returncode == 0, stop.stderr
    assert f"pid {process.pid}" in stop.stdout.replace("\n", " "), stop.stdout
    code = finish(process, home, timeout=60)
    assert code == 0, tail(home / "researcher.log")
    assert time.monotonic() - asked < 60

    study, report, experiments, processes, events = recorded(engine, study_id)
    assert study.status == "stopped" and study.finished_at, study
    assert report is not None and report.conclusion == "no conclusion: the study was stopped"
    assert Path(report.html_path).is_file() and Path(report.markdown_path).is_file()
    assert all(
        e.status not in ("running", "launching", "planned", "validated") for e in experiments
    )
    assert all(p.exit_status is not None for p in processes if p.pid), processes
    messages = [e.message for e in events]
    assert "stop requested" in messages and "study stopped on request" in messages, messages

    again = researcher(home, "stop", study_id)
    assert again.returncode == 0 and "already stopped" in again.stdout
    assert_nothing_left_running(Path(study.directory))


def test_a_study_on_postgresql_keeps_its_records_there(home: Path, pg_database: str):
    """`researcher start --db postgresql://…`: the study, its experiments and its report are
    rows in PostgreSQL, and no SQLite researcher.db is made; the embedded gateway keeps its
    runs and episodes in the same database, in the study's own schema `gateway_<study id>`,
    and makes no SQLite file either."""
    process = start_researcher(home, "start", QUESTION, "--budget", "1m", "--model", "tiny",
                               "--seeds", "1", "--db", pg_database)  # fmt: skip
    code = finish(process, home, timeout=300)  # a hang bound: a loaded box is slow
    assert code == 0, tail(home / "researcher.log")
    assert not (home / "researcher.db").exists()

    engine = make_engine(pg_database)
    try:
        study_id = only_study(engine)
        study, report, experiments, processes, events = recorded(engine, study_id)
        schema = "gateway_" + study_id.replace("-", "_")
        with engine.connect() as connection:
            runs = connection.execute(text(f'SELECT id FROM "{schema}".run')).scalars().all()
            finished = dict(connection.execute(text(
                f'SELECT run, count(*) FROM "{schema}".episode WHERE status = \'finished\' '
                "GROUP BY run"
            )).all())  # fmt: skip
    finally:
        engine.dispose()  # no pooled connection left on the database the fixture drops
    assert study.status == "finished" and study.finished_at, study
    assert report is not None and report.conclusion and Path(report.html_path).is_file()
    # a 1-minute budget on a loaded box may be spent before the second arm starts
    launched = [e for e in experiments if e.run_name]
    assert launched and len(experiments) == 2, experiments
    assert {p.experiment_id for p in processes} == {e.id for e in launched}
    assert set(PHASES) <= {e.phase for e in events}
    assert not [e for e in events if e.kind == "error"], [e.message for e in events]

    # the embedded gateway's runs (each launched experiment's, and validate's dry runs) and
    # their finished episodes are rows in the study's schema; its state dir has no SQLite file
    study_dir = Path(study.directory)
    training = {name for name in runs if not CHECK_RUN.search(name)}
    assert training == {e.run_name for e in launched}, runs
    # a loaded box may spend a launched run's share of the 1-minute budget before its first
    # episode finishes (a fresh-clone CI run beside another saw "the run made no training
    # step"): the records are the point here, so at least one run's episodes are rows
    assert any(finished.get(e.run_name, 0) > 0 for e in launched), finished
    assert any(CHECK_RUN.search(name) for name in runs), runs  # validate's, on it too
    assert not list((study_dir / "gateway").glob("*.sqlite*"))
    served = json.loads((study_dir / "gateway" / "serve-config.json").read_text())
    assert schema in served["settings"]["database_url"], served["settings"]
    assert_nothing_left_running(study_dir)
