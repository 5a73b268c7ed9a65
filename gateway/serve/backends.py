"""Which trainer backends `gateway serve` was asked for, and whether this machine has them.

Owns: `check_backends(settings)`, run by the serve command before anything starts (before
a model loads), which turns every backend request this machine cannot honour into a
`BackendUnavailable` with a one-line message naming the fix: `--engine vllm` without vLLM
or without a CUDA device, `--ray` without Ray or without a cluster that answers,
`--optimizer deepspeed` without DeepSpeed, `--zero` without DeepSpeed, and a DeepSpeed
update whose model states cannot fit: for each `--model` whose size is known without
loading it (the bundled names, or a Llama/Mistral/Qwen2/Qwen3 `config.json` in a local
directory or the Hugging Face cache), at least `params × (bytes of model states at that
ZeRO stage + 2 for the served bf16 copy)` must fit the memory available to the device
(`MemAvailable` on CPU, the GPU's total on CUDA). The DeepSpeed backend trains in one
process (world size 1), where ZeRO shards nothing: the bytes per parameter are fp32
weights 4 + gradients 4 + AdamW moments 8 = 16 at stage 0, plus ZeRO's own fp32 copy of
the weights (4) at stages 1-3 — a lower bound (activations come on top; ZeRO-3 measured
~2x this on SmolLM2, docs/deepspeed.md), so only a hopeless request is refused. With
`--ray` the models live on the cluster's nodes and this machine's memory says nothing.
A request that passes them is honoured, never silently replaced by the torch backends.

The probes (`BackendProbes`) are plain functions, looked up at call time through the
module-level `probes`, so tests swap them to play "installed but no GPU" and the like.
Must not import torch, vllm, ray or deepspeed at module import: `torch` is imported by
the CUDA probes only, and only when `--engine vllm` finds vLLM installed or a DeepSpeed
update is asked for on a cuda `--device`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import GatewayError
from gateway.settings import GatewaySettings

RAY_PROBE_TIMEOUT_S = 2.0
GiB = 2**30
# bytes per parameter of a full-parameter DeepSpeed update in one process (see above)
ZERO_STATE_BYTES = {0: 16, 1: 20, 2: 20, 3: 20}
SERVED_COPY_BYTES = 2  # the engine's bf16 inference copy, at least
# trainer.model's own names (importing it would import torch): parameters counted once
KNOWN_PARAMETERS = {"tiny": 3_219_776, "smollm2-135m": 134_515_008}


class BackendUnavailable(GatewayError):
    """A backend flag this machine cannot honour (a startup error: never an HTTP answer)."""


def module_installed(name: str) -> bool:
    """Whether `import name` would find the package (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def cuda_available() -> bool:
    import torch  # lazily: only `--engine vllm` with vLLM installed gets here

    return torch.cuda.is_available()


def tcp_answers(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts a TCP connection at host:port within `timeout_s`."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def local_ray_address() -> str | None:
    """The address `ray.init(address="auto")` would use: `$RAY_ADDRESS`, else the cluster
    `ray start --head` last recorded on this machine (`<tmp>/ray/ray_current_cluster`)."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env
    temp_dir = Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir())
    try:
        recorded = (temp_dir / "ray" / "ray_current_cluster").read_text().strip()
    except OSError:
        return None
    return recorded or None


def count_parameters(config: dict) -> int | None:
    """Parameters of a decoder-only Llama-family model from its `config.json`; None for an
    architecture this formula does not describe (MoE, encoder-decoder, ...)."""
    kind = config.get("model_type")
    if kind not in ("llama", "mistral", "qwen2", "qwen3"):
        return None
    try:
        vocab, hidden = int(config["vocab_size"]), int(config["hidden_size"])
        inter, layers = int(config["intermediate_size"]), int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or hidden // heads)
    except (KeyError, TypeError, ValueError):
        return None
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    if kind == "qwen2":  # q/k/v biases
        attention += q + 2 * kv
    elif config.get("attention_bias"):  # q/k/v/o biases
        attention += q + 2 * kv + hidden
    if kind == "qwen3":  # per-head RMSNorm of q and k
        attention += 2 * head_dim
    mlp = 3 * hidden * inter + (2 * inter + hidden if config.get("mlp_bias") else 0)
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings", True) else 2)
    return embeddings + layers * (attention + mlp + 2 * hidden) + hidden


def model_parameters(name: str) -> int | None:
    """How many parameters `--model name` has, without loading it (None: not known)."""
    if name in KNOWN_PARAMETERS:
        return KNOWN_PARAMETERS[name]
    path = Path(name).expanduser() / "config.json"
    if not path.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache  # torch-free
        except ImportError:
            return None
        try:
            cached = try_to_load_from_cache(name, "config.json")
        except ValueError:  # not a hub id either
            return None
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        return count_parameters(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def available_memory(device: str) -> int | None:
    """Bytes the model states may use on `device`: the GPU's total memory on CUDA, else
    the memory the OS says is available (None: unknown)."""
    if device.startswith("cuda"):
        import torch  # lazily: only a DeepSpeed update on a cuda --device gets here

        if not torch.cuda.is_available():
            return None
        index = int(device.partition(":")[2] or 0)
        return int(torch.cuda.get_device_properties(index).total_memory)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@dataclass
class BackendProbes:
    module_installed: Callable[[str], bool] = module_installed
    cuda_available: Callable[[], bool] = cuda_available
    tcp_answers: Callable[[str, int, float], bool] = tcp_answers
    local_ray_address: Callable[[], str | None] = local_ray_address
    model_parameters: Callable[[str], int | None] = model_parameters
    available_memory: Callable[[str], int | None] = available_memory


probes = BackendProbes()


def split_ray_address(address: str) -> tuple[str, int]:
    """`HOST:PORT` or `ray://HOST:PORT` → (host, port); anything else is a user mistake."""
    bare = address.removeprefix("ray://")
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BackendUnavailable(
            f"--ray expects auto or HOST:PORT (e.g. 10.0.0.5:6379), got {address!r}"
        )
    return host.strip("[]"), int(port)


def _check_engine(settings: GatewaySettings, p: BackendProbes) -> None:
    if settings.engine != "vllm":
        return
    if not p.module_installed("vllm"):
        raise BackendUnavailable(
            "vLLM is not installed: pip install 'swarmrl[gpu]' on a CUDA machine"
        )
    if not p.cuda_available():
        raise BackendUnavailable("vLLM needs a CUDA GPU; this machine has none: use --engine torch")


def _check_ray(settings: GatewaySettings, p: BackendProbes) -> None:
    if settings.ray_address is None:
        return
    if not p.module_installed("ray"):
        raise BackendUnavailable(
            "--ray needs Ray, which is not installed: pip install 'swarmrl[cluster]'"
        )
    if settings.ray_address == "auto":
        found = p.local_ray_address()
        if found is None:
            raise BackendUnavailable(
                "--ray auto found no running Ray cluster on this machine: start one with "
                "`ray start --head`, or pass --ray HOST:PORT"
            )
        host, port = split_ray_address(found)
        if not p.tcp_answers(host, port, RAY_PROBE_TIMEOUT_S):
            raise BackendUnavailable(
                f"--ray auto: the Ray cluster recorded on this machine ({found}) does not "
                "answer: start one with `ray start --head`, or pass --ray HOST:PORT"
            )
        return
    host, port = split_ray_address(settings.ray_address)
    if not p.tcp_answers(host, port, RAY_PROBE_TIMEOUT_S):
        raise BackendUnavailable(
            f"--ray {settings.ray_address}: no Ray cluster answers there within "
            f"{RAY_PROBE_TIMEOUT_S:g}s: check the address, or start one on that node with "
            f"`ray start --head --port {port}`"
        )


def _check_flags(settings: GatewaySettings) -> None:
    """Mistakes in the flags themselves, found without probing anything."""
    if settings.zero_stage is not None and settings.optimizer != "deepspeed":
        raise BackendUnavailable(
            "--zero needs --optimizer deepspeed (ZeRO stages are DeepSpeed's): add "
            "--optimizer deepspeed or drop --zero"
        )
    if settings.ray_address not in (None, "auto"):
        split_ray_address(settings.ray_address)


def _check_optimizer(settings: GatewaySettings, p: BackendProbes) -> None:
    if settings.optimizer == "deepspeed" and not p.module_installed("deepspeed"):
        raise BackendUnavailable(
            "DeepSpeed is not installed: pip install --no-build-isolation deepspeed"
        )


def _check_deepspeed_fits(
    settings: GatewaySettings, models: Sequence[str], device: str, p: BackendProbes
) -> None:
    if settings.optimizer != "deepspeed" or settings.ray_address is not None:
        return
    stage = settings.zero_stage or 0
    per_param = ZERO_STATE_BYTES[stage] + SERVED_COPY_BYTES
    sized = [(name, n) for name in models if (n := p.model_parameters(name))]
    if not sized:
        return
    available = p.available_memory(device)
    if available is None:
        return
    for name, params in sized:
        needed = params * per_param
        if needed > available:
            raise BackendUnavailable(
                f"--optimizer deepspeed --zero {stage} cannot fit {name} on {device}: its "
                f"model states alone take at least {needed / GiB:.1f} GiB ({params / 1e6:,.1f}M "
                f"params x {per_param} B: fp32 weights, gradients, AdamW moments"
                f"{', ZeRO fp32 copy' if stage else ''} and the served copy; ZeRO shards nothing "
                f"in one process) and {available / GiB:.1f} GiB is available: use a smaller "
                "--model, a GPU with more memory, or --optimizer torch with LoRA runs"
            )


def check_backends(
    settings: GatewaySettings, *, models: Sequence[str] = (), device: str = "cpu"
) -> None:
    """Raise `BackendUnavailable` (one line, naming the fix) unless every backend the
    settings ask for can start here; the defaults (torch engine, in-process, torch
    optimizer) always can. Cheap flag mistakes come first, then each backend's probes.
    `models` (the `--model` names) and `device` let a DeepSpeed update be sized against
    this machine's memory; without them that check is skipped."""
    _check_flags(settings)
    _check_engine(settings, probes)
    _check_ray(settings, probes)
    _check_optimizer(settings, probes)
    _check_deepspeed_fits(settings, models, device, probes)
