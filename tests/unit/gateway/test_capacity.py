"""`GET /capacity`: its shape, that it needs no key, the runs it counts, and the rule."""

from __future__ import annotations

import pytest

from gateway.http.capacity import capacity, suggest_concurrent_runs, usable_cpus
from gateway.settings import GatewaySettings
from tests.unit.gateway.conftest import bearer, create_run

FIELDS = {
    "device", "hosting", "cpus", "engine_threads", "active_runs", "max_live_runs",
    "suggested_concurrent_runs", "basis",
}  # fmt: skip


def test_capacity_reports_the_device_cores_and_a_suggestion(make_client):
    body = make_client(engine_threads=2).get("/capacity").json()
    assert set(body) == FIELDS
    assert body["device"] == "cpu" and body["hosting"] == "in-process"
    assert body["cpus"] == usable_cpus() >= 1
    assert body["engine_threads"] == 2
    assert body["active_runs"] == 0
    expected = 2 if body["cpus"] >= 2 else 1
    assert body["suggested_concurrent_runs"] == expected
    assert body["basis"]


def test_capacity_needs_no_key_on_a_keyed_gateway(make_client):
    client = make_client(api_key="sk-admin-capacity")
    assert client.get("/capacity").status_code == 200
    assert client.get("/runs").status_code == 401  # the gateway is guarded: /capacity is not


def test_capacity_counts_live_runs_and_not_stopped_ones(trainer_client):
    create_run(trainer_client, "a")
    create_run(trainer_client, "b")
    assert trainer_client.get("/capacity").json()["active_runs"] == 2
    assert trainer_client.post("/runs/a/stop").status_code == 200
    assert trainer_client.get("/capacity").json()["active_runs"] == 1


def test_capacity_is_in_the_openapi_schema(client):
    schema = client.get("/openapi.json").json()
    assert "/capacity" in schema["paths"]
    assert "Capacity" in schema["components"]["schemas"]


@pytest.mark.parametrize(
    ("fields", "cpus", "expected"),
    [
        ({}, 1, 1),  # one core: nothing to share
        ({}, 2, 2),  # measured: two runs beat one on two cores (docs/scaling.md)
        ({}, 16, 2),  # more cores than measured: no more than measured
        ({"device": "cuda"}, 1, 2),
        ({"concurrent_runs": 5}, 2, 5),  # the operator knows the machine
        ({"concurrent_runs": 5, "max_live_runs": 3}, 2, 3),  # never beyond what POST /runs allows
        ({"max_live_runs": 1}, 2, 1),
    ],
)
def test_the_suggestion_follows_the_documented_rule(fields, cpus, expected, tmp_path):
    settings = GatewaySettings(state_dir=tmp_path, api_key=None, **fields)
    runs, why = suggest_concurrent_runs(settings, cpus)
    assert runs == expected
    assert why


def test_an_admin_key_still_reads_capacity(make_client):
    key = "sk-admin-capacity"
    assert make_client(api_key=key).get("/capacity", headers=bearer(key)).status_code == 200


RAY = {"ray_address": "auto", "ray_actor_cpus": 1.0}


@pytest.mark.parametrize(
    ("fields", "served", "expected"),
    [
        ({"ray_cluster_cpus": 16.0, "max_live_runs": 32}, 1, 15),  # 15 actors beside the served one
        ({"ray_cluster_cpus": 16.0, "ray_actor_cpus": 4.0}, 1, 3),  # (16 − 4) // 4
        ({"ray_cluster_cpus": 16.0, "ray_actor_cpus": 4.0}, 2, 2),  # two served models
        ({"ray_cluster_cpus": 2.0}, 2, 1),  # no room: one run, which waits for an actor
        ({"ray_cluster_cpus": 64.0}, 1, 8),  # never beyond max_live_runs (8)
        ({"ray_cluster_cpus": 64.0, "concurrent_runs": 3}, 1, 3),  # the operator knows
    ],
)
def test_on_ray_the_suggestion_counts_the_clusters_cpus_not_the_heads(
    fields, served, expected, tmp_path
):
    settings = GatewaySettings(state_dir=tmp_path, api_key=None, **(RAY | fields))
    runs, why = suggest_concurrent_runs(settings, cpus=1, served_models=served)
    assert runs == expected
    assert "Ray cluster" in why or "operator" in why


def test_on_ray_capacity_reports_the_clusters_cpus(tmp_path):
    settings = GatewaySettings(state_dir=tmp_path, api_key=None, ray_cluster_cpus=48.0, **RAY)
    body = capacity(settings, active_runs=0, served_models=1)
    assert body.hosting == "ray" and body.cpus == 48
    assert body.suggested_concurrent_runs == 8  # 47 fit; max_live_runs caps it
