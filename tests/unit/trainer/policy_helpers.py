"""Shared helpers for the policy-trainer tests: a tiny trainable policy and samples."""

from __future__ import annotations

import asyncio

import torch

from swarm.protocol import RunSettings
from trainer.config import EngineConfig, TrainSettings
from trainer.policy import TorchPolicyFactory
from trainer.types import EpisodeSamples, Group, Policy, Sample

LORA = {"r": 4, "alpha": 8}


def train_settings(**changes) -> TrainSettings:
    """What a step reads from a run created with `changes` (the run settings' defaults and
    bounds are declared once, in `swarm.protocol.RunSettings`)."""
    return TrainSettings.model_validate(RunSettings(**changes), from_attributes=True)


def make_factory() -> TorchPolicyFactory:
    """float32 everywhere so that logprobs compare exactly across copies."""
    return TorchPolicyFactory(
        EngineConfig(max_batch=8, initial_cache_tokens=64),
        engine_dtype="float32",
        compute_dtype="float32",
    )


def make_policy(lora: dict | None = None, resume_from: str | None = None) -> Policy:
    return make_factory().build(
        served_name="run/p", base_model="tiny", lora=lora, seed=0, resume_from=resume_from
    )


def prompt_ids(policy: Policy, text: str = "say banana") -> list[int]:
    return policy.served.tokenizer.render_chat([{"role": "user", "content": text}]).token_ids


def served_logprobs(policy: Policy, prompt: list[int], completion: list[int]) -> list[float]:
    """Per-token logprobs of `completion` under the engine's own (served) copy, computed on
    the engine's thread between decode steps."""
    engine = policy.served.engine

    def score() -> list[float]:
        with torch.no_grad():
            logits = engine.model(torch.tensor([prompt + completion])).logits[0].float()
        lp = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
        return lp.gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()

    return asyncio.run(engine.run_exclusive(score, bump_version=False))


def sample(
    policy: Policy,
    episode: str,
    prompt: list[int],
    completion: list[int],
    version: int | None = None,
    loss_mask: list[int] | None = None,
) -> Sample:
    return Sample(
        episode_id=episode,
        policy="p",
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        behaviour_logprobs=served_logprobs(policy, prompt, completion),
        version=policy.trainer.version if version is None else version,
        loss_mask=loss_mask,
    )


def contrast_group(policy: Policy, prompt: list[int], good: list[int], bad: list[int]) -> Group:
    """One group: `good` rewarded 1, `bad` rewarded 0."""
    return Group(
        "g",
        [
            EpisodeSamples("good", 1.0, [sample(policy, "good", prompt, good)]),
            EpisodeSamples("bad", 0.0, [sample(policy, "bad", prompt, bad)]),
        ],
    )
