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
