"""The experiment web UI's routes on SQLite with a fake gateway: every page renders its
data, unknown ids are 404 pages, each intervention leaves a row and an event and has its
effect, forms refuse bad input inline, the trace viewer colours tokens by loss mask, and
the token guards everything."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.studies import ClientProcessRow, ExperimentRow, StudyRow
from researcher.cli import app as cli_app
from researcher.gateway_api import GatewayRefused, GatewayUnavailable
from researcher.plan import Reading
from researcher.study import open_db
from researcher.web.app import make_app as make_web_app


def make_app(engine, **options):
    """The UI as TestClient reaches it: its requests name Host "testserver"."""
    return make_web_app(engine, allowed_hosts=["testserver"], **options)


STUDY = "st-0000beef"
RUN = f"{STUDY}-mix-s0"
GATEWAY = "http://gateway.test:8400"

TRACE = {
    "episode_id": "ep-1", "status": "finished", "run": RUN, "task_id": "arith-3",
    "task_family": "arithmetic", "group_id": "g1", "client_id": "c1",
    "calls": [
        {"index": 0, "request_id": "r0", "kind": "chat", "model": f"{RUN}/policy",
         "prompt_token_ids": [1, 2, 3], "completion_token_ids": [7, 8], "logprobs": [-0.25, -1.5],
         "versions": [0, 0], "version": 0, "finish_reason": "stop", "token_texts": ["4", "2"],
         "prompt_text": "<s>2+2", "completion_text": "42", "temperature": 1.0, "started_at": 1.0,
         "first_token_at": 1.1, "finished_at": 1.2, "drift": "fresh", "continues": None},
        {"index": 1, "request_id": "r1", "kind": "chat", "model": f"{RUN}/policy",
         "prompt_token_ids": [1, 2, 3, 7, 8, 9], "completion_token_ids": [5], "logprobs": [-0.125],
         "versions": [1], "version": 1, "finish_reason": "stop", "token_texts": ["<ok>"],
         "prompt_text": None, "completion_text": "ok", "temperature": 1.0, "started_at": 2.0,
         "first_token_at": 2.1, "finished_at": 2.2, "drift": "unrepaired", "continues": 0},
    ],
    "timelines": {"policy": [{
        "token_ids": [1, 2, 3, 7, 8, 9, 5], "loss_mask": [0, 0, 0, 1, 1, 0, 1],
        "logprobs": [0.0, 0.0, 0.0, -0.25, -1.5, 0.0, -0.125],
        "calls": [
            {"call_index": 0, "prompt_start": 0, "completion_start": 3, "completion_end": 5, "version": 0},
            {"call_index": 1, "prompt_start": 5, "completion_start": 6, "completion_end": 7, "version": 1},
        ],
    }]},
    "drift": {"fresh": 1, "unrepaired": 1, "snaps": 0},
}  # fmt: skip


class FakeGateway:
    """Records run-control calls; serves episodes and one trace."""

    def __init__(self, *, down: bool = False):
        self.calls: list[tuple] = []
        self.down = down
        self.urls: list[tuple] = []

    def __call__(self, url, api_key=None):
        self.urls.append((url, api_key))
        return self

    def _check(self):
        if self.down:
            raise GatewayUnavailable(f"gateway {GATEWAY} did not answer")

    def patch_run(self, name, fields):
        self._check()
        self.calls.append(("patch", name, fields))
        return {"name": name, **fields}

    def stop_run(self, name):
        self._check()
        self.calls.append(("stop", name))

    def _call(self, method, path, **kwargs):
        self._check()
        self.calls.append((method, path, kwargs))
        if path == f"/runs/{RUN}/episodes":
            return [{"episode_id": "ep-1", "task_id": "arith-3", "task_family": "arithmetic",
                     "status": "finished", "reward": 0.75, "created_at": 1.0, "finished_at": 2.0,
                     "step": 3, "client_id": "c1"}]  # fmt: skip
        if path == "/swarm/episodes/ep-1":
            return TRACE
        raise GatewayRefused(f"{method} {path} → 404: not found", status=404, code="not_found")

    def close(self):
        pass


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("SWARMRL_HOME", str(tmp_path))
    monkeypatch.delenv("SWARMRL_DB_URL", raising=False)
    engine = open_db(f"sqlite:///{tmp_path / 'researcher.db'}")
    directory = tmp_path / "studies" / STUDY
    directory.mkdir(parents=True)
    (directory / "settings.json").write_text(json.dumps({"question": "q", "budget_s": 600,
                                                         "gateway": GATEWAY, "api_key": "adm"}))  # fmt: skip
    log = tmp_path / "client.log"
    log.write_text("".join(f"line {i}\n" for i in range(300)))
    now = time.time()
    with session_scope(engine) as session:
        crud.create_study(session, study=StudyRow(
            id=STUDY, question="does multi-task mixing help?", status="running", phase="monitor",
            planner="template", model="tiny", gateway_url=GATEWAY, budget_s=1200,
            budget_used_s=300, seeds=1, directory=str(directory), created_at=now, updated_at=now,
            latest_finding="mixing looks ahead so far"))  # fmt: skip
        crud.upsert_hypothesis(session, study_id=STUDY, key="h1", statement="mixing helps",
                               prediction="higher held-out accuracy", refuted_if="no gain",
                               status="testing", evidence="treatment +0.1 [0.02, 0.2]")  # fmt: skip
        for arm, role in (("mix", "treatment"), ("solo", "control")):
            crud.upsert_experiment(session, experiment=ExperimentRow(
                id=f"{STUDY}-{arm}-s0", study_id=STUDY, hypothesis_key="h1", arm=arm, role=role,
                seed=0, config={"lr": 1e-5, "task_mix": {"arithmetic": 1.0}}, status="running",
                run_name=f"{STUDY}-{arm}-s0", code_version="abc123", created_at=now,
                updated_at=now))  # fmt: skip
            crud.add_metric_snapshots(session, experiment_id=f"{STUDY}-{arm}-s0", points=[
                (1, "reward/mean", 0.1), (2, "reward/mean", 0.4), (2, "loss", 0.9)])  # fmt: skip
        crud.record_client_process(session, process=ClientProcessRow(
            experiment_id=RUN, attempt=0, launcher="local", pid=4242, host="box",
            command=["swarm", "run"], code_version="abc123", log_path=str(log),
            started_at=now))  # fmt: skip
        crud.add_event(session, study_id=STUDY, phase="launch", kind="action",
                       message="launched 2 runs", reason="design approved")  # fmt: skip
    return engine


@pytest.fixture
def gateway():
    return FakeGateway()


@pytest.fixture
def client(engine, gateway):
    return TestClient(make_app(engine, gateway_factory=gateway))


def interventions(engine, kind=None):
    with session_scope(engine) as session:
        rows = crud.interventions(session, study_id=STUDY)
    return [r for r in rows if kind is None or r.kind == kind]


def events(engine):
    with session_scope(engine) as session:
        return crud.events(session, study_id=STUDY)


def study(engine):
    with session_scope(engine) as session:
        return crud.get_study(session, study_id=STUDY)


def assert_recorded(engine, kind, status):
    [row] = interventions(engine, kind)
    assert (row.actor, row.status) == ("human:ui", status)
    last = events(engine)[-1]
    assert (last.kind, last.phase, last.reason) == ("intervention", "monitor", "human:ui")
    return row


# -- pages ----------------------------------------------------------------------------------


def test_the_studies_page_lists_each_study_with_status_phase_budget_and_finding(client):
    page = client.get("/")
    assert page.status_code == 200
    for text in (STUDY, "does multi-task mixing help?", "running", "monitor", "5m00s / 20m00s",
                 "mixing looks ahead so far", 'action="/studies"'):  # fmt: skip
        assert text in page.text


def test_the_study_page_shows_the_question_as_read(client, engine):
    assert 'id="reading"' not in client.get(f"/studies/{STUDY}").text  # not framed yet
    reading = Reading(factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="learnable",
                      outcome="learning_speed", direction="less")  # fmt: skip
    with session_scope(engine) as session:
        crud.add_event(session, study_id=STUDY, phase="frame", kind="decision", message="framed",
                       data={"reading": reading.model_dump(mode="json")})  # fmt: skip
    page = client.get(f"/studies/{STUDY}").text
    assert 'id="reading"' in page
    for text in ("kl_coef", "learnable", "0.5", "less"):
        assert text in page.split('id="reading"')[1].split("</table>")[0]


def test_the_study_page_shows_hypotheses_experiments_events_and_intervention_forms(client):
    page = client.get(f"/studies/{STUDY}")
    assert page.status_code == 200
    for text in ("mixing helps", "treatment +0.1", f'href="/runs/{RUN}"', "0.400",
                 "launched 2 runs", "design approved", 'id="curves"', f"/studies/{STUDY}/pause",
                 f"/studies/{STUDY}/note", f"/studies/{STUDY}/stop"):  # fmt: skip
        assert text in page.text
    assert "/approve" not in page.text and 'id="report-link"' not in page.text


def test_curves_json_maps_arm_to_seed_to_step_reward_points(client):
    assert client.get(f"/studies/{STUDY}/curves.json").json() == {
        "mix": {"0": [[1, 0.1], [2, 0.4]]},
        "solo": {"0": [[1, 0.1], [2, 0.4]]},
    }


def test_events_json_returns_only_newer_events_newest_first(client, engine):
    first = events(engine)[-1].id
    with session_scope(engine) as session:
        crud.add_event(session, study_id=STUDY, phase="monitor", kind="action", message="halved lr")
    data = client.get(f"/studies/{STUDY}/events.json", params={"since": first}).json()
    assert [e["message"] for e in data["events"]] == ["halved lr"]
    assert data["status"] == "running"
    assert len(client.get(f"/studies/{STUDY}/events.json").json()["events"]) == 2


def test_the_report_link_serves_the_latest_report_html(client, engine, tmp_path):
    report = tmp_path / "report.html"
    report.write_text("<h1>the report</h1>")
    with session_scope(engine) as session:
        crud.add_report(session, study_id=STUDY, markdown_path=str(tmp_path / "r.md"),
                        html_path=str(report), conclusion="c", planner="template")  # fmt: skip
    assert 'id="report-link"' in client.get(f"/studies/{STUDY}").text
    assert client.get(f"/studies/{STUDY}/report").text == "<h1>the report</h1>"


def test_the_run_page_shows_metrics_processes_settings_and_episodes(client, gateway):
    page = client.get(f"/runs/{RUN}")
    assert page.status_code == 200
    for text in ('data-metric="loss"', 'data-metric="reward/mean"', "4242", "abc123",
                 f"/runs/{RUN}/logs/0", f"/runs/{RUN}/episodes/ep-1", "0.750", "arith-3",
                 f"/runs/{RUN}/settings", f"/runs/{RUN}/stop"):  # fmt: skip
        assert text in page.text
    assert gateway.urls[-1] == (GATEWAY, "adm")  # the study's admin key is sent


def test_the_run_page_says_gateway_unreachable_when_the_gateway_is_down(engine):
    page = TestClient(make_app(engine, gateway_factory=FakeGateway(down=True))).get(f"/runs/{RUN}")
    assert page.status_code == 200 and "gateway unreachable" in page.text


def test_metrics_json_and_the_last_200_log_lines(client):
    assert client.get(f"/runs/{RUN}/metrics.json").json() == {
        "loss": [[2, 0.9]],
        "reward/mean": [[1, 0.1], [2, 0.4]],
    }
    log = client.get(f"/runs/{RUN}/logs/0").text.splitlines()
    assert len(log) == 200 and log[0] == "line 100" and log[-1] == "line 299"


@pytest.mark.parametrize("path", ["/studies/st-nope", "/studies/st-nope/curves.json",
                                  "/runs/nope", "/runs/nope/metrics.json", f"/runs/{RUN}/logs/7",
                                  f"/runs/{RUN}/episodes/ep-missing", f"/studies/{STUDY}/report"])  # fmt: skip
def test_unknown_ids_are_a_404_html_page(client, path):
    page = client.get(path)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html") and "not found" in page.text


# -- the trace viewer -----------------------------------------------------------------------


def test_the_trace_viewer_colours_tokens_by_loss_mask_with_logprobs_on_hover(client):
    page = client.get(f"/runs/{RUN}/episodes/ep-1")
    assert page.status_code == 200
    text = page.text
    assert text.count('class="tok train" title=') == 3 and text.count('class="tok ctx" title=') == 4
    assert 'title="id 7 · logprob -0.2500">4</span>' in text
    assert 'title="id 5 · logprob -0.1250">&lt;ok&gt;</span>' in text  # escaped
    assert 'title="id 8 · context (not trained)"' not in text
    assert 'title="id 9 · context (not trained)">⟨9⟩</span>' in text  # no text piece: the id
    assert text.count('class="call-mark"') >= 2 and "unrepaired" in text


# -- interventions --------------------------------------------------------------------------


def test_pause_then_resume_change_the_status_and_are_recorded(client, engine):
    response = client.post(f"/studies/{STUDY}/pause", follow_redirects=False)
    assert response.status_code == 303 and study(engine).status == "paused"
    assert_recorded(engine, "pause", "applied")
    assert client.post(f"/studies/{STUDY}/pause").status_code == 409  # only from running
    client.post(f"/studies/{STUDY}/resume")
    assert study(engine).status == "running"
    assert len(interventions(engine, "resume")) == 1


@pytest.mark.slow
def test_a_note_is_a_pending_intervention_the_planner_reads(client, engine):
    page = client.post(f"/studies/{STUDY}/note", data={"text": "try a lower lr"})
    assert page.status_code == 200 and "try a lower lr" in page.text
    row = assert_recorded(engine, "note", "pending")
    assert row.payload == {"text": "try a lower lr"}


def test_an_empty_note_is_refused_inline(client, engine):
    page = client.post(f"/studies/{STUDY}/note", data={"text": "  "})
    assert page.status_code == 422 and "the note is empty" in page.text
    assert interventions(engine) == []


def test_approve_and_reject_show_only_while_the_study_waits_and_are_recorded(client, engine):
    assert client.post(f"/studies/{STUDY}/approve").status_code == 409
    with session_scope(engine) as session:
        crud.add_event(session, study_id=STUDY, phase="approve", kind="waiting",
                       message="waiting for a human to approve or reject the design")  # fmt: skip
    page = client.get(f"/studies/{STUDY}")
    assert "Waiting for you" in page.text and f"/studies/{STUDY}/reject" in page.text
    client.post(f"/studies/{STUDY}/approve", data={"reason": "looks fine"})
    row = assert_recorded(engine, "approve", "pending")
    assert row.reason == "looks fine"
    assert "Waiting for you" not in client.get(f"/studies/{STUDY}").text
    assert client.post(f"/studies/{STUDY}/reject").status_code == 409


def test_reject_while_waiting_is_a_pending_reject(client, engine):
    with session_scope(engine) as session:
        crud.add_event(session, study_id=STUDY, phase="approve", kind="waiting", message="waiting")
    client.post(f"/studies/{STUDY}/reject")
    assert_recorded(engine, "reject", "pending")


def test_stop_stops_the_study_when_no_researcher_runs_it(client, engine):
    client.post(f"/studies/{STUDY}/stop")
    assert study(engine).status == "stopped"
    assert_recorded(engine, "stop", "applied")
    assert client.post(f"/studies/{STUDY}/stop").status_code == 409


def test_live_settings_go_to_the_gateway_at_once_and_are_recorded(client, engine, gateway):
    response = client.post(f"/runs/{RUN}/settings", follow_redirects=False,
                           data={"lr": "5e-6", "kl_coef": "", "task_mix": '{"arithmetic": 0.5, "calculator": 0.5}'})  # fmt: skip
    assert response.status_code == 303
    fields = {"lr": 5e-6, "task_mix": {"arithmetic": 0.5, "calculator": 0.5}}
    assert ("patch", RUN, fields) in gateway.calls
    row = assert_recorded(engine, "patch_run", "applied")
    assert row.payload == {"run": RUN, "fields": fields} and row.experiment_id == RUN


@pytest.mark.parametrize("form, message", [
    ({"lr": "fast"}, "lr 'fast' is not a positive number"),
    ({"lr": "0"}, "lr '0' is not a positive number"),
    ({"task_mix": "[1]"}, "task_mix"),
    ({}, "nothing to change"),
])  # fmt: skip
def test_bad_live_settings_are_refused_inline(client, engine, gateway, form, message):
    page = client.post(f"/runs/{RUN}/settings", data=form)
    assert page.status_code == 422 and message in page.text.replace("&#39;", "'")
    assert not any(c[0] == "patch" for c in gateway.calls) and interventions(engine) == []


def test_stop_run_goes_to_the_gateway_and_is_recorded(client, engine, gateway):
    client.post(f"/runs/{RUN}/stop")
    assert ("stop", RUN) in gateway.calls
    row = assert_recorded(engine, "stop_run", "applied")
    assert row.payload == {"run": RUN}


def test_a_run_edit_with_the_gateway_down_is_a_failed_intervention(engine):
    client = TestClient(make_app(engine, gateway_factory=FakeGateway(down=True)))
    page = client.post(f"/runs/{RUN}/stop")
    assert page.status_code == 502 and "did not answer" in page.text
    assert_recorded(engine, "stop_run", "failed")


# -- starting a study -----------------------------------------------------------------------


@pytest.fixture
def spawned(client):
    started: list[list[str]] = []
    client.app.state.spawn_study = lambda command, db_url: started.append(command) or 99
    client.app.state.start_wait_s = 0.0
    return started


@pytest.mark.parametrize("form, message", [
    ({"question": "  ", "budget": "20m"}, "the question is empty"),
    ({"question": "does multi-task mixing help?", "budget": "forever"}, "is not a duration"),
    ({"question": "what is the meaning of life", "budget": "20m"}, "not a question about training"),
])  # fmt: skip
def test_bad_start_forms_are_refused_inline_and_start_nothing(client, spawned, form, message):
    page = client.post("/studies", data=form | {"model": "tiny"})
    assert page.status_code == 422 and message in page.text
    assert spawned == []


def test_a_good_start_form_spawns_the_researcher_and_redirects(client, spawned):
    response = client.post("/studies", follow_redirects=False, data={
        "question": "does multi-task mixing help?", "budget": "5m", "model": "tiny", "seeds": "1",
        "ask": "on"})  # fmt: skip
    assert response.status_code == 303 and response.headers["location"].startswith("/?msg=")
    [command] = spawned
    assert command[1:5] == ["-m", "researcher.cli", "start", "does multi-task mixing help?"]
    assert command[-5:] == ["--model", "tiny", "--seeds", "1", "--ask"]


def test_a_start_redirects_to_the_new_study_once_its_row_appears(client, engine, spawned, tmp_path):
    def spawn(command, db_url):
        now = time.time()
        with session_scope(engine) as session:
            crud.create_study(session, study=StudyRow(
                id="st-new", question=command[4], status="running", phase="start",
                planner="template", budget_s=300, seeds=1, directory=str(tmp_path),
                created_at=now, updated_at=now))  # fmt: skip
        return 1

    client.app.state.spawn_study = spawn
    response = client.post("/studies", follow_redirects=False,
                           data={"question": "does multi-task mixing help?", "budget": "5m"})  # fmt: skip
    assert response.headers["location"] == "/studies/st-new"


# -- auth -----------------------------------------------------------------------------------


def test_with_a_token_every_request_needs_it_and_the_query_sets_a_cookie(engine, gateway):
    client = TestClient(make_app(engine, token="s3cret", gateway_factory=gateway))
    assert client.get("/").status_code == 401
    assert client.get("/", params={"token": "wrong"}).status_code == 401
    first = client.get("/", params={"token": "s3cret"})
    assert first.status_code == 200
    assert "httponly" in first.headers["set-cookie"].lower()
    assert client.get(f"/studies/{STUDY}").status_code == 200  # the cookie
    bare = TestClient(make_app(engine, token="s3cret"))
    assert bare.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
    assert bare.post(f"/studies/{STUDY}/pause").status_code == 401
    assert study(engine).status == "running"


def test_a_cross_site_form_post_is_refused(client, engine):
    response = client.post(f"/studies/{STUDY}/pause", headers={"origin": "http://evil.test"})
    assert response.status_code == 403 and study(engine).status == "running"


def test_researcher_ui_on_a_public_address_without_a_token_exits_2(monkeypatch):
    monkeypatch.delenv("SWARMRL_UI_TOKEN", raising=False)
    result = CliRunner().invoke(cli_app, ["ui", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--token" in " ".join(result.output.split())


# -- token texts and the group tree ---------------------------------------------------------

PROMPT = [1, 2, 3]  # "<s>", "2+2", "="


def group_trace(episode_id: str, completion: list[int], group: str | None = "g7") -> dict:
    """A one-call episode of `group` whose timeline carries a text piece per token."""
    ids = PROMPT + completion
    texts = ["<s>", "2+2", "="] + [f"w{i}" for i in completion]
    return {
        "episode_id": episode_id, "status": "finished", "run": RUN, "task_id": "arith-3",
        "group_id": group, "drift": {},
        "calls": [{"index": 0, "request_id": "r", "kind": "chat", "model": f"{RUN}/policy",
                   "prompt_token_ids": PROMPT, "prompt_token_texts": texts[:3],
                   "completion_token_ids": completion, "token_texts": texts[3:],
                   "logprobs": [-0.5] * len(completion), "versions": [0] * len(completion),
                   "version": 0, "finish_reason": "stop", "completion_text": "",
                   "started_at": 1.0, "first_token_at": 1.1, "finished_at": 1.2}],
        "timelines": {"policy": [{
            "token_ids": ids, "token_texts": texts, "loss_mask": [0, 0, 0] + [1] * len(completion),
            "logprobs": [0.0] * 3 + [-0.5] * len(completion),
            "calls": [{"call_index": 0, "prompt_start": 0, "completion_start": 3,
                       "completion_end": len(ids), "version": 0}],
        }]},
    }  # fmt: skip


class GroupGateway(FakeGateway):
    """Serves the episodes of one group, and one more episode outside any group."""

    def __init__(self):
        super().__init__()
        self.traces = {t["episode_id"]: t for t in [
            group_trace("ep-a", [40, 41]), group_trace("ep-b", [40, 42, 43]),
            group_trace("ep-c", [50]), group_trace("ep-solo", [60], group=None),
        ]}  # fmt: skip

    def _call(self, method, path, **kwargs):
        self.calls.append((method, path, kwargs))
        if path == f"/runs/{RUN}/episodes":
            return [{"episode_id": t["episode_id"], "group_id": t["group_id"]}
                    for t in self.traces.values()]  # fmt: skip
        found = self.traces.get(path.removeprefix("/swarm/episodes/"))
        if found is None:
            raise GatewayRefused(f"{method} {path} → 404: not found", status=404, code="not_found")
        return found


@pytest.fixture
def group_client(engine):
    return TestClient(make_app(engine, gateway_factory=GroupGateway()))


def test_the_trace_viewer_shows_each_tokens_text_instead_of_its_id(group_client):
    page = group_client.get(f"/runs/{RUN}/episodes/ep-solo")
    assert page.status_code == 200
    assert 'title="id 1 · context (not trained)">&lt;s&gt;</span>' in page.text
    assert 'title="id 2 · context (not trained)">2+2</span>' in page.text
    assert 'title="id 60 · logprob -0.5000">w60</span>' in page.text
    assert "⟨" not in page.text


def test_the_group_tree_shows_the_shared_prefix_once_and_a_branch_per_group_member(group_client):
    page = group_client.get(f"/runs/{RUN}/episodes/ep-a")
    assert page.status_code == 200
    tree = page.text[page.text.index('id="group-tree"') : page.text.index("<h2>Calls</h2>")]
    assert "3 branches · shared prefix 3 tokens · 8 tokens as a tree vs 15 as" in tree
    assert tree.count("shared prefix ·") == 1 and tree.count("diverges at token 3 ·") == 2
    assert "diverges at token 4 · 2 tokens, 2 trained" in tree  # ep-a and ep-b part after 40
    for episode in ("ep-a", "ep-b", "ep-c"):
        assert f'href="/runs/{RUN}/episodes/{episode}">{episode}</a>' in tree
    assert "ep-solo" not in tree
    assert 'title="id 43 · logprob -0.5000">w43</span>' in tree  # a branch's trained tokens


def test_an_episode_without_a_group_shows_no_tree(group_client):
    page = group_client.get(f"/runs/{RUN}/episodes/ep-solo")
    assert page.status_code == 200 and "Group tree" not in page.text


def test_prefix_tree_collapses_shared_runs_and_keeps_identical_and_prefix_branches():
    from researcher.web.trace import prefix_tree

    (root,) = prefix_tree([[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 7], [1, 2, 3, 4], [1, 2]])
    assert (root.start, root.end, root.members) == (0, 2, [0, 1, 2, 3, 4])  # 4 ends here
    three, seven = root.children
    assert (three.start, three.end, three.members) == (2, 3, [0, 1, 3])
    assert (seven.start, seven.end, seven.members) == (2, 3, [2])
    assert [(c.start, c.end, c.members) for c in three.children] == [(3, 4, [0, 3]), (3, 5, [1])]
    assert len(prefix_tree([[1, 2], [3]])) == 2  # no shared prefix: two roots


def test_the_ui_modules_import_one_way_app_then_routes_then_common():
    from tests.unit.test_import_boundaries import REPO, imported_modules

    web = REPO / "researcher" / "web"
    below_app = [web / "common.py", *sorted((web / "routes").glob("*.py"))]
    for path in below_app:
        names = {name for names in imported_modules(path) for name in names}
        assert "researcher.web.app" not in names, f"{path.name} imports the app module"
    common = {name for names in imported_modules(web / "common.py") for name in names}
    assert not any(name.startswith("researcher.web.routes") for name in common)
