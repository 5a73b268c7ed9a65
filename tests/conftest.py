"""Session-wide test setup: a private $SWARMRL_HOME, a shared converted-model cache, and
the loaded models (the tiny random one for unit tests, the bundled SmolLM2 where it matters)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# postgres_server / postgres_url / pg_database / db_url: a throwaway PostgreSQL on loopback;
# ray_cluster: a local Ray head (`ray start --head`) on loopback
pytest_plugins = ["tests.postgres", "tests.raycluster"]

# Everything a test writes goes to a throwaway home; converted models are shared across
# runs on this machine (converting the bundled GGUF takes ~15 s) unless CI says otherwise.
os.environ.setdefault("SWARMRL_MODEL_CACHE", str(Path.home() / ".swarmrl" / "models"))
os.environ["SWARMRL_HOME"] = tempfile.mkdtemp(prefix="swarmrl-test-home-")
os.environ.pop("SWARMRL_API_KEY", None)


@pytest.fixture(scope="session")
def tiny_loaded():
    from trainer.config import ModelConfig
    from trainer.model import load_model

    return load_model(ModelConfig(name="tiny", dtype="float32"))


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_loaded):
    from trainer.tokenizer import HFChatTokenizer

    return HFChatTokenizer(tiny_loaded.tokenizer)


@pytest.fixture(scope="session")
def smollm2_loaded():
    from trainer.config import ModelConfig
    from trainer.model import load_model

    return load_model(ModelConfig(name="smollm2-135m", dtype="float32"))
