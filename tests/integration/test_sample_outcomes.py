"""Every sample row says what the real trainer did with it, and the run's counters agree.

The gateway's own app on the real `TorchPolicyFactory` (the `tiny` model): one batch mixes
every reason the trainer drops a sample for — a zero-variance group, a stale sample, a
call longer than `max_sequence_tokens`, and rows that a damaged (or older) database holds:
an all-zero loss mask, a logprob count that is not the completion's, an empty completion,
a token id outside the vocabulary — beside samples that train. The damaged rows reach the
trainer the way any persisted row does: the gateway restarts and rebuilds its buffer from
the database. Then each `sample` row's status and drop reason, the run's counters
(`GET /runs/r`) and the step's `samples/*` metrics must tell the same story; and a later
batch that trains nothing is counted in `batches_dropped` with its rows dropped alike.
Run with the policies in this process and as Ray actors (the outcomes cross the actor
boundary; the Ray case skips, saying why, where Ray is missing).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from experiments_db import crud
from experiments_db.db import dispose, make_engine, session_scope
from experiments_db.models import SampleRow
from gateway.http.app import make_app
from gateway.recording.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings
from tests.fakes import fake_served_model

pytestmark = pytest.mark.slow

MAX_SEQUENCE_TOKENS = 100
LONG_PROMPT = " ".join(f"word{i}" for i in range(120))  # far over MAX_SEQUENCE_TOKENS
RUN = {
    "name": "r",
    "policies": {"policy": {"base_model": "tiny"}},
    "group_size": 2,
    "batch_groups": 1,
    "max_staleness": 0,
    "merge": "timeline",
    "max_sequence_tokens": MAX_SEQUENCE_TOKENS,
    "checkpoint_every": 1,
    "group_timeout_s": 3600,
}


def tiny_policies(hosting: str, ray_address: str | None = None) -> Any:
    """A `PolicyFactory` of `tiny` policies, float32 throughout: in this process, or each
    in a Ray actor (`trainer.hosting.PolicyHost`, as `gateway serve --ray` places them)."""
    from trainer.config import EngineConfig

    options = {"engine_dtype": "float32", "compute_dtype": "float32"}
    engine = EngineConfig(max_batch=8, initial_cache_tokens=64)
    if hosting == "ray":
        from gateway.serve.ray_hosting import RayPolicyFactory
        from trainer.hosting import PolicyHost

        return RayPolicyFactory(
            actor_class=PolicyHost, factory_kwargs=options | {"engine_config": engine}
        )
    from trainer.policy import TorchPolicyFactory

    return TorchPolicyFactory(engine, **options)


@pytest.fixture(params=["in-process", "ray"])
def policies(request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """Builds the policy factory of each gateway the test starts."""
    if request.param == "in-process":
        yield lambda: tiny_policies("in-process")
        return
    import ray

    cluster = request.getfixturevalue("ray_cluster")
    ray.init(address=cluster.address, namespace="swarmrl", logging_level=logging.WARNING)
    try:
        yield lambda: tiny_policies("ray")
    finally:
        ray.shutdown()


def start_gateway(settings: GatewaySettings, factory: Any) -> TestClient:
    app = make_app(
        [fake_served_model("fake-model")],
        EpisodeRecorder.from_settings(settings),
        settings,
        policy_factory=factory,
    )
    client = TestClient(app)
    client.__enter__()
    return client


def eventually(predicate: Callable[[], object], timeout_s: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"still false after {timeout_s} s"
        time.sleep(0.05)


class Player:
    """Episodes of run `r` played through the HTTP API; each call's length is kept."""

    def __init__(self, client: TestClient):
        self.client = client
        self.lengths: dict[tuple[str, int], int] = {}  # (episode, call) -> prompt + completion

    def open(self, group_id: str) -> dict:
        response = self.client.post(
            "/swarm/episodes", json={"run": "r", "task_id": group_id, "group_id": group_id}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def chat(self, episode: dict, content: str = "hi") -> None:
        response = self.client.post(
            "/v1/chat/completions",
            headers={"Authorization": f"Bearer {episode['api_key']}"},
            json={
                "model": "r/policy",
                "messages": [{"role": "user", "content": content}],
                "max_tokens": 4,
            },
        )
        assert response.status_code == 200, response.text
        usage = response.json()["usage"]
        calls = sum(1 for key in self.lengths if key[0] == episode["episode_id"])
        self.lengths[(episode["episode_id"], calls)] = usage["total_tokens"]

    def finish(self, episode: dict, reward: float) -> None:
        url = f"/swarm/episodes/{episode['episode_id']}/finish"
        response = self.client.post(url, json={"reward": reward})
        assert response.status_code == 200, response.text

    def play(self, group_id: str, reward: float, *contents: str) -> dict:
        episode = self.open(group_id)
        for content in contents or ("hi",):
            self.chat(episode, content)
        self.finish(episode, reward)
        return episode


def state(client: TestClient) -> dict:
    response = client.get("/runs/r")
    assert response.status_code == 200, response.text
    return response.json()


def sample_rows(url: str) -> list[SampleRow]:
    engine = make_engine(url)
    try:
        with session_scope(engine) as session:
            return crud.list_samples(session, run_id="r")
    finally:
        dispose(engine)


def damage(url: str, episode_id: str, call_index: int, **values) -> None:
    """Rewrite one persisted sample row, as a damaged or older database would hold it."""
    engine = make_engine(url)
    try:
        with session_scope(engine) as session:
            (row,) = [
                r
                for r in crud.list_samples(session, episode_id=episode_id)
                if r.call_index == call_index
            ]
            for name, value in values.items():
                setattr(row, name, value)
            session.add(row)
    finally:
        dispose(engine)


def test_every_sample_row_records_the_trainers_outcome_and_the_counters_agree(
    tmp_path: Path, policies: Callable[[], Any]
):
    settings = GatewaySettings(
        state_dir=tmp_path / "gateway", api_key=None, allowed_hosts=["testserver"]
    )
    url = settings.resolved_database_url
    first = start_gateway(settings, policies())
    try:
        player = Player(first)
        assert first.post("/runs", json=RUN).status_code == 201
        # sampled at version 0, trained at version 1 with max_staleness 0: stale
        stale = player.play("stale", 1.0)
        player.play("warmup", 1.0)
        player.play("warmup", 0.0)
        eventually(lambda: state(first)["step"] == 1)
        eventually(lambda: [c["step"] for c in first.get("/runs/r/checkpoints").json()] == [1])
        patched = first.patch("/runs/r", json={"batch_groups": 5})
        assert patched.status_code == 200, patched.text
        fresh_after_stale = player.play("stale", 0.0)
        flat = [player.play("flat", 0.5), player.play("flat", 0.5)]
        too_long = player.play("long", 1.0, LONG_PROMPT)
        short = player.play("long", 0.0)
        damaged = player.play("damaged", 1.0, "a", "b", "c")
        intact = player.play("damaged", 0.0, "d", "e")
        assert state(first)["step"] == 1  # 4 complete groups: the 5th comes after the restart
    finally:
        first.__exit__(None, None, None)

    long_call = player.lengths[(too_long["episode_id"], 0)]
    others = [n for key, n in player.lengths.items() if key != (too_long["episode_id"], 0)]
    assert max(others) <= MAX_SEQUENCE_TOKENS < long_call, (others, long_call)
    rows = {(r.episode_id, r.call_index): r for r in sample_rows(url)}
    n = [len(rows[(damaged["episode_id"], i)].completion_token_ids) for i in range(3)]
    damage(url, damaged["episode_id"], 0, loss_mask=[0] * n[0])
    damage(url, damaged["episode_id"], 1, behaviour_logprobs=[0.0] * (n[1] + 1))
    damage(url, damaged["episode_id"], 2, completion_token_ids=[10**6] * n[2])
    damage(url, intact["episode_id"], 1, completion_token_ids=[], behaviour_logprobs=[])

    second = start_gateway(settings, policies())
    try:
        player.client = second
        assert (state(second)["status"], state(second)["step"]) == ("running", 1)
        fresh = [player.play("fresh", 1.0), player.play("fresh", 0.0)]
        eventually(lambda: state(second)["step"] == 2)
        run = state(second)
        metrics = second.get("/runs/r/metrics", params={"since": 1}).json()

        expected = {
            (stale["episode_id"], 0): "stale",
            (fresh_after_stale["episode_id"], 0): None,
            (flat[0]["episode_id"], 0): "zero_variance",
            (flat[1]["episode_id"], 0): "zero_variance",
            (too_long["episode_id"], 0): "too_long",
            (short["episode_id"], 0): None,
            (damaged["episode_id"], 0): "no_trained_tokens",
            (damaged["episode_id"], 1): "malformed",  # logprob count ≠ completion length
            (damaged["episode_id"], 2): "malformed",  # a token id outside the vocabulary
            (intact["episode_id"], 0): None,
            # an empty completion: the trainer's first check calls it malformed
            (intact["episode_id"], 1): "malformed",
            (fresh[0]["episode_id"], 0): None,
            (fresh[1]["episode_id"], 0): None,
        }
        rows = {(r.episode_id, r.call_index): r for r in sample_rows(url)}
        at_step_2 = {key: row for key, row in rows.items() if row.step_trained == 2}
        assert {key: row.drop_reason for key, row in at_step_2.items()} == expected
        for row in at_step_2.values():
            assert row.status == ("trained" if row.drop_reason is None else "dropped"), row

        # the counters (2 samples trained at step 1) and the step's metrics agree with the rows
        statuses = Counter(row.status for row in rows.values())
        assert statuses == {"trained": 2 + 5, "dropped": 8}
        assert (run["samples_trained"], run["samples_dropped"], run["samples_buffered"]) == (
            statuses["trained"],
            statuses["dropped"],
            0,
        )
        step_2 = {p["name"]: p["value"] for p in metrics if p["step"] == 2 and p["policy"]}
        reasons = Counter(row.drop_reason for row in at_step_2.values() if row.drop_reason)
        assert {
            name.removeprefix("samples/dropped/"): int(value)
            for name, value in step_2.items()
            if name.startswith("samples/dropped/")
        } == reasons
        assert step_2["samples/trained"] == 5

        # a batch that trains nothing: no step, its rows dropped as the trainer said
        assert second.patch("/runs/r", json={"batch_groups": 1}).status_code == 200
        long_group = [player.play("long-2", r, LONG_PROMPT) for r in (1.0, 0.0)]
        eventually(lambda: state(second)["batches_dropped"] == {"too_long": 1})
        run = state(second)
        assert (run["step"], run["samples_dropped"]) == (2, 8 + 2)
        rows = {(r.episode_id, r.call_index): r for r in sample_rows(url)}
        assert [
            (rows[(e["episode_id"], 0)].status, rows[(e["episode_id"], 0)].drop_reason)
            for e in long_group
        ] == [("dropped", "too_long")] * 2
        statuses = Counter(row.status for row in rows.values())
        assert (run["samples_trained"], run["samples_dropped"]) == (
            statuses["trained"],
            statuses["dropped"],
        )
    finally:
        second.__exit__(None, None, None)
