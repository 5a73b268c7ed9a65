"""The local launcher: client processes outlive nobody's wait(), report their exit status
through a file, stop as a group, and never see the researcher's credentials."""

from __future__ import annotations

import sys
import time

from researcher.launcher.local import LocalLauncher, client_env


def wait_exit(launcher: LocalLauncher, info, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = launcher.exit_status(info.pid, info.exit_path)
        if status is not None:
            return status
        time.sleep(0.05)
    raise AssertionError("the process did not end")


def test_the_exit_status_is_read_from_the_file_the_wrapper_writes(tmp_path):
    launcher = LocalLauncher()
    info = launcher.start([sys.executable, "-c", "print('hello'); raise SystemExit(3)"],
                          log_path=tmp_path / "a.log", cwd=tmp_path)  # fmt: skip
    assert wait_exit(launcher, info) == 3
    assert info.exit_path.read_text().strip() == "3"
    assert "hello" in info.log_path.read_text()
    assert not launcher.alive(info.pid)


def test_the_researchers_database_and_planner_credentials_are_not_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_DB_URL", "postgresql://secret@db/x")
    monkeypatch.setenv("SWARMRL_PLANNER_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    monkeypatch.setenv("PGPASSWORD", "pw")
    monkeypatch.setenv("SWARMRL_GATEWAY_DB_URL", "postgresql://gw:secret@db/gw")
    monkeypatch.setenv("SWARMRL_GATEWAY", "http://127.0.0.1:8400")
    env = client_env({"SWARMRL_API_KEY": "admin"})
    scrubbed = {
        "SWARMRL_DB_URL",
        "SWARMRL_PLANNER_API_KEY",
        "OPENAI_API_KEY",
        "PGPASSWORD",
        "SWARMRL_GATEWAY_DB_URL",
    }
    assert not scrubbed & set(env)
    assert env["SWARMRL_GATEWAY"] == "http://127.0.0.1:8400" and env["SWARMRL_API_KEY"] == "admin"
    launcher = LocalLauncher()
    info = launcher.start(
        [sys.executable, "-c", "import os; print(sorted(k for k in os.environ if 'SECRET' in os.environ[k].upper() or k.startswith('SWARMRL_DB')))"],
        log_path=tmp_path / "env.log", cwd=tmp_path,
    )  # fmt: skip
    assert wait_exit(launcher, info) == 0
    assert info.log_path.read_text().strip() == "[]"


def test_stop_ends_the_whole_process_group_within_the_timeout(tmp_path):
    launcher = LocalLauncher()
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"
    info = launcher.start([sys.executable, "-c", script], log_path=tmp_path / "s.log", cwd=tmp_path)
    time.sleep(0.5)
    assert launcher.alive(info.pid)
    started = time.monotonic()
    launcher.stop(info.pid, timeout_s=5, exit_path=info.exit_path)
    assert time.monotonic() - started < 60  # the 5 s grace, then SIGKILL: not the 600 s sleep
    assert not launcher.alive(info.pid)
    assert launcher.exit_status(info.pid, info.exit_path) == -15  # stopped, not killed
