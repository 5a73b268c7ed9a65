"""An ended run frees its policy's engine, yet its policy still answers by model name with
the trained weights (issue 14, F11; `gateway.runs.ended_policies`).

The pool is tested on stand-in engines (LRU bound, leases, failed loads); the gateway tests
train a tiny random Llama for real (float32 throughout, so the reloaded weights answer
exactly what the engine answered before the end).
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest

from gateway.runs.ended_policies import EndedPolicyPool, EndedTrainer, ReloadingEngine
from tests.fakes import CharTokenizer, EchoEngine
from tests.unit.gateway.conftest import (
    bearer,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)
from trainer.config import EngineConfig
from trainer.types import SamplingParams

# -- the pool, on stand-in engines -----------------------------------------------------------


class Loads:
    def __init__(self, fail: bool = False):
        self.sources: list[str] = []
        self.engines: list[EchoEngine] = []
        self.fail = fail

    async def __call__(self, source, version, tokenizer):
        self.sources.append(source)
        if self.fail:
            raise FileNotFoundError(source)
        engine = EchoEngine(tokenizer)
        engine.shut = False
        engine.shutdown = lambda e=engine: setattr(e, "shut", True)
        self.engines.append(engine)
        return engine


def reloading(pool: EndedPolicyPool, name: str) -> ReloadingEngine:
    tokenizer = CharTokenizer()
    return ReloadingEngine(
        pool, name, source=f"/ckpt/{name}", version=3, max_context=64, tokenizer=tokenizer
    )


async def ask(engine: ReloadingEngine) -> str:
    completion = await engine.generate([1, 2, 3], SamplingParams(max_tokens=2))
    return completion.text


@pytest.mark.slow
def test_the_pool_keeps_the_most_recently_used_engines_and_unloads_the_rest():
    async def scenario():
        loads = Loads()
        pool = EndedPolicyPool(loads, resident=1)
        a, b = reloading(pool, "a/p"), reloading(pool, "b/p")
        await ask(a)
        await ask(a)  # resident: no second load
        assert loads.sources == ["/ckpt/a/p"] and pool.resident_names() == ["a/p"]
        await ask(b)  # loads b, unloads a (idle)
        await asyncio.sleep(0.05)
        assert pool.resident_names() == ["b/p"]
        assert loads.engines[0].shut and not loads.engines[1].shut
        await ask(a)  # a again: reloaded from its source
        assert loads.sources == ["/ckpt/a/p", "/ckpt/b/p", "/ckpt/a/p"] and pool.loads == 3
        assert a.version == 3 and a.max_context == 64
        await pool.close()
        assert all(engine.shut for engine in loads.engines)

    asyncio.run(scenario())


@pytest.mark.slow
def test_an_evaluations_concurrent_requests_share_one_load():
    """Held-out evaluation sends 8 requests at once to a policy that is not resident: one
    load from disk serves them all (issue 19: no reload per request)."""

    async def scenario():
        loads = Loads()
        pool = EndedPolicyPool(loads, resident=1)
        a = reloading(pool, "a/p")
        answers = await asyncio.gather(*(ask(a) for _ in range(8)))
        assert len(answers) == 8 and loads.sources == ["/ckpt/a/p"] and pool.loads == 1
        await asyncio.gather(*(ask(a) for _ in range(8)))  # resident now: no load
        assert pool.loads == 1 and pool.resident_names() == ["a/p"]
        await pool.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_an_engine_in_use_is_not_unloaded_until_its_request_ends():
    async def scenario():
        loads = Loads()
        pool = EndedPolicyPool(loads, resident=1)
        a, b = reloading(pool, "a/p"), reloading(pool, "b/p")
        stream = a.stream([1, 2], SamplingParams(max_tokens=3))
        await anext(stream)  # a's request holds its lease
        await ask(b)  # loaded beside a (busy), unloaded once idle: the bound is 1
        await asyncio.sleep(0.05)
        assert pool.resident_names() == ["a/p"] and loads.engines[1].shut
        assert not loads.engines[0].shut
        async for _ in stream:
            pass
        assert pool.resident_names() == ["a/p"]
        await pool.close()

    asyncio.run(scenario())


def test_resident_zero_loads_per_request_and_a_failed_load_is_tried_again():
    async def scenario():
        loads = Loads()
        pool = EndedPolicyPool(loads, resident=0)
        a = reloading(pool, "a/p")
        await ask(a)
        await asyncio.sleep(0.05)
        assert pool.resident_names() == [] and loads.engines[0].shut
        failing = EndedPolicyPool(Loads(fail=True), resident=1)
        gone = reloading(failing, "gone/p")
        for _ in range(2):
            with pytest.raises(FileNotFoundError):
                await ask(gone)
        assert failing.loads == 2 and failing.resident_names() == []

    asyncio.run(scenario())


def test_an_ended_trainer_trains_and_saves_nothing():
    trainer = EndedTrainer(version=4)
    assert trainer.version == 4 and trainer.released
    with pytest.raises(RuntimeError, match="ended"):
        asyncio.run(trainer.train_step([], None))


# -- a real gateway, a tiny model --------------------------------------------------------------


TINY_RUN = {
    "policies": {"policy": {"base_model": "tiny"}},
    "group_size": 2,
    "batch_groups": 1,
    "max_steps": 5,
    "lr": 0.05,
    "zero_variance_groups": "keep",
}


def train_one_step(client, run: str) -> None:
    for reward in (0.0, 1.0):
        episode = open_episode(client, run, group_id="g1")
        reply = client.post(
            "/v1/chat/completions",
            headers=bearer(episode["api_key"]),
            json={
                "model": episode["model"],
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 6,
            },  # fmt: skip
        )
        assert reply.status_code == 200, reply.text
        assert finish(client, episode, reward=reward).status_code == 200
    eventually(lambda: run_state(client, run)["step"] >= 1, 60)


def greedy(client, model: str) -> tuple[list[str], list[float]]:
    """The tokens and logprobs of a greedy answer (what a held-out evaluation reads)."""
    reply = client.post(
        "/v1/chat/completions",
        json={
            "model": model,
            "messages": [{"role": "user", "content": "2 + 3 ="}],
            "max_tokens": 8,
            "temperature": 0,
            "logprobs": True,
        },  # fmt: skip
    )
    assert reply.status_code == 200, reply.text
    content = reply.json()["choices"][0]["logprobs"]["content"]
    return [t["token"] for t in content], [t["logprob"] for t in content]


def parked(client, model: str) -> bool:
    return isinstance(client.app.state.gateway.models.get(model).engine, ReloadingEngine)


@pytest.mark.slow
def test_an_ended_run_frees_its_engine_and_still_answers_with_its_trained_weights(
    make_client, tiny_factory
):
    client = make_client(policy_factory=tiny_factory, ended_policies_resident=0)
    create_run(client, "trained", **TINY_RUN)
    create_run(client, "untrained", **TINY_RUN)
    train_one_step(client, "trained")
    model = "trained/policy"
    tokens, logprobs = greedy(client, model)
    untrained_tokens, untrained_logprobs = greedy(client, "untrained/policy")
    engine = weakref.ref(client.app.state.gateway.models.get(model).engine)
    weights = weakref.ref(engine().model)

    assert client.post("/runs/trained/stop").status_code == 200
    assert client.post("/runs/untrained/stop").status_code == 200
    eventually(lambda: parked(client, model) and parked(client, "untrained/policy"), 60)

    def released() -> bool:
        gc.collect()
        return engine() is None and weights() is None

    eventually(released, 30)
    pool = client.app.state.gateway.runs._ended
    assert pool.resident_names() == []
    # the stopped run's final weights were exported at the end (it had no checkpoint)
    checkpoints = client.get("/runs/trained/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [1]
    assert client.get("/runs/untrained/checkpoints").json() == []  # never trained: its base

    after_tokens, after_logprobs = greedy(client, model)
    assert after_tokens == tokens
    assert after_logprobs == pytest.approx(logprobs, abs=1e-5)
    assert after_logprobs != pytest.approx(untrained_logprobs, abs=1e-3)  # the step counts
    again_tokens, again_logprobs = greedy(client, "untrained/policy")
    assert (again_tokens, again_logprobs) == (
        untrained_tokens,
        pytest.approx(untrained_logprobs, abs=1e-5),
    )
    assert pool.loads == 2
    state = run_state(client, "trained")
    assert state["status"] == "stopped" and state["policies"]["policy"]["version"] == 1
    assert client.get("/runs/trained/metrics").status_code == 200


@pytest.mark.slow
def test_one_ended_engine_stays_resident_the_most_recently_used(make_client, tiny_factory):
    client = make_client(policy_factory=tiny_factory)  # ended_policies_resident: 1
    for name in ("a", "b"):
        create_run(client, name, **TINY_RUN)
    first = weakref.ref(client.app.state.gateway.models.get("a/policy").engine)
    for name in ("a", "b"):
        assert client.post(f"/runs/{name}/stop").status_code == 200
        eventually(lambda n=name: parked(client, f"{n}/policy"), 60)
    pool = client.app.state.gateway.runs._ended
    assert pool.resident_names() == ["b/policy"] and pool.loads == 0  # b's own engine, adopted
    models = client.app.state.gateway.models
    assert models.get("a/policy").tokenizer is models.get("b/policy").tokenizer  # one kept

    def a_released() -> bool:
        gc.collect()
        return first() is None

    eventually(a_released, 30)
    greedy(client, "a/policy")
    assert pool.resident_names() == ["a/policy"] and pool.loads == 1


@pytest.mark.slow
def test_a_restarted_gateway_serves_its_ended_runs_policies_from_their_final_weights(
    settings, tiny_factory
):
    from fastapi.testclient import TestClient

    from gateway.http.app import make_app
    from gateway.recording.recorder import EpisodeRecorder
    from trainer.config import ModelConfig
    from trainer.engine import TorchEngine
    from trainer.model import load_model
    from trainer.tokenizer import HFChatTokenizer
    from trainer.types import ServedModel

    def gateway() -> tuple[TestClient, TorchEngine]:
        """A gateway on `settings`' state dir serving the tiny model as its base model."""
        loaded = load_model(ModelConfig(name="tiny", dtype="float32"))
        tokenizer = HFChatTokenizer(loaded.tokenizer)
        engine = TorchEngine(loaded.model, tokenizer, EngineConfig(max_batch=8))
        served = ServedModel(name="tiny", tokenizer=tokenizer, engine=engine)
        recorder = EpisodeRecorder.from_settings(settings)
        app = make_app([served], recorder, settings, policy_factory=tiny_factory)
        client = TestClient(app)
        client.__enter__()
        return client, engine

    before, base_engine = gateway()
    try:
        create_run(before, "trained", **TINY_RUN)
        create_run(before, "never", **TINY_RUN)
        train_one_step(before, "trained")
        for name in ("trained", "never"):
            assert before.post(f"/runs/{name}/stop").status_code == 200
            eventually(lambda n=name: parked(before, f"{n}/policy"), 60)
        answers = {name: greedy(before, f"{name}/policy") for name in ("trained", "never")}
    finally:
        before.__exit__(None, None, None)
        base_engine.shutdown()

    after, base_engine = gateway()
    try:
        models = [m["id"] for m in after.get("/v1/models").json()["data"]]
        assert {"trained/policy", "never/policy"} <= set(models)
        assert after.app.state.gateway.runs._ended.loads == 0  # nothing loaded at startup
        for name, (tokens, logprobs) in answers.items():
            again_tokens, again_logprobs = greedy(after, f"{name}/policy")
            assert again_tokens == tokens
            assert again_logprobs == pytest.approx(logprobs, abs=1e-5)
        assert run_state(after, "trained")["policies"]["policy"]["version"] == 1
    finally:
        after.__exit__(None, None, None)
        base_engine.shutdown()


@pytest.mark.slow
def test_deleting_an_ended_runs_final_weights_frees_the_disk_and_stops_serving_it(
    make_client, tiny_factory
):
    # a study keeps within its disk budget by deleting the exports of runs it has evaluated
    client = make_client(policy_factory=tiny_factory)
    create_run(client, "trained", **TINY_RUN)
    create_run(client, "other", **TINY_RUN)
    train_one_step(client, "trained")
    train_one_step(client, "other")
    for name in ("trained", "other"):
        assert client.post(f"/runs/{name}/stop").status_code == 200
    eventually(lambda: parked(client, "trained/policy") and parked(client, "other/policy"), 60)
    other_tokens, _ = greedy(client, "other/policy")
    (checkpoint,) = client.get("/runs/trained/checkpoints").json()
    assert Path(checkpoint["path"]).is_dir()

    assert client.delete("/runs/trained/checkpoints/7").status_code == 404
    assert client.delete("/runs/trained/checkpoints/-1").status_code == 422
    response = client.delete(f"/runs/trained/checkpoints/{checkpoint['step']}")
    assert response.status_code == 204, response.text
    assert not Path(checkpoint["path"]).exists()
    assert client.get("/runs/trained/checkpoints").json() == []
    reply = client.post(
        "/v1/chat/completions",
        json={"model": "trained/policy", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "model_not_found"
    # the run's record and every other run are untouched
    assert run_state(client, "trained")["status"] == "stopped"
    assert greedy(client, "other/policy")[0] == other_tokens
    assert client.delete(f"/runs/trained/checkpoints/{checkpoint['step']}").status_code == 404
