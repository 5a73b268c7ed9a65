"""`POST /runs/{id}/checkpoints` gives checkpoints users can load (issue 20 item 5): the
returned `path` of a single-policy run loads with plain transformers and answers as the
served policy did; `policies` names each policy's directory (teams); `{"optimizer": false}`
writes weights only; files are readable by the group; checkpoints written before (no links
in the step directory) still restore.

A real gateway trains the tiny random Llama, float32 throughout (so plain transformers and
the engine compute the same numbers).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.unit.gateway.conftest import assert_openai_error, create_run, eventually, run_state
from tests.unit.gateway.test_ended_policies import TINY_RUN, train_one_step
from trainer.types import MASTER_WEIGHTS_FILE, OPTIMIZER_FILE, SamplingParams

RUN = TINY_RUN | {"max_steps": 100}  # still live when its checkpoints are asked for
TEAM_RUN = RUN | {"policies": {"solver": {"base_model": "tiny"}, "critic": {"base_model": "tiny"}}}


@pytest.fixture
def usual_umask():
    """The common umask, whatever the test runner's (file modes follow it)."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def checkpoint(client, run: str = "r", **body) -> dict:
    response = client.post(f"/runs/{run}/checkpoints", json=body or None)
    assert response.status_code == 201, response.text
    return response.json()


def served_greedy(client, model: str, prompt: list[int], max_tokens: int = 8) -> list[int]:
    """What the gateway's engine answers greedily for `prompt` (token ids)."""
    engine = client.app.state.gateway.models.get(model).engine
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    return client.portal.call(engine.generate, prompt, params).token_ids


def plain_greedy(path: str, prompt: list[int], max_tokens: int = 8) -> list[int]:
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=max_tokens, do_sample=False, top_p=None,
            top_k=None, temperature=None, pad_token_id=model.config.eos_token_id,
        )  # fmt: skip
    return out[0, len(prompt) :].tolist()


def prompt_of(path: str) -> list[int]:
    tokenizer = AutoTokenizer.from_pretrained(path)
    messages = [{"role": "user", "content": "2 + 3 ="}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow
def test_a_single_policy_runs_checkpoint_path_loads_with_from_pretrained_and_answers_as_served(
    make_client, tiny_factory
):
    client = make_client(policy_factory=tiny_factory)
    create_run(client, "r", **RUN)
    train_one_step(client, "r")
    saved = checkpoint(client)
    path = Path(saved["path"])
    assert path.name == "step-1" and saved["optimizer"] is True
    assert saved["policies"] == {"policy": str(path / "policy")}  # path/<policy> stays
    assert (path / "config.json").is_symlink() and (path / "policy" / "config.json").is_file()

    prompt = prompt_of(saved["path"])  # the tokenizer loads from `path` too
    served = served_greedy(client, "r/policy", prompt)
    assert len(served) == 8
    assert plain_greedy(saved["path"], prompt) == served
    assert plain_greedy(saved["policies"]["policy"], prompt) == served
    assert client.get("/runs/r/checkpoints").json() == [saved]


@pytest.mark.slow
def test_optimizer_false_writes_weights_only_and_a_resumable_request_writes_them_again(
    make_client, tiny_factory
):
    client = make_client(policy_factory=tiny_factory, keep_checkpoints=0)
    create_run(client, "r", **RUN)
    train_one_step(client, "r")
    light = checkpoint(client, optimizer=False)
    policy_dir = Path(light["policies"]["policy"])
    assert light["optimizer"] is False and (policy_dir / "model.safetensors").is_file()
    assert not list(Path(light["path"]).rglob(OPTIMIZER_FILE))
    assert not list(Path(light["path"]).rglob(MASTER_WEIGHTS_FILE))  # float32 training
    light_bytes = directory_bytes(policy_dir)

    # the same step asked for with its optimizer state (as a periodic checkpoint asks):
    # written again, resumable, and bigger by the AdamW moments
    full = checkpoint(client)
    assert full["step"] == light["step"] and full["optimizer"] is True
    optimizer_file = policy_dir / OPTIMIZER_FILE
    assert optimizer_file.is_file() and (Path(full["path"]) / OPTIMIZER_FILE).exists()
    assert light_bytes < directory_bytes(policy_dir) - optimizer_file.stat().st_size / 2
    assert checkpoint(client, optimizer=False) == full  # a lighter request: the one there is


def test_the_checkpoint_request_body_is_validated(trainer_client):
    create_run(trainer_client, "r")
    eventually(lambda: run_state(trainer_client, "r")["status"] == "running")
    for body in ({"optimzer": False}, {"optimizer": "sometimes"}, [False]):
        response = trainer_client.post("/runs/r/checkpoints", json=body)
        assert_openai_error(response, 422)
    assert trainer_client.get("/runs/r/checkpoints").json() == []
    assert trainer_client.post("/runs/r/checkpoints").status_code == 201  # no body: resumable
    (saved,) = trainer_client.get("/runs/r/checkpoints").json()
    assert saved["optimizer"] is True


@pytest.mark.slow
def test_checkpoint_files_are_readable_by_the_group(make_client, tiny_factory, usual_umask):
    client = make_client(policy_factory=tiny_factory)
    create_run(client, "r", **RUN)
    saved = checkpoint(client)
    modes = {
        p.relative_to(saved["path"]): stat.S_IMODE(p.stat().st_mode)
        for p in [Path(saved["path"]), *Path(saved["path"]).rglob("*")]
        if not p.is_symlink()
    }
    assert Path("policy/model.safetensors") in modes and Path("policy/optimizer.pt") in modes
    for relative, mode in modes.items():
        is_dir = (Path(saved["path"]) / relative).is_dir()
        assert mode == (0o755 if is_dir else 0o644), (relative, oct(mode))


@pytest.mark.slow
def test_a_team_runs_checkpoint_names_each_policys_loadable_directory(make_client, tiny_factory):
    client = make_client(policy_factory=tiny_factory)
    create_run(client, "team", **TEAM_RUN)
    saved = checkpoint(client, "team")
    path = Path(saved["path"])
    assert saved["policies"] == {name: str(path / name) for name in ("solver", "critic")}
    assert not (path / "config.json").exists()  # no policy is the team's
    for name, directory in saved["policies"].items():
        prompt = prompt_of(directory)
        assert plain_greedy(directory, prompt) == served_greedy(client, f"team/{name}", prompt)


@pytest.mark.slow
def test_a_checkpoint_written_before_the_links_still_restores_and_lists(start, tiny_factory):
    before = start(tiny_factory)
    create_run(before, "r", **RUN)
    train_one_step(before, "r")
    saved = checkpoint(before)
    step_dir = Path(saved["path"])
    prompt = prompt_of(saved["path"])
    answer = served_greedy(before, "r/policy", prompt)
    # what the code before issue 20 left: step-<n>/<policy>/ and nothing beside it
    for entry in step_dir.iterdir():
        if entry.is_symlink():
            entry.unlink()
    assert [p.name for p in step_dir.iterdir()] == ["policy"]
    (step_dir / "policy").chmod(0o700)
    for file in (step_dir / "policy").iterdir():
        file.chmod(0o600)

    after = start(tiny_factory)
    eventually(lambda: run_state(after, "r")["status"] == "running", 60)
    assert run_state(after, "r")["step"] == 1
    (listed,) = after.get("/runs/r/checkpoints").json()
    assert listed["policies"] == {"policy": str(step_dir / "policy")} and listed["optimizer"]
    assert served_greedy(after, "r/policy", prompt) == answer
    trainer = after.app.state.gateway.runs.get("r").policies["policy"].trainer
    assert trainer.optimizer.state_dict()["state"]  # the AdamW moments came back too
