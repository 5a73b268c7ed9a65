"""Which trainer backends `gateway serve` was asked for, and whether this machine has them.

Owns: `check_backends(settings)`, run by the serve command before anything starts (before
a model loads), which turns every backend request this machine cannot honour into a
`BackendUnavailable` with a one-line message naming the fix: `--engine vllm` without vLLM
or without a CUDA device, `--ray` without Ray or without a cluster that answers,
`--optimizer deepspeed` without DeepSpeed, `--zero` without DeepSpeed. A request that
passes them is honoured, never silently replaced by the torch backends.

The probes (`BackendProbes`) are plain functions, looked up at call time through the
module-level `probes`, so tests swap them to play "installed but no GPU" and the like.
Must not import torch, vllm, ray or deepspeed at module import: `torch` is imported by
the CUDA probe only, and only when `--engine vllm` finds vLLM installed.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import GatewayError
from gateway.settings import GatewaySettings

RAY_PROBE_TIMEOUT_S = 2.0


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


@dataclass
class BackendProbes:
    module_installed: Callable[[str], bool] = module_installed
    cuda_available: Callable[[], bool] = cuda_available
    tcp_answers: Callable[[str, int, float], bool] = tcp_answers
    local_ray_address: Callable[[], str | None] = local_ray_address


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


def check_backends(settings: GatewaySettings) -> None:
    """Raise `BackendUnavailable` (one line, naming the fix) unless every backend the
    settings ask for can start here; the defaults (torch engine, in-process, torch
    optimizer) always can. Cheap flag mistakes come first, then each backend's probes."""
    _check_flags(settings)
    _check_engine(settings, probes)
    _check_ray(settings, probes)
    _check_optimizer(settings, probes)
