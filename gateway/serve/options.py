"""`gateway serve`'s options, declared once: `ServeOptions`.

Owns: every option of `gateway serve` — its flag, env var, default, bounds and `--help`
text, all in the field's `typer.Option` annotation, which typer reads through
`typer_command` — and how the options split into what the rest is built from: the
gateway's `GatewaySettings`, the engines' `EngineConfig`, the served models'
`ModelConfig`s and the policy factory's keyword arguments. Knows nothing of loading
models, Ray or uvicorn (that is the composition root, `gateway/__main__.py`) and imports
no torch.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

import typer
from pydantic import BaseModel, ConfigDict, model_validator
from typer.models import OptionInfo

from gateway.settings import GatewaySettings, RequestLimits
from trainer.config import EngineConfig, ModelConfig

DEFAULT_MODEL = "smollm2-135m"
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


class CannotReadKey(Exception):
    """`--api-key-file` names a file without a readable first line."""


class ServeOptions(BaseModel):
    """What `gateway serve` was asked for, as typed values (the flags' help says what each
    means). Built once per command; `gateway_settings`, `engine_config`, `model_configs`
    and `policy_factory_kwargs` split it for the parts that are built from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Annotated[
        list[str] | None,
        typer.Option(
            help="Model to serve (repeatable): 'smollm2-135m' (bundled, default), 'tiny' "
            "(random weights, for tests), a local Hugging Face directory, or a cached hub id."
        ),
    ] = None
    host: Annotated[str, typer.Option(help="Bind address. Non-loopback needs --api-key.")] = (
        "127.0.0.1"
    )
    port: Annotated[int, typer.Option(help="Bind port (0 picks a free one).")] = 8400
    state_dir: Annotated[
        Path | None,
        typer.Option(help="Where episodes and checkpoints live. Default: $SWARMRL_HOME/gateway."),
    ] = None
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_API_KEY",
            help="Admin key guarding run control and episode creation. A flag shows in `ps`: "
            "prefer $SWARMRL_API_KEY or --api-key-file.",
        ),
    ] = None
    api_key_file: Annotated[
        Path | None,
        typer.Option(help="Read the admin key from this file (its first line)."),
    ] = None
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name besides loopback and --host that requests may name, and whose "
            "pages may post (a reverse proxy's public name); repeatable.",
        ),
    ] = None
    dtype: Annotated[
        str,
        typer.Option(
            help="auto | float32 | bfloat16 | float16. auto = bf16 where the hardware is fast at it."
        ),
    ] = "auto"
    device: Annotated[str, typer.Option(help="torch device for the models.")] = "cpu"
    max_batch: Annotated[int, typer.Option(help="Most sequences one engine decodes together.")] = 32
    max_context: Annotated[
        int | None,
        typer.Option(
            help="Prompt + completion token limit (default: the model's, capped at 8192)."
        ),
    ] = None
    allow_download: Annotated[
        bool, typer.Option(help="Allow fetching hub models that are not cached locally.")
    ] = False
    log_level: Annotated[str, typer.Option(help="debug | info | warning | error")] = "info"
    client_lease_s: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds a swarm client may go without a heartbeat before it counts as gone "
            "(its open episodes are aborted).",
        ),
    ] = 30.0
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_GATEWAY_DB_URL",
            help="The gateway's database: a PostgreSQL URL (postgresql://user@host/db) or "
            "sqlite:///path. Default: SQLite in the state dir.",
        ),
    ] = None
    rollout_engine: Annotated[
        Literal["torch", "vllm"],
        typer.Option(
            "--engine",
            help="Rollout engine: torch (built in, CPU or GPU) or vllm (CUDA GPU, "
            "pip install 'swarmrl[gpu]').",
        ),
    ] = "torch"
    ray: Annotated[
        str | None,
        typer.Option(
            metavar="auto|ADDRESS",
            help="Host the policies as Ray actors on a running cluster: 'auto' (the one on "
            "this machine) or HOST:PORT. Default: in-process.",
        ),
    ] = None
    optimizer: Annotated[
        Literal["torch", "deepspeed"],
        typer.Option(
            help="Update backend: torch (built in, AdamW) or deepspeed (ZeRO; "
            "pip install --no-build-isolation deepspeed)."
        ),
    ] = "torch"
    actor_cpus: Annotated[
        float,
        typer.Option(min=0, help="With --ray: CPUs each model's actor reserves on the cluster."),
    ] = 1.0
    actor_gpus: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="With --ray: GPUs each model's actor reserves (default: 1 with a cuda "
            "--device, else 0).",
        ),
    ] = None
    zero: Annotated[
        int | None,
        typer.Option(min=0, max=3, help="DeepSpeed ZeRO stage 0-3 (needs --optimizer deepspeed)."),
    ] = None
    max_live_runs: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most runs not yet stopped, finished or failed; POST /runs beyond it is a 429.",
        ),
    ] = 8
    concurrent_runs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="How many runs GET /capacity tells callers (the researcher) to train at "
            "once here; default: the gateway's rule for its device and cores.",
        ),
    ] = None
    keep_checkpoints: Annotated[
        int,
        typer.Option(
            min=0,
            help="Checkpoints each run keeps: the newest N plus the best by reward/mean, "
            "only the newest with its optimizer state, unless the run sets keep_checkpoints "
            "(0: every checkpoint kept whole).",
        ),
    ] = 2
    ended_policies_resident: Annotated[
        int,
        typer.Option(
            min=0,
            help="Ended runs' policies whose engine stays loaded (the most recently used); "
            "the others still answer, reloading their final weights from disk on demand.",
        ),
    ] = 1
    max_inflight_per_key: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most generations (choices) one API key — or one address without a key — "
            "may have in flight; more is a 429 with retry_after.",
        ),
    ] = RequestLimits().max_inflight_per_key
    max_choices_per_request: Annotated[
        int,
        typer.Option(min=1, help="Most choices (n × prompts) one OpenAI request may ask for."),
    ] = RequestLimits().max_choices_per_request
    shutdown_grace_s: Annotated[
        float,
        typer.Option(
            min=0, help="Seconds in-flight requests get on shutdown before they are cut off."
        ),
    ] = 5.0

    @model_validator(mode="after")
    def _within_the_options_bounds(self) -> ServeOptions:
        """The `min`/`max` of each option hold when the model is built without the CLI too."""
        for name, option in _options_of(type(self)).items():
            value = getattr(self, name)
            if value is None:
                continue
            if (option.min is not None and value < option.min) or (
                option.max is not None and value > option.max
            ):
                raise ValueError(f"{name} = {value} is outside [{option.min}, {option.max}]")
        return self

    # -- the split -----------------------------------------------------------------------

    @property
    def model_names(self) -> list[str]:
        return self.model or [DEFAULT_MODEL]

    @property
    def resolved_actor_gpus(self) -> float:
        """`--actor-gpus`, default 1 with a cuda `--device`, else 0."""
        if self.actor_gpus is not None:
            return self.actor_gpus
        return 1.0 if self.device.startswith("cuda") else 0.0

    def admin_key(self) -> str | None:
        """The first line of `--api-key-file`, else `--api-key` / `$SWARMRL_API_KEY`."""
        if self.api_key_file is None:
            return self.api_key
        try:
            return self.api_key_file.read_text().strip().splitlines()[0].strip()
        except (OSError, UnicodeDecodeError, IndexError) as e:
            raise CannotReadKey(
                f"--api-key-file {self.api_key_file}: cannot read a key ({e})"
            ) from None

    def gateway_settings(self, *, api_key: str | None) -> GatewaySettings:
        """The gateway process's settings; `api_key` is `admin_key()`, read once."""
        return GatewaySettings(
            host=self.host,
            port=self.port,
            api_key=api_key,
            allowed_hosts=self.allowed_host or [],
            client_lease_s=self.client_lease_s,
            database_url=self.database_url,
            engine=self.rollout_engine,
            ray_address=self.ray,
            optimizer=self.optimizer,
            zero_stage=self.zero,
            max_live_runs=self.max_live_runs,
            concurrent_runs=self.concurrent_runs,
            device=self.device,
            keep_checkpoints=self.keep_checkpoints,
            ended_policies_resident=self.ended_policies_resident,
            limits=RequestLimits(
                max_inflight_per_key=self.max_inflight_per_key,
                max_choices_per_request=self.max_choices_per_request,
            ),
            shutdown_grace_s=self.shutdown_grace_s,
            **({"state_dir": self.state_dir} if self.state_dir else {}),
        )

    def engine_config(self, *, threads: int) -> EngineConfig:
        """Each engine's settings; `threads` is what the hosting leaves it (the cores
        reserved in-process, or `ray_actor_threads` on Ray)."""
        return EngineConfig(max_batch=self.max_batch, max_context=self.max_context, threads=threads)

    @property
    def ray_actor_threads(self) -> int:
        return max(1, math.ceil(self.actor_cpus))

    def ray_actor_resources(self) -> dict[str, float]:
        return {"num_cpus": self.actor_cpus, "num_gpus": self.resolved_actor_gpus}

    def model_configs(self, *, dtype: str) -> list[ModelConfig]:
        """One per served model; `dtype` is `--dtype` resolved for the device."""
        return [
            ModelConfig(
                name=name, dtype=dtype, device=self.device, allow_download=self.allow_download
            )
            for name in self.model_names
        ]

    def policy_factory_kwargs(self, *, dtype: str) -> dict[str, Any]:
        """The trainer side's settings: what every run's policy is built with."""
        return {
            "engine_dtype": dtype,
            "device": self.device,
            "allow_download": self.allow_download,
            "engine": self.rollout_engine,
            "optimizer": self.optimizer,
            "zero_stage": self.zero,
        }


def _options_of(model: type[BaseModel]) -> dict[str, OptionInfo]:
    return {
        name: next(m for m in field.metadata if isinstance(m, OptionInfo))
        for name, field in model.model_fields.items()
    }


def typer_command(model: type[M]) -> Callable[[Callable[[M], R]], Callable[..., R]]:
    """`command(options: model)` as the function typer reads: one keyword parameter per
    field of `model`, with the field's annotation (its `typer.Option`) and default; the
    values typer parses are validated into one `model` and passed on."""
    hints = get_type_hints(model, include_extras=True)
    parameters = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[name], default=field.default
        )  # fmt: skip
        for name, field in model.model_fields.items()
    ]

    def bind(command: Callable[[M], R]) -> Callable[..., R]:
        @functools.wraps(command)
        def parsed(**values: Any) -> R:
            return command(model(**values))

        parsed.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        parsed.__annotations__ = {p.name: p.annotation for p in parameters}
        return parsed

    return bind
