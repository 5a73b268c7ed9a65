"""Configuration of one gateway process.

Owns: bind address, where state lives, the admin key, request limits (`RequestLimits`:
how much one OpenAI request may ask for, and how many generations one key may have in
flight), client leases, and
which trainer backends were asked for (engine, Ray, optimizer; `gateway/serve/backends.py`
checks them before anything starts). Built by the
composition root (`gateway/__main__.py`) from CLI flags and the environment (through
`gateway.serve.options.ServeOptions.gateway_settings`); everything else receives a
`GatewaySettings` and never reads the environment itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


def swarmrl_home() -> Path:
    """`$SWARMRL_HOME`, default `~/.swarmrl`: everything a user's machine keeps."""
    return Path(os.environ.get("SWARMRL_HOME") or "~/.swarmrl").expanduser()


def _default_state_dir() -> Path:
    return swarmrl_home() / "gateway"


def _api_key_from_env() -> str | None:
    return os.environ.get("SWARMRL_API_KEY") or None


class RequestLimits(BaseModel):
    """How much one caller may ask of the engines. Beyond a per-request limit the request
    is a 400 naming the field and the limit; beyond the per-key limit a 429 with
    `retry_after` (docs/api.md, "Limits")."""

    max_choices_per_request: int = Field(default=64, ge=1)  # n × prompts
    max_messages_per_request: int = Field(default=1024, ge=1)
    max_stop_chars: int = Field(default=256, ge=1)  # per stop string
    # generations (choices) in flight per bearer key (episode key, admin key, other), or
    # per client address for keyless calls; a GRPO group uses one episode key per episode.
    # Half the engine's default max_batch: a flooding key cannot fill the batch (bench/flood.py)
    max_inflight_per_key: int = Field(default=16, ge=1)
    busy_retry_after_s: float = Field(default=1.0, gt=0)  # 429 retry_after of a busy key


class GatewaySettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(default=8400, ge=0, le=65535)
    state_dir: Path = Field(default_factory=_default_state_dir)
    api_key: str | None = Field(default_factory=_api_key_from_env)  # the admin key
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    public_base_url: str | None = None  # how clients reach us, when behind a proxy
    # Host names besides loopback and `host` that requests may name (a reverse proxy's);
    # pages of these sites may also POST (gateway/http/web_guards.py)
    allowed_hosts: list[str] = Field(default_factory=list)
    database_url: str | None = None  # default: SQLite file in state_dir
    client_lease_s: float = Field(default=30.0, gt=0)  # a client silent this long is gone
    client_reap_interval_s: float = Field(default=1.0, gt=0)  # how often leases are checked
    paused_retry_after_s: float = Field(default=5.0, gt=0)  # 429 retry_after of a paused run
    limits: RequestLimits = Field(default_factory=RequestLimits)
    shutdown_grace_s: float = Field(default=5.0, ge=0)  # in-flight requests get this long
    # trainer backends: the defaults keep everything in this process on torch
    engine: Literal["torch", "vllm"] = "torch"  # rollout engine
    ray_address: str | None = None  # None: policies in-process; "auto" or HOST:PORT: Ray actors
    optimizer: Literal["torch", "deepspeed"] = "torch"  # update backend
    zero_stage: int | None = Field(default=None, ge=0, le=3)  # DeepSpeed ZeRO stage
    # runs not yet stopped/finished/failed (each holds a policy's weights and optimizer);
    # POST /runs beyond it is a 429 `too_many_live_runs`
    max_live_runs: int = Field(default=8, ge=1)
    # what GET /capacity reports (gateway/http/capacity.py): the models' torch device and each
    # engine's torch threads, filled by the composition root; the operator's own answer to
    # "how many runs at once" (None: the gateway's rule)
    device: str = "cpu"
    engine_threads: int | None = Field(default=None, ge=1)
    concurrent_runs: int | None = Field(default=None, ge=1)
    # on Ray: the cluster's CPUs and what each policy actor asks for, filled by the
    # composition root when it joins the cluster (None in-process)
    ray_cluster_cpus: float | None = Field(default=None, ge=0)
    ray_actor_cpus: float | None = Field(default=None, gt=0)

    # checkpoints a run keeps (the newest N + the best) unless it sets keep_checkpoints;
    # 0: every checkpoint kept whole
    keep_checkpoints: int = Field(default=2, ge=0)
    # ended runs' policies whose engine stays loaded (the most recently used); the others
    # are served by reloading their final weights from disk on demand (gateway/runs/ended_policies.py)
    ended_policies_resident: int = Field(default=1, ge=0)

    @property
    def runs_dir(self) -> Path:
        """Where runs keep their resolved config and checkpoints: `<state_dir>/runs`."""
        return self.state_dir / "runs"

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state_dir / 'gateway.sqlite'}"
