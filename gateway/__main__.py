"""`gateway serve`: the composition root of the gateway.

The only module of `gateway` that imports the trainer's torch side: it loads the models,
builds one engine per model, opens the recorder under the state dir and hands all of it
to `make_app` — or, with `--ray`, places every served model and every run's policy in a
Ray actor of its own (`gateway.serve.ray_hosting`, `trainer.hosting`) and hands `make_app` the
same interfaces. This is the one place that picks in-process or Ray. Its options are one
typed model, `gateway.serve.options.ServeOptions`, split there into the settings of the
gateway, the engines, the served models and the policy factory.
"""

from __future__ import annotations

import ipaddress
import json
import logging

import typer
import uvicorn

from experiments_db.errors import UnusableDatabase
from gateway.http.app import make_app
from gateway.http.state import check_state_dir
from gateway.recording.recorder import EpisodeRecorder
from gateway.serve.backends import BackendUnavailable, check_backends
from gateway.serve.listen import AddressInUse, bind_address
from gateway.serve.options import CannotReadKey, ServeOptions, typer_command

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
@typer_command(ServeOptions)
def serve(options: ServeOptions) -> None:
    """Load the models and serve the gateway until interrupted."""
    logging.basicConfig(
        level=options.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = options.gateway_settings(api_key=options.admin_key())
    except CannotReadKey as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    try:  # before anything starts: a backend this machine lacks is a one-line error
        check_backends(settings, models=options.model_names, device=options.device)
    except BackendUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    if not is_loopback(settings.host) and not settings.api_key:
        typer.echo(
            f"error: refusing to bind {settings.host} without an admin key; pass --api-key or set SWARMRL_API_KEY "
            "(without one the gateway serves loopback only)",
            err=True,
        )
        raise typer.Exit(2)
    try:  # the port before anything slow: see gateway/serve/listen.py
        listening = bind_address(settings.host, settings.port)
    except AddressInUse as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
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
    from trainer.config import ModelConfig
    from trainer.errors import ModelNotAvailable, PolicyHostLost
    from trainer.model import resolve_dtype

    # record the dtype used, not "auto"
    dtype = str(resolve_dtype(options.dtype, options.device)).removeprefix("torch.")
    model_configs = options.model_configs(dtype=dtype)
    factory_kwargs = options.policy_factory_kwargs(dtype=dtype)
    try:
        if settings.ray_address is None:
            from trainer.engine.torch_engine import reserve_cores_for_engine

            # only engine threads compute; see its docstring
            engine_config = options.engine_config(threads=reserve_cores_for_engine())
            served, policy_factory, shutdown = _in_process(
                model_configs, engine_config, factory_kwargs
            )
        else:
            engine_config = options.engine_config(threads=options.ray_actor_threads)
            served, policy_factory, shutdown = _on_ray(
                settings.ray_address,
                model_configs,
                engine_config,
                factory_kwargs,
                options.ray_actor_resources(),
            )
    except (ModelNotAvailable, PolicyHostLost) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e

    settings = settings.model_copy(update={"engine_threads": engine_config.threads})
    if settings.ray_address is not None:  # GET /capacity counts the cluster's CPUs
        from gateway.serve.ray_hosting import cluster_cpus

        settings = settings.model_copy(
            update={
                "ray_cluster_cpus": cluster_cpus(),
                "ray_actor_cpus": options.ray_actor_resources()["num_cpus"] or None,
            }
        )
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    resolved = {
        "settings": settings.model_dump(mode="json", exclude={"api_key", "database_url"})
        | {"api_key_set": bool(settings.api_key), "database_url": database_url_shown},
        "models": [
            ModelConfig(name=s.name, dtype=dtype, device=options.device).model_dump()
            for s in served
        ],
        "engine": engine_config.model_dump(),
        "hosting": "in-process" if settings.ray_address is None else f"ray {settings.ray_address}",
    }
    log.info("config: %s", json.dumps(resolved))
    (settings.state_dir / "serve-config.json").write_text(json.dumps(resolved, indent=2))

    app = make_app(served, recorder, settings, policy_factory=policy_factory)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=settings.host,
            port=listening.getsockname()[1],
            log_level=options.log_level.lower(),
            access_log=options.log_level.lower() == "debug",
            # a stuck request cannot hold SIGTERM: after the grace, connections are cut
            timeout_graceful_shutdown=settings.shutdown_grace_s,
        )
    )
    try:
        server.run(sockets=[listening])
    finally:
        shutdown()
    if not server.started:  # the app's startup failed (uvicorn logged why)
        raise typer.Exit(3)


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

    from gateway.serve.ray_hosting import ActorResources, RayPolicyFactory, start_served_model
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
