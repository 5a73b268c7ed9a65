"""Hostile run settings, rewards, names and query ints (issue 14, F3 F4 F8 F9): each is a
422 (or a 429 for the live-run cap) naming the field and its limit, the run and the gateway go on.

Raw JSON bodies carry `1e400` (Python parses it as inf), `NaN` and `Infinity` as they are.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from gateway.recording.recorder import EpisodeRecorder
from swarm.protocol import REWARD_LIMIT, RunPatch, RunSettings
from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import (
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)

JSON = {"Content-Type": "application/json"}
SQL_INT_MAX = 2**63 - 1


def raw(client, method: str, url: str, text: str):
    return client.request(method, url, content=text.encode(), headers=JSON)


# -- F3: run settings are finite and bounded ------------------------------------------------


@pytest.mark.parametrize("field", ["weight_decay", "max_grad_norm", "kl_coef", "lr"])
@pytest.mark.parametrize("value", ["1e400", "-1e400", "NaN", "Infinity"])
def test_a_non_finite_setting_is_a_422_on_patch_and_the_setting_is_unchanged(
    trainer_client, field, value
):
    before = create_run(trainer_client)["settings"][field]
    response = raw(trainer_client, "PATCH", "/runs/r", f'{{"{field}": {value}}}')
    assert assert_openai_error(response, 422)["param"] == field
    state = run_state(trainer_client)
    assert state["settings"][field] == before and state["status"] == "running"


@pytest.mark.parametrize("field", ["weight_decay", "max_grad_norm", "kl_coef", "seed"])
def test_a_non_finite_setting_is_a_422_on_create(trainer_client, field):
    response = raw(trainer_client, "POST", "/runs", f'{{"name": "r", "{field}": 1e400}}')
    assert assert_openai_error(response, 422)["param"] == field
    assert trainer_client.get("/runs/r").status_code == 404


@pytest.mark.parametrize(
    "field, value, limit",
    [
        ("weight_decay", 5.0, "1"),
        ("max_grad_norm", 1e7, "1000000"),
        ("kl_coef", 1e4, "1000"),
        ("max_staleness", 10**10, "1000000000"),
        ("group_timeout_s", 1e9, "604800"),
        ("max_steps", SQL_INT_MAX, "1000000000"),
    ],
)
def test_a_too_large_setting_is_a_422_naming_the_limit(trainer_client, field, value, limit):
    response = trainer_client.post("/runs", json={"name": "r", field: value})
    error = assert_openai_error(response, 422)
    assert error["param"] == field and limit in error["message"]
    create_run(trainer_client, "ok")
    error = assert_openai_error(trainer_client.patch("/runs/ok", json={field: value}), 422)
    assert error["param"] == field and limit in error["message"]


def test_a_too_large_seed_on_create_is_a_422(trainer_client):
    error = assert_openai_error(
        trainer_client.post("/runs", json={"name": "r", "seed": 2**64}), 422
    )
    assert error["param"] == "seed"


@pytest.mark.parametrize("field, value", [("group_size", 0), ("algorithm", "bogus"), ("seed", 3)])
def test_patching_a_setting_fixed_at_creation_is_a_422_saying_it_cannot_change(
    trainer_client, field, value
):
    before = create_run(trainer_client)["settings"]
    error = assert_openai_error(trainer_client.patch("/runs/r", json={field: value}), 422)
    assert error["param"] == field and "cannot change on a live run" in error["message"]
    assert run_state(trainer_client)["settings"] == before


def test_patching_an_unknown_field_is_a_422_listing_the_patchable_ones(trainer_client):
    create_run(trainer_client)
    error = assert_openai_error(trainer_client.patch("/runs/r", json={"learning_rate": 1}), 422)
    assert error["param"] == "learning_rate"
    assert all(name in error["message"] for name in RunPatch.model_fields)


def test_an_unknown_field_on_create_is_a_422_naming_it(trainer_client):
    error = assert_openai_error(trainer_client.post("/runs", json={"name": "r", "lrr": 1}), 422)
    assert error["param"] == "lrr"


def test_every_documented_setting_is_still_accepted_on_create_and_patch(trainer_client):
    settings = RunSettings(task_mix={"m": 1.0}, max_steps=5, checkpoint_every=2).model_dump()
    body = settings | {"name": "r", "policies": {"policy": {}}, "resume_from": None}
    created = create_run(trainer_client, **body)
    assert created["settings"] == RunSettings.model_validate(settings).model_dump(mode="json")
    patch = {
        "lr": 2e-5,
        "weight_decay": 0.1,
        "adam_betas": [0.8, 0.99],
        "max_grad_norm": 1e3,
        "clip_eps": 0.3,
        "kl_coef": 0.05,
        "batch_groups": 2,
        "max_staleness": 2,
        "zero_variance_groups": "keep",
        "scale_rewards": "none",
        "partial_groups": "drop",
        "min_group_size": 3,
        "group_timeout_s": 30.0,
        "merge": "timeline",
        "task_mix": {"m": 1.0, "n": 1.0},
        "task_mix_schedule": {"to": {"m": 1.0}, "steps": 4},
        "max_buffered_groups": 20,
        "max_steps": 9,
        "max_dropped_batches": 7,
        "checkpoint_every": 3,
        "keep_checkpoints": 4,
    }
    assert set(patch) == set(RunPatch.model_fields)
    response = trainer_client.patch("/runs/r", json=patch)
    assert response.status_code == 200, response.text
    assert {k: response.json()["settings"][k] for k in patch} == patch


def _constraints(schema: dict[str, Any]) -> dict[str, Any]:
    """A field's JSON schema without its title/default, the `null` branch of an optional
    field dropped."""
    schema = {k: v for k, v in schema.items() if k not in ("title", "default", "description")}
    branches = [b for b in schema.pop("anyOf", []) if b != {"type": "null"}]
    if len(branches) == 1:
        schema |= branches[0]
    return schema


def test_patch_and_create_declare_the_same_bounds():
    wire = RunSettings.model_json_schema()["properties"]
    patch = RunPatch.model_json_schema()["properties"]
    for name in patch:
        if name in ("task_mix_schedule",):  # a $ref either way
            continue
        assert _constraints(patch[name]) == _constraints(wire[name]), name


# -- F3: rewards and metrics at the wire ----------------------------------------------------


@pytest.mark.parametrize("reward", ["1e160", "-1e7", "1e400", "NaN", "-Infinity"])
def test_a_reward_out_of_bounds_is_a_422_naming_the_limit_and_the_episode_stays_open(
    trainer_client, reward
):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    url = f"/swarm/episodes/{episode['episode_id']}/finish"
    error = assert_openai_error(raw(trainer_client, "POST", url, f'{{"reward": {reward}}}'), 422)
    assert error["param"] == "reward"
    if reward in ("1e160", "-1e7"):
        assert "1000000" in error["message"]
    assert finish(trainer_client, episode, reward=REWARD_LIMIT).status_code == 200


def test_a_per_policy_reward_out_of_bounds_is_a_422_naming_the_policy(trainer_client):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    episode = open_episode(trainer_client)
    response = finish(trainer_client, episode, reward={"a": 1.0, "b": 1e160})
    error = assert_openai_error(response, 422)
    assert error["param"] == "reward.b" and "1000000" in error["message"]
    assert finish(trainer_client, episode, reward={"a": 1.0, "b": 0.0}).status_code == 200


@pytest.mark.parametrize("metric", ["NaN", "1e400", "1e13"])
def test_an_episode_metric_out_of_bounds_is_a_422_naming_it(trainer_client, metric):
    create_run(trainer_client)
    episode = open_episode(trainer_client)
    url = f"/swarm/episodes/{episode['episode_id']}/finish"
    body = f'{{"reward": 1, "metrics": {{"turns": {metric}}}}}'
    assert assert_openai_error(raw(trainer_client, "POST", url, body), 422)["param"] == (
        "metrics.turns"
    )
    assert finish(trainer_client, episode, metrics={"turns": 3.0}).status_code == 200


def test_extreme_but_allowed_rewards_train_without_failing_the_run(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for reward in (REWARD_LIMIT, -REWARD_LIMIT):
        episode = open_episode(trainer_client, group_id="g")
        chat_as(trainer_client, episode)  # a sample to train (no sample trained: no step)
        assert finish(trainer_client, episode, reward=reward).status_code == 200
    state = eventually(lambda: (s := run_state(trainer_client))["step"] == 1 and s)
    assert state["status"] == "running"


# -- F3: a non-finite metric never fails a run ----------------------------------------------


def test_a_nan_metric_from_the_trainer_is_left_out_and_counted_and_the_run_goes_on(
    trainer_client, factory
):
    create_run(trainer_client, group_size=2, batch_groups=1)
    factory.trainers["r/policy"].extra_metrics = {"loss": math.nan, "kl": math.inf}
    for step in (1, 2):
        for reward in (0.0, 1.0):
            episode = open_episode(trainer_client, group_id=f"g{step}")
            chat_as(trainer_client, episode)  # a sample to train (no sample trained: no step)
            assert finish(trainer_client, episode, reward=reward).status_code == 200
        eventually(lambda step=step: run_state(trainer_client)["step"] == step)
    assert run_state(trainer_client)["status"] == "running"
    points = trainer_client.get("/runs/r/metrics").json()
    names = {p["name"] for p in points}
    assert "loss" not in names and "kl" not in names and "grad_norm" in names
    counted = [p["value"] for p in points if p["name"] == "metrics/non_finite"]
    assert counted == [2.0, 2.0]


# -- F4: policy, client, task names ---------------------------------------------------------


@pytest.mark.parametrize("name", ["/tmp/x", "../../x", "", "a\nb", "a/b", ".hidden", "x" * 65])
def test_a_policy_name_that_is_not_a_plain_name_is_a_422_naming_the_key(
    trainer_client, factory, name
):
    response = trainer_client.post("/runs", json={"name": "r", "policies": {name: {}}})
    error = assert_openai_error(response, 422)
    assert error["param"].startswith("policies")
    assert factory.calls == []
    assert trainer_client.get("/runs/r").status_code == 404


@pytest.mark.parametrize("name", ["bad\x00name", "tab\tname", "esc\x1b[31m", "del\x7f"])
def test_a_client_name_with_control_characters_is_a_422(trainer_client, name):
    response = trainer_client.post("/swarm/clients", json={"name": name})
    error = assert_openai_error(response, 422)
    assert error["param"] == "name" and "control characters" in error["message"]


@pytest.mark.parametrize(
    "body, param",
    [
        ({"name": "c", "labels": {f"k{i}": "v" for i in range(65)}}, "labels"),
        ({"name": "c", "labels": {"k": "v" * 257}}, "labels.k"),
        ({"name": "c", "labels": {"": "v"}}, "labels"),
    ],
)
def test_client_labels_are_bounded(trainer_client, body, param):
    response = trainer_client.post("/swarm/clients", json=body)
    assert assert_openai_error(response, 422)["param"].startswith(param)


@pytest.mark.parametrize("field", ["task_id", "task_family", "group_id", "run"])
def test_an_over_long_episode_field_is_a_422_naming_it(trainer_client, field):
    create_run(trainer_client)
    body = {"run": "r", "task_id": "t", field: "x" * 201}
    response = trainer_client.post("/swarm/episodes", json=body)
    assert assert_openai_error(response, 422)["param"] == field


# -- F8: query ints fit the database -------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        f"metrics?since={2**63}",
        f"metrics?since={-(2**63)}",
        f"episodes?offset={2**63}",
        f"episodes?limit={2**63}",
        "episodes?limit=1001",
        "episodes?offset=-1",
    ],
)
def test_an_out_of_range_query_int_is_a_422_not_a_500(trainer_client, query):
    create_run(trainer_client)
    response = trainer_client.get(f"/runs/r/{query}")
    assert_openai_error(response, 422)


@pytest.mark.parametrize(
    "query", [f"metrics?since={SQL_INT_MAX}", f"episodes?offset={SQL_INT_MAX}"]
)
def test_the_largest_database_int_is_accepted(trainer_client, query):
    create_run(trainer_client)
    response = trainer_client.get(f"/runs/r/{query}")
    assert response.status_code == 200 and response.json() == []


# -- F9: a cap on live runs -----------------------------------------------------------------


def too_many_live_runs(response) -> dict:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "too_many_live_runs" and error["retry_after"] > 0
    assert int(response.headers["Retry-After"]) > 0
    return error


def test_creating_more_live_runs_than_the_cap_is_a_429_saying_how_to_stop_one(make_client, factory):
    client = make_client(policy_factory=factory, max_live_runs=2)
    create_run(client, "a")
    create_run(client, "b")
    error = too_many_live_runs(client.post("/runs", json={"name": "c"}))
    assert "2 live runs" in error["message"] and "/stop" in error["message"]
    assert client.get("/runs/c").status_code == 404
    assert client.post("/runs/a/stop").status_code == 200
    create_run(client, "c")  # a stopped run no longer counts


def test_the_default_cap_on_live_runs_is_eight(trainer_client):
    for i in range(8):
        create_run(trainer_client, f"r{i}")
    too_many_live_runs(trainer_client.post("/runs", json={"name": "r8"}))


def test_a_live_run_stored_with_settings_out_of_todays_bounds_is_listed_failed_on_restart(
    start, settings
):
    before = start(FakePolicyFactory())
    create_run(before, "old")
    create_run(before, "fine")
    with EpisodeRecorder.from_settings(settings).db.begin() as connection:
        connection.exec_driver_sql(
            "UPDATE run SET settings = ? WHERE id = 'old'",
            (json.dumps(RunSettings().model_dump() | {"weight_decay": 5.0}),),
        )

    after = start(FakePolicyFactory())

    old = run_state(after, "old")
    assert old["status"] == "failed" and "weight_decay" in old["error"]
    assert run_state(after, "fine")["status"] == "running"
