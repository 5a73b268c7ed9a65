"""Loading models by name."""

from __future__ import annotations

import pytest
import torch

from trainer.config import ModelConfig
from trainer.errors import ModelNotAvailable
from trainer.model import bundled_gguf_path, load_model, resolve_dtype


def test_the_bundled_gguf_is_found_through_the_installed_wheel():
    path = bundled_gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_tiny_has_the_smollm2_tokenizer_and_a_seeded_init(tiny_loaded):
    assert len(tiny_loaded.tokenizer) == 49152
    again = load_model(ModelConfig(name="tiny", dtype="float32", seed=0))
    other = load_model(ModelConfig(name="tiny", dtype="float32", seed=1))
    w = lambda m: m.model.embed_tokens.weight  # noqa: E731
    assert torch.equal(w(tiny_loaded.model), w(again.model))
    assert not torch.equal(w(tiny_loaded.model), w(other.model))
    assert "<|im_start|>" in tiny_loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tokenize=False
    )


def test_an_unknown_model_name_is_a_clear_error_and_nothing_is_downloaded(tmp_path):
    with pytest.raises(ModelNotAvailable, match="hub downloads are off"):
        load_model(ModelConfig(name="no-such-org/no-such-model"))
    with pytest.raises(ModelNotAvailable):
        load_model(ModelConfig(name=str(tmp_path / "missing-dir")))


def test_a_local_hf_directory_loads(tiny_loaded, tmp_path):
    tiny_loaded.model.save_pretrained(tmp_path)
    tiny_loaded.tokenizer.save_pretrained(tmp_path)
    loaded = load_model(ModelConfig(name=str(tmp_path), dtype="float32"))
    assert torch.equal(loaded.model.lm_head.weight, tiny_loaded.model.lm_head.weight)


def test_dtype_auto_resolves_to_a_real_dtype():
    assert resolve_dtype("auto", "cpu") in (torch.float32, torch.bfloat16)
    assert resolve_dtype("float32", "cpu") is torch.float32


@pytest.mark.slow
def test_models_loaded_from_several_threads_at_once_all_get_their_weights(tiny_loaded, tmp_path):
    # a gateway reloads two ended runs' policies at once when both are evaluated together;
    # transformers' loading state is process-wide, and unserialised loads left "meta" weights
    import threading

    tiny_loaded.model.save_pretrained(tmp_path)
    tiny_loaded.tokenizer.save_pretrained(tmp_path)
    expected = {k: v.clone() for k, v in tiny_loaded.model.state_dict().items()}
    for _ in range(3):
        loaded, errors = [], []

        def load(loaded: list = loaded, errors: list = errors) -> None:
            try:
                config = ModelConfig(name=str(tmp_path), dtype="float32")
                loaded.append(load_model(config).model)
            except Exception as error:  # noqa: BLE001 - the test reports any failure
                errors.append(repr(error))

        threads = [threading.Thread(target=load) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and len(loaded) == 3
        for model in loaded:
            state = model.state_dict()
            assert not any(p.is_meta for p in model.parameters())
            assert all(torch.equal(state[k], v) for k, v in expected.items())
