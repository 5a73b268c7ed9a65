"""`GET /metrics` is Prometheus text with per-run series, and each app has its own registry."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.unit.gateway.conftest import (
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)


def scrape(client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_parse_as_prometheus_text_with_run_series(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for reward in (1.0, 0.5):
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode)
        finish(trainer_client, episode, reward)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    trainer_client.post("/swarm/clients", json={"name": "w"})

    samples = scrape(trainer_client)
    run = (("run", "r"),)
    assert samples[("swarmrl_run_step", run)] == 1
    assert samples[("swarmrl_run_status", (("run", "r"), ("status", "running")))] == 1
    assert samples[("swarmrl_run_status", (("run", "r"), ("status", "paused")))] == 0
    assert samples[("swarmrl_policy_version", (("policy", "policy"), ("run", "r")))] == 1
    assert samples[("swarmrl_run_reward_mean", (("policy", "policy"), ("run", "r")))] == 0.75
    assert samples[("swarmrl_run_episodes_total", (("outcome", "finished"), ("run", "r")))] == 2
    assert samples[("swarmrl_run_samples_total", (("outcome", "trained"), ("run", "r")))] == 2
    assert samples[("swarmrl_run_samples_buffered", run)] == 0
    assert samples[("swarmrl_clients_active", ())] == 1
    chat = (("method", "POST"), ("route", "/v1/chat/completions"), ("status", "200"))
    assert samples[("swarmrl_http_requests_total", chat)] == 2
    finish_route = (
        ("method", "POST"),
        ("route", "/swarm/episodes/{episode_id}/finish"),
        ("status", "200"),
    )
    assert samples[("swarmrl_http_requests_total", finish_route)] == 2


def test_each_app_has_its_own_registry(make_client):
    first, second = make_client(), make_client()
    first.get("/healthz")
    first.get("/healthz")
    second.get("/healthz")
    health = (("method", "GET"), ("route", "/healthz"), ("status", "200"))
    assert scrape(first)[("swarmrl_http_requests_total", health)] == 2
    assert scrape(second)[("swarmrl_http_requests_total", health)] == 1


def test_unknown_routes_are_counted_under_one_label(client):
    client.get("/no/such/route/1")
    client.get("/no/such/route/2")
    unmatched = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert scrape(client)[("swarmrl_http_requests_total", unmatched)] == 2
