"""Bad run, client and finish input is a clear 4xx naming the field: task_mix weights and
family names, partial-group settings, over-long client fields, rewards that do not match
the run's policies — and a base model the factory cannot load fails the run clearly."""

from __future__ import annotations

import json

import pytest

from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import (
    MODEL,
    assert_openai_error,
    create_run,
    finish,
    open_episode,
    run_state,
)
from trainer.errors import ModelNotAvailable

BAD_TASK_MIXES = [
    {"math": -1.0},
    {"math": 0.0, "code": 0.0},
    {},
    {"": 1.0},
    {"x" * 201: 1.0},
]


def post_json(client, method: str, url: str, body: dict):
    """Send `body` as JSON as it is (NaN and Infinity included)."""
    content = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    return client.request(method, url, content=content, headers=headers)


@pytest.mark.parametrize("mix", BAD_TASK_MIXES)
def test_a_bad_task_mix_is_a_422_naming_task_mix(trainer_client, mix):
    response = trainer_client.post("/runs", json={"name": "r", "task_mix": mix})
    assert assert_openai_error(response, 422)["param"] == "task_mix"
    create_run(trainer_client, "ok")
    response = trainer_client.patch("/runs/ok", json={"task_mix": mix})
    assert assert_openai_error(response, 422)["param"] == "task_mix"
    assert run_state(trainer_client, "ok")["settings"]["task_mix"] is None


@pytest.mark.parametrize("weight", [float("nan"), float("inf")])
def test_a_task_mix_weight_must_be_finite(trainer_client, weight):
    response = post_json(trainer_client, "POST", "/runs", {"name": "r", "task_mix": {"m": weight}})
    error = assert_openai_error(response, 422)
    assert error["param"] == "task_mix" and "'m'" in error["message"]
    create_run(trainer_client, "ok")
    response = post_json(trainer_client, "PATCH", "/runs/ok", {"task_mix": {"m": weight}})
    assert assert_openai_error(response, 422)["param"] == "task_mix"


def test_a_task_mix_of_any_families_with_some_zero_weights_is_accepted(trainer_client):
    mix = {"math": 2.0, "made-up family": 0.0, "f" * 200: 1.0}
    assert create_run(trainer_client, task_mix=mix)["settings"]["task_mix"] == mix
    patched = trainer_client.patch("/runs/r", json={"task_mix": {"code": 1}})
    assert patched.json()["settings"]["task_mix"] == {"code": 1.0}


@pytest.mark.slow
@pytest.mark.parametrize(
    "fields, param",
    [
        ({"group_size": 4, "min_group_size": 5}, "min_group_size"),
        ({"min_group_size": 0}, "min_group_size"),
        ({"group_timeout_s": 0}, "group_timeout_s"),
        ({"partial_groups": "keep"}, "partial_groups"),
    ],
)
def test_bad_partial_group_settings_are_422s_naming_the_field(trainer_client, fields, param):
    response = trainer_client.post("/runs", json={"name": "r", **fields})
    assert assert_openai_error(response, 422)["param"] == param


def test_min_group_size_is_checked_against_group_size_on_patch_too(trainer_client):
    create_run(trainer_client, group_size=4, min_group_size=2)
    error = assert_openai_error(trainer_client.patch("/runs/r", json={"min_group_size": 5}), 422)
    assert error["param"] == "min_group_size" and "group_size (4)" in error["message"]
    assert run_state(trainer_client)["settings"]["min_group_size"] == 2
    patched = trainer_client.patch("/runs/r", json={"min_group_size": 4, "group_timeout_s": 1})
    assert patched.status_code == 200, patched.text
    assert patched.json()["settings"]["min_group_size"] == 4


def test_a_run_with_groups_of_one_keeps_the_default_min_group_size(trainer_client):
    run = create_run(trainer_client, group_size=1, zero_variance_groups="keep")
    assert run["settings"]["min_group_size"] == 2  # groups of one are never partial
    assert trainer_client.patch("/runs/r", json={"lr": 2e-5}).status_code == 200


def test_an_over_long_code_version_is_a_422_naming_it(trainer_client):
    body = {"name": "worker", "code_version": "v" * 257}
    response = trainer_client.post("/swarm/clients", json=body)
    assert assert_openai_error(response, 422)["param"] == "code_version"
    body["code_version"] = "v" * 256
    assert trainer_client.post("/swarm/clients", json=body).status_code == 200


def test_an_over_long_client_name_is_a_422_naming_it(trainer_client):
    response = trainer_client.post("/swarm/clients", json={"name": "n" * 201})
    assert assert_openai_error(response, 422)["param"] == "name"


@pytest.mark.parametrize("reward", [{"a": 1.0}, {"a": 1.0, "b": 0.0, "c": 1.0}])
def test_a_reward_dict_must_name_exactly_the_runs_policies(trainer_client, reward):
    create_run(trainer_client, policies={"a": {}, "b": {}})
    episode = open_episode(trainer_client)
    error = assert_openai_error(finish(trainer_client, episode, reward), 422)
    assert error["param"] == "reward"
    assert ("c" if "c" in reward else "b") in error["message"]


class LoadsServedModelsOnly(FakePolicyFactory):
    """Like the torch factory: a base model it cannot load raises `ModelNotAvailable`."""

    async def create(self, **kwargs):
        if kwargs["base_model"] != MODEL:
            raise ModelNotAvailable(f"cannot load model '{kwargs['base_model']}': not found")
        return await super().create(**kwargs)


def test_an_unknown_base_model_fails_the_run_naming_the_policy_and_model(make_client):
    client = make_client(policy_factory=LoadsServedModelsOnly())
    policies = {"good": {}, "bad": {"base_model": "no-such/model"}}
    run = create_run(client, policies=policies)
    assert run["status"] == "failed"
    assert run["error"].startswith("policy 'bad' (base_model 'no-such/model'): ModelNotAvailable")
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == [MODEL]
    response = client.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert_openai_error(response, 409, "run_not_accepting")
