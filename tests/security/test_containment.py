"""Generated workflow code is contained (issue 14, F6): a client process sees none of the
researcher's secrets, runs under CPU, memory and process limits in a folder of its own, and
is stopped as a whole process group — nothing it forked outlives it.

    PYTHONPATH=$PWD .venv/bin/python -m pytest -q tests/security/test_containment.py
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from researcher.launcher.local import ClientLimits, LocalLauncher, run_contained
from tests.unit.researcher.test_launcher import wait_exit

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "HF_TOKEN": "hf_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "SWARMRL_API_KEY": "the-admin-key",
    "SWARMRL_UI_TOKEN": "the-ui-token",
    "SWARMRL_DB_URL": "sqlite:////somewhere/researcher.db",
    "GITHUB_TOKEN": "ghp_secret",
}
SHOW_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z")


def wait_for_file(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_a_launched_workflow_sees_none_of_the_researchers_secrets(tmp_path, monkeypatch):
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    launcher = LocalLauncher()
    home = tmp_path / "client"
    info = launcher.start([sys.executable, "-c", SHOW_ENV], log_path=tmp_path / "env.log",
                          cwd=home, env={"SWARMRL_API_KEY": "sk-cl-the-client-key"})  # fmt: skip
    assert wait_exit(launcher, info, timeout=60) == 0
    seen = json.loads(info.log_path.read_text().strip().splitlines()[-1])
    leaked = {k for k, v in seen.items() if any(secret in v for secret in SECRETS.values())}
    assert not leaked
    assert seen["SWARMRL_API_KEY"] == "sk-cl-the-client-key"  # only its own client key
    assert not {"ANTHROPIC_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "SWARMRL_UI_TOKEN"} & set(
        seen
    )
    assert seen["HOME"] == str(home) and "PATH" in seen


def test_a_dry_run_sees_none_of_the_researchers_secrets_either(tmp_path, monkeypatch):
    from researcher.launcher.local import client_env

    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    env = client_env({"SWARMRL_API_KEY": "sk-cl-k"}, home=tmp_path)
    code, output = run_contained([sys.executable, "-c", SHOW_ENV], cwd=tmp_path, env=env,
                                 timeout_s=60)  # fmt: skip
    assert code == 0
    seen = json.loads(output.strip().splitlines()[-1])
    assert not {k for k, v in seen.items() if any(s in v for s in SECRETS.values())}


def test_a_workflow_that_allocates_past_the_memory_limit_dies_with_its_exit_recorded(tmp_path):
    launcher = LocalLauncher(limits=ClientLimits(memory_bytes=256 << 20))
    grab = "chunks = [bytearray(64 << 20) for _ in range(64)]; print('never')"
    info = launcher.start([sys.executable, "-c", grab], log_path=tmp_path / "m.log", cwd=tmp_path)
    assert wait_exit(launcher, info, timeout=60) == 1
    assert info.exit_path.read_text().strip() == "1"
    log = info.log_path.read_text()
    assert "MemoryError" in log and "never" not in log


def test_a_workflow_that_burns_its_cpu_seconds_is_ended_by_the_kernel(tmp_path):
    launcher = LocalLauncher(limits=ClientLimits(cpu_s=1))
    info = launcher.start([sys.executable, "-c", "while True: pass"], log_path=tmp_path / "c.log",
                          cwd=tmp_path)  # fmt: skip
    assert wait_exit(launcher, info, timeout=120) == 128 + 24  # SIGXCPU, as the wrapper saw it


def test_the_process_limit_is_set_on_the_client(tmp_path):
    launcher = LocalLauncher(limits=ClientLimits(processes=100))
    show = "print(open('/proc/self/limits').read())"
    info = launcher.start([sys.executable, "-c", show], log_path=tmp_path / "p.log", cwd=tmp_path)
    assert wait_exit(launcher, info, timeout=60) == 0
    line = next(li for li in info.log_path.read_text().splitlines() if "Max processes" in li)
    soft = line.split()[2]
    assert soft != "unlimited" and int(soft) >= 100


def test_stop_kills_the_workflows_children_too_even_those_that_ignore_sigterm(tmp_path):
    pid_file = tmp_path / "child.pid"
    child = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {child!r}]); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(600)"
    )
    launcher = LocalLauncher()
    info = launcher.start([sys.executable, "-c", script], log_path=tmp_path / "s.log", cwd=tmp_path)
    child_pid = int(wait_for_file(pid_file))
    assert pid_alive(child_pid)
    launcher.stop(info.pid, timeout_s=5, exit_path=info.exit_path)
    deadline = time.monotonic() + 30
    while pid_alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(child_pid)  # no orphan
    assert launcher.exit_status(info.pid, info.exit_path) == -15


def test_a_dry_run_past_its_time_limit_takes_its_whole_group_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); print('started', flush=True); "
        "time.sleep(600)"
    )
    code, output = run_contained([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ),
                                 timeout_s=5, grace_s=2)  # fmt: skip
    assert code is None and "started" in output
    child_pid = int(wait_for_file(pid_file))
    deadline = time.monotonic() + 30
    while pid_alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(child_pid)


# -- a study's clients get a client key, and no key is written down ----------------------

ADMIN_KEY = "sk-the-users-admin-key-0123456789"


def test_a_study_started_with_an_api_key_writes_it_to_no_file_and_hands_clients_only_client_keys(
    tmp_path, monkeypatch
):
    from tests.unit.researcher.test_graph import Harness

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SWARMRL_API_KEY", raising=False)
    harness = Harness(tmp_path, monkeypatch)
    harness.gateway.api_key = ADMIN_KEY
    ctx = harness.create(api_key=ADMIN_KEY)
    assert ctx.settings.api_key == ADMIN_KEY  # kept in this process's memory
    assert harness.drive() == 0
    assert harness.launcher.envs, "no client was launched"
    for env in harness.launcher.envs:
        assert env == {"SWARMRL_API_KEY": env["SWARMRL_API_KEY"]}
        assert env["SWARMRL_API_KEY"].startswith("sk-cl-")
    holding = [
        path
        for path in (tmp_path / "home").rglob("*")
        if path.is_file() and ADMIN_KEY.encode() in path.read_bytes()
    ]
    assert not holding


def test_a_resumed_study_takes_the_gateways_key_from_the_environment(tmp_path, monkeypatch):
    from researcher import study as study_module
    from researcher.settings import StudySettings
    from tests.unit.researcher.test_graph import Harness

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path / "home"))
    harness = Harness(tmp_path, monkeypatch)
    row = study_module.create_study(
        harness.engine, StudySettings(question="q", budget_s=60, gateway="http://g", api_key="K1")
    )
    study_module._api_keys.clear()  # a new process: `researcher resume`
    monkeypatch.setenv("SWARMRL_API_KEY", "K1")
    assert study_module.load_settings(row).api_key == "K1"
    assert "K1" not in (Path(row.directory) / "settings.json").read_text()


def test_the_embedded_gateways_key_is_kept_0600_outside_the_study_folder(tmp_path, monkeypatch):
    from researcher.settings import gateway_key_path, read_gateway_key, write_gateway_key

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    write_gateway_key("st-1", "sk-admin-x")
    path = gateway_key_path("st-1")
    assert read_gateway_key("st-1") == "sk-admin-x"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert "studies" not in path.parts


# -- end to end: a keyed gateway (tiny model), a real dry run, the client key -------------

CHECKS_ITS_KEY = """
import os
from swarm.tasks import arithmetic

def tasks(split="train"):
    return ({**t, "family": "arithmetic"} for t in arithmetic.tasks(split, seed=0))

async def rollout(task, episode):
    key = os.environ.get("SWARMRL_API_KEY", "")
    leaked = [k for k, v in os.environ.items() if "sk-admin-" in v or k == "HF_TOKEN"]
    if not key.startswith("sk-cl-") or leaked:
        raise RuntimeError(f"client key {key[:6]!r}, leaked {leaked}")
    return await arithmetic.rollout(task, episode)
"""


@pytest.mark.slow
def test_a_dry_run_on_a_keyed_gateway_runs_with_a_client_key_that_cannot_stop_its_run(
    tmp_path, monkeypatch
):
    import httpx

    from researcher.gateway_api import GatewayAPI
    from researcher.local_gateway import start_local_gateway
    from researcher.nodes.validate import dry_run
    from researcher.settings import StudySettings

    admin = "sk-admin-" + "x" * 32
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    gateway = start_local_gateway(model="tiny", state_dir=tmp_path / "state",
                                  log_path=tmp_path / "gateway.log", api_key=admin)  # fmt: skip
    api = GatewayAPI(gateway.url, api_key=admin)
    try:
        workflow = tmp_path / "checks.py"
        workflow.write_text(CHECKS_ITS_KEY)
        ctx = SimpleNamespace(
            gateway=api, directory=tmp_path,
            settings=StudySettings(question="q", budget_s=60, validate_timeout_s=240),
        )  # fmt: skip
        body = {"policies": {"policy": {"base_model": "tiny"}}}
        assert dry_run(ctx, str(workflow), "dry-keyed", body) is None
        api.create_run({"name": "sibling", **body})
        key = api.client_key("dry-keyed")
        for path in ("/runs/sibling/stop", "/runs/dry-keyed/pause"):
            response = httpx.post(gateway.url + path, headers={"Authorization": f"Bearer {key}"})
            assert response.status_code == 401, response.text
        assert api.get_run("sibling")["status"] == "running"
    finally:
        api.close()
        gateway.stop()


@pytest.mark.slow
def test_a_studys_embedded_gateway_has_an_admin_key_that_resume_recovers(tmp_path, monkeypatch):
    import httpx
    from rich.console import Console

    from researcher import study as study_module
    from researcher.settings import StudySettings, gateway_key_path

    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    engine = study_module.open_db(f"sqlite:///{tmp_path / 'researcher.db'}")
    settings = StudySettings(question="q", budget_s=60, embedded_model="tiny")
    row = study_module.create_study(engine, settings)
    console = Console(file=io.StringIO())
    first = study_module.connect_gateway(engine, row, settings, console)
    directory = Path(row.directory)
    try:
        assert first.api_key and gateway_key_path(row.id).stat().st_mode & 0o777 == 0o600
        assert httpx.post(first.url + "/runs/x/stop").status_code == 401  # no key, no control
        assert not any(first.api_key in p.read_text(errors="replace")
                       for p in directory.rglob("*.json"))  # fmt: skip
        # a resumed researcher (a new process) adopts the running gateway with its key
        again = study_module.connect_gateway(engine, row, settings, console)
        assert again.url == first.url and again.api_key == first.api_key
        assert again.list_runs() == []
    finally:
        study_module.stop_embedded_gateway(directory)
    assert not gateway_key_path(row.id).exists()


def test_a_ray_jobs_entrypoint_drops_what_the_ray_node_would_pass_on(tmp_path):
    import subprocess

    from researcher.launcher.ray import entrypoint

    node_env = {**os.environ, **SECRETS, "SWARMRL_API_KEY": "sk-cl-passed-on-purpose"}
    command = entrypoint([sys.executable, "-c", SHOW_ENV], cwd=tmp_path, keep=["SWARMRL_API_KEY"])
    done = subprocess.run(["sh", "-c", command], env=node_env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not {k for k, v in seen.items() if any(s in v for s in SECRETS.values())}
    assert seen["SWARMRL_API_KEY"] == "sk-cl-passed-on-purpose" and "PATH" in seen
