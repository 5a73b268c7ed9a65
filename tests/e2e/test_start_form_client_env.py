# ruff: noqa: F811  (test_ui.py's `home` fixture, imported by name)
"""The start form's "Extra environment variables for clients" (`researcher start
--client-env NAME`) in real headless Chromium, on a real study: a workflow whose rollout
reads `os.environ["ACME_TOKEN"]`, started with `ACME_TOKEN` in the field, runs its dry-run
episodes with the value from the UI's environment; a name that is no variable's is refused
on the form, which comes back with everything the user typed.

    .venv/bin/python -m pytest -q -m slow tests/e2e/test_start_form_client_env.py

The UI runs in this process (`live_server`); the study it starts (`researcher start`, its
embedded gateway on the `tiny` model, the dry run's `swarm run`) are real processes under
`SWARMRL_HOME=tmp_path`, killed by pid afterwards (test_ui.py's `home`). Screenshots (under
tests/e2e/artifacts/): client-env-started, client-env-refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from tests.e2e.test_ui import home, study_row, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

QUESTION = "does a bonus of 0.3 raise my agent's reward?"
TOKEN = "acme-s3cret-42"
# reads the variable only inside rollout (importing it needs nothing), and leaves what it
# read in its working directory, the client's own folder under the study's `clients/`
AGENT = """
import os
from pathlib import Path

PARAMS = {"bonus": 0.0}


def tasks(split="train"):
    return [{"id": f"{split}-{i}"} for i in range(8)]


async def rollout(task, episode):
    token = os.environ["ACME_TOKEN"]
    Path("acme_token_seen").write_text(token)
    return 0.5 + PARAMS["bonus"]
"""
NAV_MS = 90_000  # the start route checks the workflow (a subprocess) and waits for the row
EXPECT_MS = 30_000
START_S = 240  # the embedded gateway on the tiny model, then the dry run's client (loaded box)


def fill_start_form(page, agent: Path, client_env: str):
    form = page.locator("#start-form")
    form.locator("input[name=question]").fill(QUESTION)
    form.locator("input[name=workflow]").fill(str(agent))
    form.locator("input[name=budget]").fill("4m")
    form.locator("select[name=model]").select_option("tiny")
    form.locator("input[name=seeds]").fill("1")
    form.locator("input[name=client_env]").fill(client_env)
    return form


def cmdline(pid: int) -> list[str]:
    return (Path(f"/proc/{pid}/cmdline").read_bytes().decode()).split("\0")[:-1]


def test_a_variable_named_on_the_start_form_reaches_the_study_and_its_clients(
    home: Path, page, live_server, screenshot, monkeypatch: pytest.MonkeyPatch
):
    from playwright.sync_api import expect

    from researcher.study import open_db
    from researcher.web.app import make_app

    monkeypatch.setenv("ACME_TOKEN", TOKEN)  # the UI's environment, which the study inherits
    engine = open_db()
    app = make_app(engine)
    app.state.start_wait_s = 60.0  # the spawned researcher imports slowly on a loaded box
    base = live_server(app)
    agent = home / "agent.py"
    agent.write_text(AGENT)

    page.goto(base + "/")
    expect(page.locator("#start-form input[name=client_env]")).to_have_value("")
    form = fill_start_form(page, agent, "ACME_TOKEN")
    with page.expect_navigation(url="**/studies/*", timeout=NAV_MS):
        form.get_by_role("button", name="Start").click(timeout=NAV_MS)

    # the study's page, no refusal
    expect(page.locator("h1")).to_have_text(QUESTION, timeout=EXPECT_MS)
    expect(page.locator("ul.errors")).to_have_count(0)
    study_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    expect(page.locator("#study-facts")).to_have_attribute("data-study", study_id)
    screenshot(page, "client-env-started")

    # the researcher was started with --client-env ACME_TOKEN and saved it in its settings
    study = study_row(engine, study_id)
    assert study is not None and study.pid, study
    command = cmdline(study.pid)
    assert command[command.index("--client-env") :] == ["--client-env", "ACME_TOKEN"], command
    settings = json.loads((Path(study.directory) / "settings.json").read_text())
    assert settings["client_env_allow"] == ["ACME_TOKEN"], settings
    assert TOKEN not in json.dumps(settings)  # the name is saved, never the value

    # a study client's rollout read the value from the UI's environment (the dry run)
    clients = Path(study.directory) / "clients"

    def seen() -> list[str]:
        return [p.read_text() for p in clients.glob("*/acme_token_seen")]

    assert wait_until("a client's rollout reading ACME_TOKEN", seen, timeout=START_S) == [TOKEN]


def test_a_bad_variable_name_is_refused_on_the_form_with_everything_kept(
    home: Path, page, live_server, screenshot
):
    from playwright.sync_api import expect

    from researcher.study import open_db
    from researcher.web.app import make_app

    engine = open_db()
    app = make_app(engine)
    base = live_server(app)
    agent = home / "agent.py"
    agent.write_text(AGENT)

    page.goto(base + "/")
    form = fill_start_form(page, agent, "ACME_TOKEN, 1BAD-NAME")
    form.locator("input[name=ask]").check()
    with page.expect_navigation(url=base + "/studies", timeout=NAV_MS) as navigation:
        form.get_by_role("button", name="Start").click(timeout=NAV_MS)
    assert navigation.value.status == 422

    # the form again, saying which name and why, with every field as the user left it
    expect(page.locator("h1")).to_have_text("Studies")
    expect(page.locator("ul.errors li")).to_have_count(1)
    expect(page.locator("ul.errors li")).to_have_text(
        "extra environment variable '1BAD-NAME': not the name of an environment variable "
        "(letters, digits and _, such as ACME_JUDGE_URL; its value is taken from the "
        "environment the study starts in)"
    )
    form = page.locator("#start-form")
    expect(form.locator("input[name=question]")).to_have_value(QUESTION)
    expect(form.locator("input[name=workflow]")).to_have_value(str(agent))
    expect(form.locator("input[name=budget]")).to_have_value("4m")
    expect(form.locator("select[name=model]")).to_have_value("tiny")
    expect(form.locator("input[name=seeds]")).to_have_value("1")
    expect(form.locator("input[name=client_env]")).to_have_value("ACME_TOKEN, 1BAD-NAME")
    expect(form.locator("input[name=ask]")).to_be_checked()
    screenshot(page, "client-env-refused")

    # nothing was started
    with session_scope(engine) as session:
        assert crud.list_studies(session) == []
    assert not (home / "studies").exists() or not any((home / "studies").iterdir())
