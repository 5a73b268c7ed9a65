"""The researcher web UI end to end in real headless Chromium, on a real study: the `tiny`
model behind the study's embedded gateway, started, watched and steered only through the
browser — start form, live reward curve, a note that reaches the planner's LangGraph state,
pause / resume (the gateway's run pauses too), a run page and its token-level trace, stop.

    .venv/bin/python -m pytest -q -m slow tests/e2e/test_ui.py

The UI runs in this process (`live_server`); the study it starts (`researcher start`, its
embedded gateway and `swarm run` clients) are real processes under `SWARMRL_HOME=tmp_path`,
found through /proc and killed by pid when the test fails. Screenshots (under
tests/e2e/artifacts/): studies, study-live, study-paused, study-steered, trace.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from tests.integration.test_researcher import processes_mentioning

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

QUESTION = "does a bonus of 0.3 raise my agent's reward?"
# the study's own workflow: its rewards vary within a group, so every batch trains (a step
# that trains nothing is no step, and the tiny model never solves a shipped task)
AGENT = """
import random

PARAMS = {"bonus": 0.0}


def tasks(split="train"):
    return [{"id": f"{split}-{i}"} for i in range(40)]


async def rollout(task, episode):
    await episode.openai().chat.completions.create(
        model=episode.model, max_tokens=2, messages=[{"role": "user", "content": "Hi."}]
    )
    return random.random() + PARAMS["bonus"]
"""
NOTE = "prefer fewer steps"
START_S = 240  # the study's row, then a run training with reward points (loaded 2-core box)
STEP_S = 60  # each later change to be seen
# a click that posts a form waits for the navigation it starts; the route behind it may call
# the gateway or a subprocess, which takes more than the page's 10 s default on a loaded box
NAV_MS = 60_000
# what the page shows after an action (status, events, tokens): Playwright's default 5 s was
# the tightest bound in this test, and a fresh-clone CI run on this box failed it once
EXPECT_MS = 30_000


@pytest.fixture(autouse=True)
def patient_expect():
    try:
        from playwright.sync_api import expect
    except ImportError:  # the browser fixtures skip the test, with the reason
        yield
        return
    expect.set_options(timeout=EXPECT_MS)
    yield
    expect.set_options(timeout=5_000)


def wait_until(what: str, predicate: Callable[[], object], timeout: float, every: float = 0.5):
    """Poll `predicate` until it is truthy (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """SWARMRL_HOME for the UI and the study it spawns; afterwards whatever the study left
    running (its researcher, gateway and clients) is killed by pid. The session's
    converted-model cache (SWARMRL_MODEL_CACHE, tests/conftest.py) stays: the study's gateway
    finds the bundled tokenizer there, as every gateway the tests start does, instead of
    extracting it from the GGUF again."""
    for name in [n for n in os.environ if n.startswith("SWARMRL_")]:
        if name != "SWARMRL_MODEL_CACHE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    yield tmp_path
    leftovers = set(processes_mentioning(str(tmp_path)))
    db = tmp_path / "researcher.db"
    if db.exists():
        with sqlite3.connect(db) as connection:
            leftovers |= {pid for (pid,) in connection.execute("SELECT pid FROM study") if pid}
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def study_row(engine, study_id: str):
    with session_scope(engine) as session:
        return crud.get_study(session, study_id=study_id)


def notes_in_graph(study_dir: Path, study_id: str) -> list[str]:
    """The `notes` of the study's LangGraph state, read from its checkpoint."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from researcher.graph import build_graph

    with sqlite3.connect(study_dir / "graph.sqlite", check_same_thread=False) as connection:
        graph = build_graph().compile(checkpointer=SqliteSaver(connection))
        state = graph.get_state({"configurable": {"thread_id": study_id}})
    return list(state.values.get("notes", []))


def gateway_run_status(study, run: str) -> str:
    from researcher.gateway_api import GatewayAPI
    from researcher.settings import read_gateway_key

    settings = Path(study.directory) / "settings.json"
    api_key = read_gateway_key(study.id)  # the embedded gateway's admin key
    if api_key is None and settings.exists():
        api_key = json.loads(settings.read_text()).get("api_key")
    gateway = GatewayAPI(study.gateway_url, api_key=api_key, timeout_s=10.0)
    try:
        return gateway.get_run(run)["status"]
    finally:
        gateway.close()


def alive(pid: int | None) -> bool:
    """`pid` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        return bool(pid) and "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_study_is_started_watched_and_steered_from_the_browser(
    home: Path, page, live_server, screenshot
):
    from playwright.sync_api import expect

    from researcher.study import open_db
    from researcher.web.app import make_app

    engine = open_db()
    app = make_app(engine)
    app.state.start_wait_s = 60.0  # the spawned researcher imports slowly on a loaded box
    base = live_server(app)
    page.on("dialog", lambda dialog: dialog.accept())  # the stop buttons confirm()

    # 1. the studies page, with its start form
    page.goto(base + "/")
    expect(page.locator("h1")).to_have_text("Studies")
    expect(page.get_by_text("No studies yet")).to_be_visible()
    screenshot(page, "studies")

    # 2. start a study on the tiny model → its page
    form = page.locator("#start-form")
    agent = home / "agent.py"
    agent.write_text(AGENT)
    form.locator("input[name=question]").fill(QUESTION)
    form.locator("input[name=workflow]").fill(str(agent))
    form.locator("input[name=budget]").fill("4m")
    form.locator("select[name=model]").select_option("tiny")
    form.locator("input[name=seeds]").fill("1")
    # the start route checks the workflow (a subprocess), reads the question and waits for
    # the study's row: on a loaded box that is more than the page's 10 s default, and the
    # click itself waits for the navigation it starts
    with page.expect_navigation(url="**/studies/*", timeout=90_000):
        form.get_by_role("button", name="Start").click(timeout=90_000)
    study_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    expect(page.locator("h1")).to_have_text(QUESTION)
    study = study_row(engine, study_id)
    assert study is not None and study.model == "tiny", study
    study_dir = Path(study.directory)
    assert study_dir.parent == home / "studies"

    # 3. the reward curve fills in without a reload (ui.js polls curves.json every 2 s and
    # records the number of points it drew in data-points)
    curve = page.locator("#curves")
    url_before = page.url

    def drawn() -> int:
        return int(curve.get_attribute("data-points") or 0)

    first = wait_until("reward points on the curve", drawn, timeout=START_S)
    wait_until("the curve growing", lambda: drawn() > first, timeout=STEP_S)
    assert page.url == url_before  # no navigation: the script redrew it
    expect(curve.locator("polyline[points*=',']").first).to_be_attached()  # a drawn series
    screenshot(page, "study-live")

    # 4. a note → applied by the monitor, in the planner's state, in the timeline
    page.locator(".note-form textarea[name=text]").fill(NOTE)
    with page.expect_navigation(url="**/studies/*", timeout=NAV_MS):
        page.locator("#add-note").click(timeout=NAV_MS)
    expect(page.locator("p.message")).to_contain_text("note added")
    expect(page.locator("#interventions")).to_contain_text(NOTE)

    def note_applied() -> bool:
        with session_scope(engine) as session:
            items = crud.interventions(session, study_id=study_id)
        notes = [i for i in items if i.kind == "note"]
        assert notes and notes[-1].payload["text"] == NOTE and notes[-1].actor == "human:ui"
        return notes[-1].status == "applied"

    wait_until("the note applied by the monitor", note_applied, timeout=STEP_S)
    wait_until("the note in the graph state's notes",
               lambda: NOTE in notes_in_graph(study_dir, study_id), timeout=STEP_S)  # fmt: skip
    # the timeline shows it without a reload: the UI's event, then the monitor's "note read"
    expect(page.locator("#events")).to_contain_text(f"note added: {NOTE}")
    expect(page.locator("#events")).to_contain_text(f"human note read: {NOTE}", timeout=15_000)

    # 5. pause → the study and its gateway run pause; resume → running again
    with session_scope(engine) as session:
        running = [e for e in crud.experiments(session, study_id=study_id) if e.status == "running"]
    assert running, "no experiment running to pause"
    run = running[0].run_name or running[0].id
    with page.expect_navigation(url="**/studies/*", timeout=NAV_MS):
        page.locator("#pause").click(timeout=NAV_MS)
    expect(page.locator("#study-status")).to_have_text("paused")
    expect(page.locator("#resume")).to_be_visible()
    assert study_row(engine, study_id).status == "paused"
    study = study_row(engine, study_id)  # its gateway_url is known by now
    assert study.gateway_url, study
    wait_until(f"run {run} paused on the gateway",
               lambda: gateway_run_status(study, run) == "paused", timeout=STEP_S)  # fmt: skip
    expect(page.locator("#events")).to_contain_text("study paused", timeout=15_000)
    screenshot(page, "study-paused")

    with page.expect_navigation(url="**/studies/*", timeout=NAV_MS):
        page.locator("#resume").click(timeout=NAV_MS)
    expect(page.locator("#study-status")).to_have_text("running")
    expect(page.locator("#pause")).to_be_visible()
    assert study_row(engine, study_id).status == "running"
    wait_until(f"run {run} training again on the gateway",
               lambda: gateway_run_status(study, run) != "paused", timeout=STEP_S)  # fmt: skip
    expect(page.locator("#events")).to_contain_text("study resumed", timeout=15_000)
    page.reload()  # the experiments and interventions tables are rendered by the server
    expect(page.locator("#interventions")).to_contain_text("resume")
    screenshot(page, "study-steered")

    # 6. the run page, then an episode's token-level trace
    with page.expect_navigation(url="**/runs/*", timeout=NAV_MS):
        page.locator("#experiments a", has_text=run).click(timeout=NAV_MS)
    expect(page.locator("h1")).to_have_text(f"Run {run}")
    # a finished episode: an open one may not have made its first call yet (no tokens)
    episode_links = page.locator("#episodes tbody tr", has_text="finished").locator("a")

    def an_episode() -> bool:
        if episode_links.count():
            return True
        page.reload()
        return False

    wait_until("a finished episode on the run page", an_episode, timeout=STEP_S, every=2.0)
    expect(page.locator(".unreachable")).to_have_count(0)
    with page.expect_navigation(url="**/episodes/*", timeout=NAV_MS):
        episode_links.first.click(timeout=NAV_MS)
    expect(page.locator("h1")).to_contain_text("Episode")
    tokens = page.locator(".timeline .tokens")
    expect(tokens.first).to_be_visible()
    expect(tokens.locator(".tok.train").first).to_be_visible()
    expect(tokens.locator(".tok.ctx").first).to_be_visible()
    assert tokens.locator(".call-mark").count() >= 1
    assert page.locator("#calls tbody tr").count() >= 1
    screenshot(page, "trace")

    # 7. stop the study from its page; nothing it started is left running
    page.goto(f"{base}/studies/{study_id}")
    with page.expect_navigation(url="**/studies/*", timeout=NAV_MS):
        page.locator("#stop").click(timeout=NAV_MS)
    wait_until("the study stopped",
               lambda: study_row(engine, study_id).status == "stopped", timeout=90)  # fmt: skip
    expect(page.locator("#study-status")).to_have_text("stopped", timeout=10_000)
    with session_scope(engine) as session:
        items = crud.interventions(session, study_id=study_id)
    assert {"note", "pause", "resume", "stop"} <= {i.kind for i in items}, items
    wait_until("the researcher exited", lambda: not alive(study_row(engine, study_id).pid),
               timeout=30)  # fmt: skip
    wait_until("the study's gateway and clients gone",
               lambda: not processes_mentioning(study_dir.name), timeout=30)  # fmt: skip
