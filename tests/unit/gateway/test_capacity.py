"""`GET /capacity`: its shape, that it needs no key, the runs it counts, and the rule."""

from __future__ import annotations

import pytest

from gateway.http.capacity import suggest_concurrent_runs, usable_cpus
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
