# ruff: noqa: F811 - the gateway fixtures are imported from tests/unit/gateway/conftest
"""F10/F4: a run's checkpoints cannot fill the disk or land outside the state directory.

Retention keeps the newest `keep_checkpoints` plus the best by reward/mean (their rows and
directories go together), only the newest resumable one (the restart point) keeps the
optimizer state and masters, an ended run keeps none; a checkpoint that would not fit
pauses the run (507 on request, nothing written); a policy name that got past the wire
checks cannot direct a write outside the state dir.
Fake policies on the real gateway (the trainer's own checks: tests/unit/trainer)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import (  # noqa: F401 - fixtures
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    factory,
    finish,
    make_client,
    open_episode,
    recorder,
    run_state,
    settings,
    start,
    trainer_client,
)
from trainer.types import OPTIMIZER_FILE, RESUME_FILES


def soon(predicate, timeout_s: float = 30.0):
    """`eventually` with room for a loaded box (training steps run in the background)."""
    return eventually(predicate, timeout_s=timeout_s)


def play(client, reward: float) -> None:
    episode = open_episode(client)
    chat_as(client, episode)  # a sample to train (a batch that trains nothing is no step)
    assert finish(client, episode, reward).status_code == 200


def step_is(client, step: int):
    return lambda: run_state(client)["step"] >= step


def checkpoint_steps(client, run: str = "r") -> list[int]:
    response = client.get(f"/runs/{run}/checkpoints")
    assert response.status_code == 200, response.text
    return [c["step"] for c in response.json()]


def runs_dir(client) -> Path:
    return client.app.state.gateway.settings.runs_dir


ONE_EPISODE_STEPS = {
    "group_size": 1,
    "batch_groups": 1,
    "algorithm": "reinforce",
    "zero_variance_groups": "keep",
}


def test_a_run_keeps_its_newest_checkpoints_and_its_best_and_removes_the_rest(trainer_client):
    create_run(trainer_client, checkpoint_every=1, keep_checkpoints=2, **ONE_EPISODE_STEPS)
    for step, reward in enumerate([0.2, 0.9, 0.1, 0.3, 0.4], start=1):
        play(trainer_client, reward)
        soon(lambda s=step: s in checkpoint_steps(trainer_client))
    soon(lambda: checkpoint_steps(trainer_client) == [2, 4, 5])  # best (0.9), newest 2
    checkpoints = runs_dir(trainer_client) / "r" / "checkpoints"
    # rows go first, then directories and optimizer files: the files follow
    soon(lambda: sorted(p.name for p in checkpoints.iterdir()) == ["step-2", "step-4", "step-5"])
    for name in RESUME_FILES:  # the optimizer state and the float32 masters alike
        soon(
            lambda name=name: (
                [p.parent.parent.name for p in checkpoints.glob(f"*/*/{name}")] == ["step-5"]
            )  # only the one a restart resumes from
        )
    # a single-policy step directory links its policy's files: no link outlives its file
    soon(lambda: not [p for p in checkpoints.glob("*/*") if p.is_symlink() and not p.exists()])


def test_the_gateway_default_retention_applies_when_the_run_sets_none(make_client, factory):
    client = make_client(policy_factory=factory, keep_checkpoints=1)
    create_run(client, checkpoint_every=1, **ONE_EPISODE_STEPS)
    for step, reward in enumerate([0.5, 0.1, 0.2], start=1):
        play(client, reward)
        soon(lambda s=step: s in checkpoint_steps(client))
    soon(lambda: checkpoint_steps(client) == [1, 3])  # best (step 1) and the newest


def test_keep_checkpoints_is_bounded_and_patchable(trainer_client):
    response = trainer_client.post("/runs", json={"name": "bad", "keep_checkpoints": -1})
    assert_openai_error(response, 422)
    create_run(trainer_client)
    response = trainer_client.patch("/runs/r", json={"keep_checkpoints": 3})
    assert response.status_code == 200 and response.json()["settings"]["keep_checkpoints"] == 3
    assert_openai_error(trainer_client.patch("/runs/r", json={"keep_checkpoints": 10**6}), 422)


def test_a_finished_run_writes_an_export_checkpoint_and_keeps_no_optimizer_state(
    trainer_client, factory
):
    create_run(trainer_client, checkpoint_every=1, max_steps=2, **ONE_EPISODE_STEPS)
    play(trainer_client, 1.0)
    soon(lambda: 1 in checkpoint_steps(trainer_client))
    for name in RESUME_FILES:
        assert list(runs_dir(trainer_client).glob(f"r/checkpoints/step-1/*/{name}"))
    play(trainer_client, 0.5)
    soon(lambda: run_state(trainer_client)["status"] == "finished")
    trainer = factory.trainers["r/policy"]
    soon(lambda: trainer.released)  # the training memory went at once
    for name in RESUME_FILES:  # masters are optimizer state: they go with it
        soon(lambda name=name: not list(runs_dir(trainer_client).glob(f"r/**/{name}")))
    assert checkpoint_steps(trainer_client) == [1, 2]
    final = runs_dir(trainer_client) / "r/checkpoints/step-2/policy/trainer_state.json"
    assert json.loads(final.read_text())["resumable"] is False  # weights only, for serving
    body = {"model": "r/policy", "messages": [{"role": "user", "content": "evaluate me"}]}
    assert trainer_client.post("/v1/chat/completions", json=body).status_code == 200
    assert_openai_error(trainer_client.post("/runs/r/checkpoints"), 409)


def test_a_stopped_or_failed_run_frees_its_training_memory_and_keeps_serving(
    trainer_client, factory
):
    create_run(trainer_client, "a")
    create_run(trainer_client, "b", **ONE_EPISODE_STEPS)
    assert trainer_client.post("/runs/a/stop").status_code == 200
    soon(lambda: factory.trainers["a/policy"].released)
    factory.trainers["b/policy"].explode = True
    play_b = open_episode(trainer_client, run="b")
    assert finish(trainer_client, play_b, 1.0).status_code == 200
    soon(lambda: run_state(trainer_client, "b")["status"] == "failed")
    soon(lambda: factory.trainers["b/policy"].released)
    for model in ("a/policy", "b/policy"):
        body = {"model": model, "messages": [{"role": "user", "content": "still here"}]}
        assert trainer_client.post("/v1/chat/completions", json=body).status_code == 200


def test_a_checkpoint_without_disk_space_pauses_the_run_and_writes_nothing(trainer_client, factory):
    create_run(trainer_client, **ONE_EPISODE_STEPS)
    factory.trainers["r/policy"].disk_full = True
    response = trainer_client.post("/runs/r/checkpoints")
    assert_openai_error(response, 507)
    assert "not enough disk space" in response.json()["error"]["message"]
    state = run_state(trainer_client)
    assert state["status"] == "paused" and "free disk space, then resume" in state["error"]
    assert checkpoint_steps(trainer_client) == []
    assert not (runs_dir(trainer_client) / "r" / "checkpoints" / "step-0").exists()
    names = {m["name"] for m in trainer_client.get("/runs/r/metrics").json()}
    assert {"checkpoint/disk_needed_bytes", "checkpoint/disk_free_bytes"} <= names

    factory.trainers["r/policy"].disk_full = False  # disk freed: resume, save again
    resumed = trainer_client.post("/runs/r/resume").json()
    assert resumed["status"] == "running" and resumed["error"] is None
    assert trainer_client.post("/runs/r/checkpoints").status_code == 201


def test_a_periodic_checkpoint_without_disk_space_pauses_the_run_instead_of_failing_it(
    trainer_client, factory
):
    create_run(trainer_client, checkpoint_every=1, **ONE_EPISODE_STEPS)
    factory.trainers["r/policy"].disk_full = True
    play(trainer_client, 1.0)
    soon(lambda: run_state(trainer_client)["status"] == "paused")
    assert run_state(trainer_client)["step"] == 1 and checkpoint_steps(trainer_client) == []


def test_the_final_checkpoint_without_disk_space_pauses_and_resuming_finishes(
    trainer_client, factory
):
    create_run(trainer_client, max_steps=1, **ONE_EPISODE_STEPS)
    factory.trainers["r/policy"].disk_full = True
    play(trainer_client, 1.0)
    soon(lambda: run_state(trainer_client)["status"] == "paused")
    factory.trainers["r/policy"].disk_full = False
    time.sleep(0.5)  # a paused run waits for its resume: no retry loop finishes it meanwhile
    assert run_state(trainer_client)["status"] == "paused"
    assert trainer_client.post("/runs/r/resume").status_code == 200
    soon(lambda: run_state(trainer_client)["status"] == "finished")
    assert checkpoint_steps(trainer_client) == [1]


def test_a_policy_name_that_escapes_the_state_dir_never_gets_a_checkpoint_written(
    trainer_client, factory, tmp_path
):
    """Defence in depth: the name bypasses the wire validation (set on the live run)."""
    create_run(trainer_client)
    run = trainer_client.app.state.gateway.runs.get("r")
    escape = str(tmp_path / "outside")
    for hostile in ("../../../escaped", escape):
        run.policies = {hostile: run.policies.pop(next(iter(run.policies)))}
        run.plans = {hostile: next(iter(run.plans.values()))}
        response = trainer_client.post("/runs/r/checkpoints")
        assert_openai_error(response, 422)
        assert "outside the state directory" in response.json()["error"]["message"] or (
            "single path component" in response.json()["error"]["message"]
        )
    assert factory.trainers["r/policy"].checkpoints == []
    assert not Path(escape).exists()
    assert not list(runs_dir(trainer_client).parent.parent.glob("**/escaped"))


def test_keep_checkpoints_zero_keeps_every_checkpoint_whole_and_the_final_one_resumable(
    trainer_client,
):
    create_run(
        trainer_client, checkpoint_every=1, max_steps=3, keep_checkpoints=0, **ONE_EPISODE_STEPS
    )
    for reward in (0.1, 0.9, 0.5):
        play(trainer_client, reward)
    soon(lambda: run_state(trainer_client)["status"] == "finished")
    soon(lambda: checkpoint_steps(trainer_client) == [1, 2, 3])
    for name in RESUME_FILES:
        assert len(list(runs_dir(trainer_client).glob(f"r/checkpoints/*/policy/{name}"))) == 3


def test_a_restart_after_pruning_resumes_from_the_newest_kept_checkpoint_with_its_optimizer(
    start, settings
):
    before = start(FakePolicyFactory())
    create_run(before, checkpoint_every=1, keep_checkpoints=1, **ONE_EPISODE_STEPS)
    for step, reward in enumerate([0.9, 0.1, 0.2], start=1):
        play(before, reward)
        soon(lambda s=step: s in checkpoint_steps(before))
    soon(lambda: checkpoint_steps(before) == [1, 3])  # the best and the newest
    soon(lambda: not (settings.runs_dir / "r" / "checkpoints" / "step-2").exists())

    after = start(second := FakePolicyFactory())
    newest = settings.runs_dir / "r" / "checkpoints" / "step-3" / "policy"
    assert [call["resume_from"] for call in second.calls] == [str(newest)]
    assert (newest / OPTIMIZER_FILE).exists()
    assert run_state(after)["step"] == 3


def test_a_weights_only_checkpoint_on_a_live_run_leaves_the_restart_point_whole(start, settings):
    before = start(FakePolicyFactory())
    create_run(before, keep_checkpoints=1, **ONE_EPISODE_STEPS)
    play(before, 0.1)
    soon(step_is(before, 1))
    resumable = before.post("/runs/r/checkpoints")
    assert resumable.status_code == 201 and resumable.json()["optimizer"] is True
    play(before, 0.9)  # step 2 is the best and the newest: only the restart point keeps step 1
    soon(step_is(before, 2))
    light = before.post("/runs/r/checkpoints", json={"optimizer": False})
    assert light.status_code == 201 and light.json()["step"] == 2
    assert light.json()["optimizer"] is False
    listed = before.get("/runs/r/checkpoints").json()
    assert [(c["step"], c["optimizer"]) for c in listed] == [(1, True), (2, False)]
    step_1 = settings.runs_dir / "r" / "checkpoints" / "step-1"
    for name in RESUME_FILES:  # the policy's files and the step directory's links to them
        assert (step_1 / "policy" / name).is_file() and (step_1 / name).exists()

    after = start(second := FakePolicyFactory())
    # the newest resumable checkpoint, not the newer weights-only one: it continues exactly
    assert [call["resume_from"] for call in second.calls] == [str(step_1 / "policy")]
    soon(step_is(after, 2))  # step 2's samples were trained again
    assert [c["step"] for c in after.get("/runs/r/checkpoints").json()] == [1, 2]
    # the step-2 checkpoint held what the restart undid: asked for again, it is written again
    trainer = second.trainers["r/policy"]
    assert after.post("/runs/r/checkpoints", json={"optimizer": False}).status_code == 201
    assert trainer.checkpoints == [str(step_1.parent / "step-2" / "policy")]
    assert after.post("/runs/r/checkpoints", json={"optimizer": False}).status_code == 201
    assert len(trainer.checkpoints) == 1  # and then answered as any other
