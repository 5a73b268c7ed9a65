"""The Ray job launcher against a real local Ray cluster (`ray_cluster`, tests/raycluster.py):
a client's log and exit status read like a local process's, a stopped job reads as stopped,
a launch started twice is one job, and the researcher's credentials never travel.

    .venv/bin/python -m pytest -q tests/unit/researcher/test_ray_launcher.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from researcher.cli import app
from researcher.launcher import make_launcher, was_started
from researcher.launcher.base import STOPPED_STATUS, VANISHED_STATUS, ProcessInfo
from researcher.launcher.ray import (
    SCRUB_SH,
    RayClusterUnreachable,
    RayJobLauncher,
    resolve_address,
)

SECRETS = {
    "SWARMRL_DB_URL": "postgresql://secret@db/x",
    "SWARMRL_PLANNER_API_KEY": "sk-secret",
    "OPENAI_API_KEY": "sk-other",
    "PGPASSWORD": "pw",
    "DATABASE_URL": "sqlite:///secret.db",
}


@pytest.fixture(scope="module")
def launcher(ray_cluster) -> RayJobLauncher:
    return RayJobLauncher(ray_cluster.dashboard_url)


def wait_exit(launcher: RayJobLauncher, info: ProcessInfo, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = launcher.client_exit_status(info)
        if status is not None:
            return status
        time.sleep(0.2)
    raise AssertionError(f"Ray job {info.job_id} did not end within {timeout:.0f} s")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def name_for(tmp_path: Path, what: str) -> str:
    return f"{tmp_path.name}-{what}"  # unique per test: the cluster lives for the session


@pytest.mark.slow
def test_a_job_that_prints_and_exits_3_leaves_its_log_and_status_3(launcher, tmp_path):
    log_path = tmp_path / "logs" / "exp-a0.log"
    info = launcher.start(python("print('hello from ray', flush=True); raise SystemExit(3)"),
                          log_path=log_path, cwd=tmp_path, name=name_for(tmp_path, "exit3"))  # fmt: skip
    assert info.pid is None and info.job_id == f"swarmrl-{name_for(tmp_path, 'exit3')}"
    assert was_started(info) and info.host == launcher.address
    assert wait_exit(launcher, info) == 3
    assert "hello from ray" in log_path.read_text()
    assert info.exit_path.read_text().strip() == "3"
    assert not launcher.client_alive(info)


@pytest.mark.slow
def test_the_job_runs_in_the_given_folder_and_a_clean_exit_is_0(launcher, tmp_path):
    log_path = tmp_path / "ok.log"
    info = launcher.start(python("import os; print('cwd', os.getcwd())"), log_path=log_path,
                          cwd=tmp_path, name=name_for(tmp_path, "ok"))  # fmt: skip
    assert wait_exit(launcher, info) == 0
    assert f"cwd {tmp_path}" in log_path.read_text()


@pytest.mark.slow
def test_a_stopped_job_reads_as_stopped_and_is_not_alive(launcher, tmp_path):
    info = launcher.start(python("import time; print('up', flush=True); time.sleep(600)"),
                          log_path=tmp_path / "long.log", cwd=tmp_path,
                          name=name_for(tmp_path, "long"))  # fmt: skip
    deadline = time.monotonic() + 60
    while "up" not in _read(info.log_path):  # the log follows the job while it runs
        assert time.monotonic() < deadline, "the running job's log never arrived"
        time.sleep(0.2)
    assert launcher.client_alive(info)
    started = time.monotonic()
    launcher.stop_client(info, timeout_s=20)
    assert time.monotonic() - started < 60  # its 20 s timeout, with slack: not the job's 600 s
    assert not launcher.client_alive(info)
    assert launcher.client_exit_status(info) == STOPPED_STATUS
    assert info.exit_path.read_text().strip() == str(STOPPED_STATUS)


@pytest.mark.slow
def test_starting_the_same_launch_again_adopts_the_job_instead_of_submitting_twice(
    launcher, ray_cluster, tmp_path
):
    name = name_for(tmp_path, "twice")
    command = python("import time; print('once', flush=True); time.sleep(600)")
    first = launcher.start(command, log_path=tmp_path / "a.log", cwd=tmp_path, name=name)
    again = RayJobLauncher(ray_cluster.dashboard_url)  # a resumed researcher: a fresh launcher
    second = again.start(command, log_path=tmp_path / "a.log", cwd=tmp_path, name=name)
    assert second.job_id == first.job_id
    jobs = [j for j in launcher.client.list_jobs() if j.submission_id == first.job_id]
    assert len(jobs) == 1, jobs
    assert again.client_alive(second)
    again.stop_client(second, timeout_s=20)
    assert launcher.client_exit_status(first) == STOPPED_STATUS


def test_a_job_the_cluster_does_not_know_reads_as_vanished(launcher, tmp_path):
    record = ProcessInfo(None, launcher.address, tmp_path / "x.log", tmp_path / "x.exit", 0.0,
                         job_id="swarmrl-never-submitted")  # fmt: skip
    assert launcher.client_exit_status(record) == VANISHED_STATUS
    assert not launcher.client_alive(record)


@pytest.mark.slow
def test_the_researchers_credentials_do_not_travel_with_the_job(launcher, tmp_path, monkeypatch):
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    log_path = tmp_path / "env.log"
    show = "import os; print('seen', sorted(k for k in os.environ if 'secret' in os.environ[k] or k in {}))"
    info = launcher.start(
        python(show.format(sorted({*SECRETS, "SWARMRL_API_KEY"}))), log_path=log_path,
        cwd=tmp_path, name=name_for(tmp_path, "env"),
        env={"SWARMRL_API_KEY": "admin", "SWARMRL_DB_URL": SECRETS["SWARMRL_DB_URL"]},
    )  # fmt: skip
    assert wait_exit(launcher, info) == 0
    assert "seen ['SWARMRL_API_KEY']" in log_path.read_text()
    env_vars = launcher.client.get_job_info(info.job_id).runtime_env["env_vars"]
    assert env_vars["SWARMRL_API_KEY"] == "admin" and not set(SECRETS) & set(env_vars)


def test_the_entrypoint_unsets_what_the_ray_node_itself_would_pass_on(tmp_path):
    """The job inherits the Ray node's environment: the entrypoint scrubs it there too."""
    env = {**os.environ, **SECRETS, "PGHOST": "db", "SWARMRL_GATEWAY": "http://gw"}
    done = subprocess.run(["sh", "-c", f"{SCRUB_SH}; env"], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    names = {line.split("=", 1)[0] for line in done.stdout.splitlines()}
    assert not (set(SECRETS) | {"PGHOST"}) & names
    assert "SWARMRL_GATEWAY" in names and "PATH" in names


@pytest.mark.slow
def test_a_cluster_elsewhere_gets_the_workflow_folder_as_the_jobs_working_dir(
    ray_cluster, tmp_path
):
    shipping = RayJobLauncher(ray_cluster.dashboard_url, ship_files=True)
    folder = tmp_path / "workflows" / "exp"
    folder.mkdir(parents=True)
    (folder / "workflow.py").write_text(
        "import os\nprint('shipped', os.path.basename(os.getcwd()))\n"
    )
    info = shipping.start([sys.executable, "workflow.py"], log_path=tmp_path / "ship.log",
                          cwd=tmp_path, name=name_for(tmp_path, "ship"), files=folder)  # fmt: skip
    assert wait_exit(shipping, info) == 0
    text = info.log_path.read_text()
    assert "shipped" in text and str(folder) not in text.split("shipped", 1)[1]


def test_a_gcs_address_finds_the_clusters_job_server(ray_cluster):
    found = RayJobLauncher(ray_cluster.address)
    assert found.address.rsplit(":", 1)[1] == ray_cluster.dashboard_url.rsplit(":", 1)[1]
    assert not found.ships_files  # this machine: the workflow is read where it lies


@pytest.mark.parametrize("address", ["http://127.0.0.1:9", "127.0.0.1:9"])
def test_no_job_server_at_the_address_is_one_error_naming_the_fix(address):
    started = time.monotonic()
    with pytest.raises(RayClusterUnreachable, match="ray start --head"):
        make_launcher("ray", ray_address=address)
    assert time.monotonic() - started < 30


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    for name in ("SWARMRL_DB_URL", "SWARMRL_API_KEY", "RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def start_with_ray(*args: str):
    result = CliRunner().invoke(app, ["start", "does multi-task mixing help?", "--launcher", "ray",
                                      "--gateway", "http://127.0.0.1:9", *args])  # fmt: skip
    return result, " ".join(result.output.split())


@pytest.mark.slow
def test_launcher_ray_with_no_job_server_exits_2_naming_the_fix_before_any_study(home):
    result, said = start_with_ray("--ray-address", "http://127.0.0.1:9")
    assert result.exit_code == 2, said
    assert "no Ray job server answers at http://127.0.0.1:9" in said and "ray start --head" in said
    assert not (home / "studies").exists()


@pytest.mark.slow
def test_launcher_ray_without_ray_installed_exits_2_naming_the_extra(home, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)  # import fails as if absent
    result, said = start_with_ray()
    assert result.exit_code == 2, said
    assert "pip install 'swarmrl[cluster]'" in said
    assert not (home / "studies").exists()


def test_a_cluster_elsewhere_with_the_embedded_gateway_is_refused(home, ray_cluster, monkeypatch):
    monkeypatch.setattr("researcher.launcher.ray.is_this_machine", lambda host: False)
    result = CliRunner().invoke(app, ["start", "does multi-task mixing help?", "--launcher",
                                      "ray", "--ray-address", ray_cluster.dashboard_url])  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 2, said
    assert "give --gateway URL" in said and not (home / "studies").exists()


def test_the_address_is_the_flag_then_rays_variables_then_this_machine(monkeypatch):
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_address(None) == "http://127.0.0.1:8265"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert resolve_address(None) == "10.0.0.1:6379"
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "http://head:8265")
    assert resolve_address(None) == "http://head:8265"
    assert resolve_address("http://other:8265") == "http://other:8265"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
