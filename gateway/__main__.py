"""`gateway serve`: the composition root of the gateway.

The only module of `gateway` that imports the trainer's torch side: it loads the models,
builds one engine per model, opens the recorder under the state dir and hands all of it
to `make_app` — or, with `--ray`, places every served model and every run's policy in a
Ray actor of its own (`gateway.ray_hosting`, `trainer.hosting`) and hands `make_app` the
same interfaces. This is the one place that picks in-process or Ray.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
from pathlib import Path
from typing import Annotated, Literal

import typer
import uvicorn

from experiments_db.errors import UnusableDatabase
from gateway.app import make_app
from gateway.backends import BackendUnavailable, check_backends
from gateway.recorder import EpisodeRecorder
from gateway.settings import GatewaySettings, RequestLimits
from gateway.state import check_state_dir

cli = typer.Typer(
    help="The swarmrl gateway: OpenAI-compatible inference on the policies being trained, "
    "and the episode API swarm clients report to.",
    no_args_is_help=True,
    add_completion=False,
)
log = logging.getLogger("gateway")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@cli.callback()
def _root() -> None:
    """Keep `serve` a sub-command even while it is the only one."""


@cli.command()
def serve(
    model: Annotated[
        list[str] | None,
        typer.Option(
            help="Model to serve (repeatable): 'smollm2-135m' (bundled, default), 'tiny' "
            "(random weights, for tests), a local Hugging Face directory, or a cached hub id."
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Bind address. Non-loopback needs --api-key.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Bind port (0 picks a free one).")] = 8400,
    state_dir: Annotated[
        Path | None,
        typer.Option(help="Where episodes and checkpoints live. Default: $SWARMRL_HOME/gateway."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_API_KEY",
            help="Admin key guarding run control and episode creation. A flag shows in `ps`: "
            "prefer $SWARMRL_API_KEY or --api-key-file.",
        ),
    ] = None,
    api_key_file: Annotated[
        Path | None,
        typer.Option(help="Read the admin key from this file (its first line)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name besides loopback and --host that requests may name, and whose "
            "pages may post (a reverse proxy's public name); repeatable.",
        ),
    ] = None,
    dtype: Annotated[
        str,
        typer.Option(
            help="auto | float32 | bfloat16 | float16. auto = bf16 where the hardware is fast at it."
        ),
    ] = "auto",
    device: Annotated[str, typer.Option(help="torch device for the models.")] = "cpu",
    max_batch: Annotated[
        int, typer.Option(help="Most sequences one engine decodes together.")
    ] = 32,
    max_context: Annotated[
        int | None,
        typer.Option(
            help="Prompt + completion token limit (default: the model's, capped at 8192)."
        ),
    ] = None,
    allow_download: Annotated[
        bool, typer.Option(help="Allow fetching hub models that are not cached locally.")
    ] = False,
    log_level: Annotated[str, typer.Option(help="debug | info | warning | error")] = "info",
    client_lease_s: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds a swarm client may go without a heartbeat before it counts as gone "
            "(its open episodes are aborted).",
        ),
    ] = 30.0,
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_GATEWAY_DB_URL",
            help="The gateway's database: a PostgreSQL URL (postgresql://user@host/db) or "
            "sqlite:///path. Default: SQLite in the state dir.",
        ),
    ] = None,
    rollout_engine: Annotated[
        Literal["torch", "vllm"],
        typer.Option(
            "--engine",
            help="Rollout engine: torch (built in, CPU or GPU) or vllm (CUDA GPU, "
            "pip install 'swarmrl[gpu]').",
        ),
    ] = "torch",
    ray: Annotated[
        str | None,
        typer.Option(
            metavar="auto|ADDRESS",
            help="Host the policies as Ray actors on a running cluster: 'auto' (the one on "
            "this machine) or HOST:PORT. Default: in-process.",
        ),
    ] = None,
    optimizer: Annotated[
        Literal["torch", "deepspeed"],
        typer.Option(
            help="Update backend: torch (built in, AdamW) or deepspeed (ZeRO; "
            "pip install --no-build-isolation deepspeed)."
        ),
    ] = "torch",
    actor_cpus: Annotated[
        float,
        typer.Option(min=0, help="With --ray: CPUs each model's actor reserves on the cluster."),
    ] = 1.0,
    actor_gpus: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="With --ray: GPUs each model's actor reserves (default: 1 with a cuda "
            "--device, else 0).",
        ),
    ] = None,
    zero: Annotated[
        int | None,
        typer.Option(min=0, max=3, help="DeepSpeed ZeRO stage 0-3 (needs --optimizer deepspeed)."),
    ] = None,
    max_live_runs: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most runs not yet stopped, finished or failed; POST /runs beyond it is a 429.",
        ),
    ] = 8,
    concurrent_runs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="How many runs GET /capacity tells callers (the researcher) to train at "
            "once here; default: the gateway's rule for its device and cores.",
        ),
    ] = None,
    keep_checkpoints: Annotated[
        int,
        typer.Option(
            min=0,
            help="Checkpoints each run keeps: the newest N plus the best by reward/mean, "
            "only the newest with its optimizer state, unless the run sets keep_checkpoints "
            "(0: every checkpoint kept whole).",
        ),
    ] = 2,
    ended_policies_resident: Annotated[
        int,
        typer.Option(
            min=0,
            help="Ended runs' policies whose engine stays loaded (the most recently used); "
            "the others still answer, reloading their final weights from disk on demand.",
        ),
    ] = 1,
    max_inflight_per_key: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most generations (choices) one API key — or one address without a key — "
            "may have in flight; more is a 429 with retry_after.",
        ),
    ] = RequestLimits().max_inflight_per_key,
    max_choices_per_request: Annotated[
        int,
        typer.Option(min=1, help="Most choices (n × prompts) one OpenAI request may ask for."),
    ] = RequestLimits().max_choices_per_request,
    shutdown_grace_s: Annotated[
        float,
        typer.Option(
            min=0, help="Seconds in-flight requests get on shutdown before they are cut off."
        ),
    ] = 5.0,
) -> None:
    """Load the models and serve the gateway until interrupted."""
    if actor_gpus is None:
        actor_gpus = 1.0 if device.startswith("cuda") else 0.0
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if api_key_file is not None:
        try:
            api_key = api_key_file.read_text().strip().splitlines()[0].strip()
        except (OSError, UnicodeDecodeError, IndexError) as e:
            typer.echo(f"error: --api-key-file {api_key_file}: cannot read a key ({e})", err=True)
            raise typer.Exit(2) from None
    settings = GatewaySettings(
        host=host,
        port=port,
        api_key=api_key,
        allowed_hosts=allowed_host or [],
        client_lease_s=client_lease_s,
        database_url=database_url,
        engine=rollout_engine,
        ray_address=ray,
        optimizer=optimizer,
        zero_stage=zero,
        max_live_runs=max_live_runs,
        concurrent_runs=concurrent_runs,
        device=device,
        keep_checkpoints=keep_checkpoints,
        ended_policies_resident=ended_policies_resident,
        limits=RequestLimits(
            max_inflight_per_key=max_inflight_per_key,
            max_choices_per_request=max_choices_per_request,
        ),
        shutdown_grace_s=shutdown_grace_s,
        **({"state_dir": state_dir} if state_dir else {}),
    )
    try:  # before anything starts: a backend this machine lacks is a one-line error
        check_backends(settings, models=model or ["smollm2-135m"], device=device)
    except BackendUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    if not is_loopback(host) and not settings.api_key:
        typer.echo(
            f"error: refusing to bind {host} without an admin key; pass --api-key or set SWARMRL_API_KEY "
            "(without one the gateway serves loopback only)",
            err=True,
        )
        raise typer.Exit(2)
    try:  # the database first: a refused URL fails in seconds, before any model loads
        check_state_dir(settings)
        recorder = EpisodeRecorder.from_settings(settings)
    except UnusableDatabase as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    except Exception as e:
        typer.echo(
            f"error: cannot open the gateway database ({e.__class__.__name__}: "
            f"{' '.join(str(e).split())}); check --database-url / $SWARMRL_GATEWAY_DB_URL",
            err=True,
        )
        raise typer.Exit(2) from None
    database_url_shown = recorder.db.url.render_as_string(hide_password=True)

    # torch is imported here, not at module import, so `gateway --help` stays instant.
    from trainer.openmp import bound_openmp_spinning

    bound_openmp_spinning()  # before torch loads libgomp: see trainer/openmp.py
    from trainer.config import EngineConfig, ModelConfig
    from trainer.errors import ModelNotAvailable, PolicyHostLost
    from trainer.model import resolve_dtype

    dtype = str(resolve_dtype(dtype, device)).removeprefix("torch.")  # record what is used
    model_configs = [
        ModelConfig(name=name, dtype=dtype, device=device, allow_download=allow_download)
        for name in model or ["smollm2-135m"]
    ]
    factory_kwargs = {
        "engine_dtype": dtype,
        "device": device,
        "allow_download": allow_download,
        "engine": settings.engine,
        "optimizer": settings.optimizer,
        "zero_stage": settings.zero_stage,
    }
    try:
        if settings.ray_address is None:
            from trainer.engine.torch_engine import reserve_cores_for_engine

            threads = reserve_cores_for_engine()  # only engine threads compute; see its docstring
            engine_config = EngineConfig(
                max_batch=max_batch, max_context=max_context, threads=threads
            )
            served, policy_factory, shutdown = _in_process(
                model_configs, engine_config, factory_kwargs
            )
        else:
            threads = max(1, math.ceil(actor_cpus))
            engine_config = EngineConfig(
                max_batch=max_batch, max_context=max_context, threads=threads
            )
            resources = {"num_cpus": actor_cpus, "num_gpus": actor_gpus}
            served, policy_factory, shutdown = _on_ray(
                settings.ray_address, model_configs, engine_config, factory_kwargs, resources
            )
    except (ModelNotAvailable, PolicyHostLost) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e

    settings = settings.model_copy(update={"engine_threads": engine_config.threads})
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    resolved = {
        "settings": settings.model_dump(mode="json", exclude={"api_key", "database_url"})
        | {"api_key_set": bool(settings.api_key), "database_url": database_url_shown},
        "models": [
            ModelConfig(name=s.name, dtype=dtype, device=device).model_dump() for s in served
        ],
        "engine": engine_config.model_dump(),
        "hosting": "in-process" if settings.ray_address is None else f"ray {settings.ray_address}",
    }
    log.info("config: %s", json.dumps(resolved))
    (settings.state_dir / "serve-config.json").write_text(json.dumps(resolved, indent=2))

    app = make_app(served, recorder, settings, policy_factory=policy_factory)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=log_level.lower(),
            access_log=log_level.lower() == "debug",
            # a stuck request cannot hold SIGTERM: after the grace, connections are cut
            timeout_graceful_shutdown=settings.shutdown_grace_s,
        )
    finally:
        shutdown()


def _in_process(model_configs, engine_config, factory_kwargs):
    """Served models and policies in this process: (served models, factory, shutdown)."""
    from trainer.model import load_model
    from trainer.policy.factory import TorchPolicyFactory
    from trainer.tokenizer import HFChatTokenizer
    from trainer.types import ServedModel

    served: list[ServedModel] = []
    engines = []
    for config in model_configs:
        loaded = load_model(config)
        tokenizer = HFChatTokenizer(loaded.tokenizer)
        if factory_kwargs["engine"] == "vllm":
            from trainer.engine.vllm_engine import build_vllm_engine  # CUDA only

            engine = build_vllm_engine(loaded.model, tokenizer, engine_config, initial_version=0)
        else:
            from trainer.engine import TorchEngine

            engine = TorchEngine(loaded.model, tokenizer, engine_config)
        engines.append(engine)
        served.append(
            ServedModel(
                name=config.name, tokenizer=tokenizer, engine=engine, owned_by=loaded.source
            )
        )
        log.info(
            "loaded %s from %s in %.1fs (%s)",
            config.name,
            loaded.source,
            loaded.load_seconds,
            next(loaded.model.parameters()).dtype,
        )
    factory = TorchPolicyFactory(engine_config=engine_config, **factory_kwargs)

    def shutdown() -> None:
        for engine in engines:
            engine.shutdown()

    return served, factory, shutdown


def _on_ray(address, model_configs, engine_config, factory_kwargs, resources):
    """Served models and policies as Ray actors on the cluster at `address`: (served
    models, factory, shutdown). The actors die with this process (Ray fate-sharing)."""
    import ray

    from gateway.ray_hosting import ActorResources, RayPolicyFactory, start_served_model
    from trainer.hosting import PolicyHost

    try:
        ray.init(address=address, namespace="swarmrl", logging_level=logging.WARNING)
    except Exception as e:  # a version mismatch, auth, a cluster that went away since the probe
        typer.echo(
            f"error: cannot join the Ray cluster at {address} ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:300]})",
            err=True,
        )
        raise typer.Exit(2) from None
    log.info("connected to the Ray cluster at %s: %s", address, ray.cluster_resources())
    kwargs = factory_kwargs | {"engine_config": engine_config}
    actor_resources = ActorResources(**resources)
    served = [
        start_served_model(
            actor_class=PolicyHost,
            name=config.name,
            model=config.model_dump(),
            factory_kwargs=kwargs,
            resources=actor_resources,
            threads=engine_config.threads,
        )
        for config in model_configs
    ]
    factory = RayPolicyFactory(
        actor_class=PolicyHost,
        factory_kwargs=kwargs,
        resources=actor_resources,
        threads=engine_config.threads,
    )
    return served, factory, ray.shutdown


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
