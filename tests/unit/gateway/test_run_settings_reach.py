"""Run settings are declared once (`swarm.protocol.RunSettings`: type, bounds, default), and
every setting an update reads (`trainer.config.TrainSettings`) reaches the trainer: set through
`POST /runs`, changed through `PATCH` unless a live run keeps it, and documented in
docs/api.md. A `TrainSettings` field added without the API or the docs fails here."""

from __future__ import annotations

import json
import math
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from swarm.protocol import FIXED_AT_CREATION, RunCreate, RunPatch, RunSettings
from tests.unit.gateway.conftest import (
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
)
from trainer.config import TrainSettings

API_DOC = Path(__file__).resolve().parents[3] / "docs" / "api.md"
TRAINED = list(TrainSettings.model_fields)
# what an update reads that a live run keeps as it was created (every other one is patchable):
# the algorithm and the token budgets shape every step's batches from the run's start
TRAINED_FIXED_AT_CREATION = {"algorithm", "micro_batch_tokens", "max_sequence_tokens"}


def _non_null(schema: dict[str, Any]) -> dict[str, Any]:
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
    assert len(branches) == 1, schema
    return branches[0]


def _another(schema: dict[str, Any], value: Any) -> Any:
    """A valid value other than `value` (None: any valid value) for a JSON schema with bounds."""
    schema = _non_null(schema)
    if "enum" in schema:
        return next(choice for choice in schema["enum"] if choice != value)
    if schema["type"] == "array":
        values = value if value is not None else [None] * len(schema["prefixItems"])
        return [_another(item, v) for item, v in zip(schema["prefixItems"], values, strict=True)]
    if schema["type"] == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", 2**31) - 1)
        return low if value is None else value + 1 if value < high else value - 1
    assert schema["type"] == "number", schema
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    return (low + high) / 2 if value is None else (value + high) / 2


def another_value(name: str, value: Any) -> Any:
    return _another(RunSettings.model_json_schema()["properties"][name], value)


def steps_of(factory) -> list[tuple[Any, Any]]:
    return factory.trainers["r/policy"].steps


def train_one_step(client, factory, steps: int) -> dict[str, Any]:
    """Play one episode (a group of one) and return the settings the trainer got, as JSON."""
    episode = open_episode(client)
    chat_as(client, episode)
    assert finish(client, episode, 1.0).status_code == 200
    eventually(lambda: len(steps_of(factory)) >= steps)
    _, settings = steps_of(factory)[steps - 1]
    assert isinstance(settings, TrainSettings)
    return settings.model_dump(mode="json")


def test_every_setting_the_trainer_reads_is_a_run_setting_and_patchable_unless_fixed():
    assert set(TRAINED) <= set(RunSettings.model_fields) <= set(RunCreate.model_fields)
    fixed = {name for name in TRAINED if name not in RunPatch.model_fields}
    assert fixed == TRAINED_FIXED_AT_CREATION == FIXED_AT_CREATION & set(TRAINED)
    assert "adam_betas" in RunPatch.model_fields


def test_a_trainer_setting_set_on_create_and_on_patch_reaches_the_next_step(
    trainer_client, factory
):
    created = {name: another_value(name, RunSettings().model_dump(mode="json")[name])
               for name in TRAINED}  # fmt: skip
    created["zero_variance_groups"] = "keep"  # a group of one trains
    body = create_run(trainer_client, group_size=1, batch_groups=1, **created)
    assert {name: body["settings"][name] for name in TRAINED} == created
    assert train_one_step(trainer_client, factory, 1) == created

    patched = {name: another_value(name, created[name])
               for name in TRAINED if name in RunPatch.model_fields}  # fmt: skip
    del patched["zero_variance_groups"]
    response = trainer_client.patch("/runs/r", json=patched)
    assert response.status_code == 200, response.text
    assert {name: response.json()["settings"][name] for name in patched} == patched
    assert train_one_step(trainer_client, factory, 2) == created | patched

    for name in TRAINED_FIXED_AT_CREATION:
        response = trainer_client.patch("/runs/r", json={name: another_value(name, created[name])})
        error = assert_openai_error(response, 422)
        assert error["param"] == name and "cannot change on a live run" in error["message"]


@pytest.mark.parametrize("betas", ["[0.9, 1.0]", "[-0.1, 0.999]", "[0.9, NaN]", "[0.9]"])
def test_adam_betas_out_of_bounds_are_a_422_on_create_and_patch(trainer_client, betas):
    json_body = {"Content-Type": "application/json"}
    text = f'{{"name": "r", "adam_betas": {betas}}}'
    response = trainer_client.post("/runs", content=text, headers=json_body)
    assert assert_openai_error(response, 422)["param"].startswith("adam_betas")
    create_run(trainer_client, "ok")
    text = f'{{"adam_betas": {betas}}}'
    response = trainer_client.patch("/runs/ok", content=text, headers=json_body)
    assert assert_openai_error(response, 422)["param"].startswith("adam_betas")
    assert trainer_client.get("/runs/ok").json()["settings"]["adam_betas"] == [0.9, 0.999]


def test_the_trainer_implements_exactly_the_choices_the_wire_offers():
    declared = typing.get_type_hints(TrainSettings)
    for name in TRAINED:
        wire = _non_null(RunSettings.model_json_schema()["properties"][name])
        if "enum" in wire:
            assert set(typing.get_args(declared[name])) == set(wire["enum"]), name


def test_the_trainer_refuses_a_non_finite_float_whatever_it_is_given():
    settings = RunSettings().model_dump()
    for name in ("lr", "kl_coef", "clip_eps", "max_grad_norm", "weight_decay"):
        with pytest.raises(ValueError):
            TrainSettings.model_validate(settings | {name: math.inf})
    with pytest.raises(ValueError):
        TrainSettings.model_validate(settings | {"adam_betas": (0.9, math.nan)})


def documented_settings() -> dict[str, dict[str, str]]:
    """docs/api.md's "Run settings" table: setting → its cells."""
    section = API_DOC.read_text().split("\n## Run settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        name, default, limits, patch, what = (cell.strip() for cell in row.strip("|").split("|"))
        table[name.strip("`")] = {"default": default, "limits": limits, "patch": patch}
    return table


def test_every_run_setting_is_documented_with_its_default_and_whether_patch_changes_it():
    documented = documented_settings()
    assert set(list(documented)[: len(TRAINED)]) == set(TRAINED)  # "the first thirteen"
    assert set(documented) == set(RunSettings.model_fields)
    defaults = RunSettings().model_dump(mode="json")
    for name, cells in documented.items():
        assert re.fullmatch(r"`.+`", cells["default"]), name
        assert json.loads(cells["default"].strip("`")) == defaults[name], name
        assert cells["patch"] == ("yes" if name in RunPatch.model_fields else "no"), name
        assert cells["limits"], name
