"""With an admin key: run control and client routes need it; an episode key reaches only
its own episode (another episode's key is a 401, like the trace endpoint)."""

from __future__ import annotations

import pytest

from tests.unit.gateway.conftest import (
    assert_openai_error,
    bearer,
    create_run,
    finish,
    open_episode,
)

ADMIN = "sk-admin-secret"


@pytest.fixture
def guarded(make_client, factory):
    return make_client(api_key=ADMIN, policy_factory=factory)


ADMIN_ONLY = [
    ("POST", "/runs", {"name": "x"}),
    ("GET", "/runs", None),
    ("GET", "/runs/r", None),
    ("PATCH", "/runs/r", {"lr": 1e-4}),
    ("POST", "/runs/r/pause", None),
    ("POST", "/runs/r/resume", None),
    ("POST", "/runs/r/stop", None),
    ("POST", "/runs/r/checkpoints", None),
    ("GET", "/runs/r/checkpoints", None),
    ("DELETE", "/runs/r/checkpoints/1", None),
    ("GET", "/runs/r/metrics", None),
    ("POST", "/swarm/clients", {"name": "w"}),
    ("GET", "/swarm/clients", None),
    ("POST", "/swarm/clients/cl-1/heartbeat", None),
    ("DELETE", "/swarm/clients/cl-1", None),
    ("POST", "/swarm/episodes", {"run": "r", "task_id": "t"}),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ONLY)
def test_run_control_and_client_routes_need_the_admin_key(guarded, method, path, body):
    create_run(guarded, headers=bearer(ADMIN))
    episode = open_episode(guarded, headers=bearer(ADMIN))
    for headers in (None, bearer("sk-wrong"), bearer(episode["api_key"])):
        response = guarded.request(method, path, json=body, headers=headers)
        assert_openai_error(response, 401)
    response = guarded.request(method, path, json=body, headers=bearer(ADMIN))
    assert response.status_code < 400 or response.status_code == 404, response.text


def test_an_episode_key_finishes_its_own_episode_but_not_another(guarded):
    create_run(guarded, headers=bearer(ADMIN))
    mine = open_episode(guarded, headers=bearer(ADMIN))
    other = open_episode(guarded, headers=bearer(ADMIN))
    assert_openai_error(finish(guarded, other, headers=bearer(mine["api_key"])), 401)
    assert_openai_error(finish(guarded, mine), 401)
    url = f"/swarm/episodes/{other['episode_id']}/abort"
    response = guarded.post(url, json={"reason": "x"}, headers=bearer(mine["api_key"]))
    assert_openai_error(response, 401)
    assert finish(guarded, mine, headers=bearer(mine["api_key"])).status_code == 200
    assert finish(guarded, other, headers=bearer(ADMIN)).status_code == 200


def test_an_episode_key_aborts_and_reads_its_own_episode(guarded):
    create_run(guarded, headers=bearer(ADMIN))
    mine = open_episode(guarded, headers=bearer(ADMIN))
    key = bearer(mine["api_key"])
    assert guarded.get(f"/swarm/episodes/{mine['episode_id']}", headers=key).status_code == 200
    url = f"/swarm/episodes/{mine['episode_id']}/abort"
    assert guarded.post(url, json={"reason": "x"}, headers=key).status_code == 200


def test_metrics_and_healthz_need_no_key(guarded):
    assert guarded.get("/metrics").status_code == 200
    assert guarded.get("/healthz").status_code == 200


# -- run-scoped client keys (issue 14, F6) ----------------------------------------------


def client_key(client, run: str = "r") -> str:
    response = client.post(f"/runs/{run}/client-keys", headers=bearer(ADMIN))
    assert response.status_code == 201, response.text
    assert response.json()["run"] == run
    return response.json()["api_key"]


RUN_CONTROL = [
    ("POST", "/runs", {"name": "x"}),
    ("GET", "/runs", None),
    ("PATCH", "/runs/{run}", {"lr": 1e-4}),
    ("POST", "/runs/{run}/pause", None),
    ("POST", "/runs/{run}/resume", None),
    ("POST", "/runs/{run}/stop", None),
    ("POST", "/runs/{run}/checkpoints", None),
    ("GET", "/runs/{run}/checkpoints", None),
    ("DELETE", "/runs/{run}/checkpoints/1", None),
    ("GET", "/runs/{run}/metrics", None),
    ("POST", "/runs/{run}/client-keys", None),
    ("GET", "/swarm/clients", None),
]


@pytest.mark.parametrize(("method", "path", "body"), RUN_CONTROL)
@pytest.mark.parametrize("run", ["r", "sibling"])
def test_a_client_key_controls_no_run_not_even_its_own(guarded, method, path, body, run):
    create_run(guarded, headers=bearer(ADMIN))
    create_run(guarded, name="sibling", headers=bearer(ADMIN))
    key = client_key(guarded)
    response = guarded.request(method, path.format(run=run), json=body, headers=bearer(key))
    assert_openai_error(response, 401)
    assert guarded.get("/runs/sibling", headers=bearer(ADMIN)).json()["status"] == "running"


def test_a_client_key_registers_heartbeats_and_runs_episodes_of_its_own_run(guarded):
    create_run(guarded, headers=bearer(ADMIN))
    key = bearer(client_key(guarded))
    registered = guarded.post("/swarm/clients", json={"name": "w"}, headers=key)
    assert registered.status_code == 200, registered.text
    client_id = registered.json()["client_id"]
    url = f"/swarm/clients/{client_id}/heartbeat"
    assert guarded.post(url, headers=key).status_code == 200
    assert guarded.get("/runs/r", headers=key).json()["name"] == "r"
    episode = open_episode(guarded, headers=key, client_id=client_id)
    assert guarded.get(f"/swarm/episodes/{episode['episode_id']}", headers=key).status_code == 200
    assert finish(guarded, episode, headers=key).status_code == 200
    other = open_episode(guarded, headers=key, client_id=client_id)
    abort = f"/swarm/episodes/{other['episode_id']}/abort"
    assert guarded.post(abort, json={"reason": "x"}, headers=key).status_code == 200
    assert guarded.delete(f"/swarm/clients/{client_id}", headers=key).status_code == 204


def test_a_client_key_cannot_reach_a_sibling_runs_episodes_or_clients(guarded):
    create_run(guarded, headers=bearer(ADMIN))
    create_run(guarded, name="sibling", headers=bearer(ADMIN))
    key = bearer(client_key(guarded))
    sibling_key = bearer(client_key(guarded, "sibling"))
    response = guarded.post("/swarm/episodes", json={"run": "sibling", "task_id": "t"}, headers=key)
    assert_openai_error(response, 403, "forbidden")
    assert_openai_error(guarded.get("/runs/sibling", headers=key), 403, "forbidden")
    theirs = guarded.post("/swarm/clients", json={"name": "w"}, headers=sibling_key).json()
    url = f"/swarm/clients/{theirs['client_id']}"
    assert_openai_error(guarded.post(url + "/heartbeat", headers=key), 403)
    assert_openai_error(guarded.delete(url, headers=key), 403)
    body = {"run": "r", "task_id": "t", "client_id": theirs["client_id"]}
    assert_openai_error(guarded.post("/swarm/episodes", json=body, headers=key), 403)
    their_episode = open_episode(guarded, "sibling", headers=sibling_key)
    assert_openai_error(finish(guarded, their_episode, headers=key), 403)
    abort = f"/swarm/episodes/{their_episode['episode_id']}/abort"
    assert_openai_error(guarded.post(abort, json={"reason": "x"}, headers=key), 403)
    assert_openai_error(
        guarded.get(f"/swarm/episodes/{their_episode['episode_id']}", headers=key), 403
    )
    # a client of the same name in the sibling run is not superseded by ours
    guarded.post("/swarm/clients", json={"name": "w"}, headers=key)
    assert guarded.post(url + "/heartbeat", headers=sibling_key).status_code == 200


def test_a_forged_client_key_or_one_for_another_admin_key_is_refused(guarded, make_client, factory):
    create_run(guarded, headers=bearer(ADMIN))
    key = client_key(guarded)
    forged = key[: len("sk-cl-")] + "0" * 48 + "-r"
    renamed = key.removesuffix("-r") + "-sibling"
    for token in (forged, renamed):
        response = guarded.post("/swarm/clients", json={"name": "w"}, headers=bearer(token))
        assert_openai_error(response, 401)
    rotated = make_client(api_key="sk-another-admin-key", policy_factory=factory)
    response = rotated.post("/swarm/clients", json={"name": "w"}, headers=bearer(key))
    assert_openai_error(response, 401)


def test_a_client_key_for_an_unknown_run_is_a_404(guarded):
    assert_openai_error(guarded.post("/runs/nope/client-keys", headers=bearer(ADMIN)), 404)


# -- every run-control route is on the admin-only router ---------------------------------

CLIENT_READABLE = {("GET", "/runs/{run_id}")}  # a client key of the run may read the run


def run_control_routes(app) -> list[tuple[str, str]]:
    """Every (method, path template) the app serves under /runs, read from its schema."""
    return sorted(
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if path == "/runs" or path.startswith("/runs/")
        for method in operations
    )


def test_every_run_control_route_refuses_a_caller_without_the_admin_key_before_its_input(
    guarded,
):
    """Walks the app's routes, so a route added to a router without `ADMIN_ONLY` fails here:
    without the admin key even an unknown run and a missing body are a 401, not a 404/422."""
    routes = run_control_routes(guarded.app)
    state_changing = {(method, path) for method, path in routes if method != "GET"}
    assert {("POST", "/runs"), ("PATCH", "/runs/{run_id}"), ("POST", "/runs/{run_id}/stop"),
            ("POST", "/runs/{run_id}/client-keys")} <= state_changing  # fmt: skip
    assert not state_changing & CLIENT_READABLE
    key = client_key(guarded, run=create_run(guarded, headers=bearer(ADMIN))["name"])
    for method, path in routes:
        url = path.replace("{run_id}", "no-such-run")
        with_admin = guarded.request(method, url, headers=bearer(ADMIN))
        assert with_admin.status_code != 401, (method, path)
        if (method, path) in CLIENT_READABLE:
            continue
        for headers in (None, bearer("sk-wrong"), bearer(key)):
            response = guarded.request(method, url, headers=headers)
            assert response.status_code == 401, (method, path, headers, response.text)
