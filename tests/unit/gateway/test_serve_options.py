"""`gateway serve`'s options as one typed model (`gateway.serve.options.ServeOptions`):
the command offers the same options as before it (flags, env vars, defaults, bounds, help
texts, as captured from the hand-written command), typer's parsing lands in the model,
the model's bounds hold without the CLI, and it splits into the gateway's, the engines'
and the policy factory's settings with the same defaults they have on their own."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest
import typer
import typer.main
from pydantic import ValidationError
from typer.testing import CliRunner

from gateway.__main__ import cli
from gateway.serve.options import CannotReadKey, ServeOptions, typer_command
from gateway.settings import GatewaySettings
from trainer.config import EngineConfig

# (flags, env var, default, min, max) of every `gateway serve` option, captured from the
# hand-written command (commit cf4dd29) before the options became `ServeOptions`
OPTIONS_BEFORE = [
    (("--model",), None, None, None, None),
    (("--host",), None, "127.0.0.1", None, None),
    (("--port",), None, 8400, None, None),
    (("--state-dir",), None, None, None, None),
    (("--api-key",), "SWARMRL_API_KEY", None, None, None),
    (("--api-key-file",), None, None, None, None),
    (("--allowed-host",), None, None, None, None),
    (("--dtype",), None, "auto", None, None),
    (("--device",), None, "cpu", None, None),
    (("--max-batch",), None, 32, None, None),
    (("--max-context",), None, None, None, None),
    (("--allow-download", "--no-allow-download"), None, False, None, None),
    (("--log-level",), None, "info", None, None),
    (("--client-lease-s",), None, 30.0, 0.1, None),
    (("--database-url",), "SWARMRL_GATEWAY_DB_URL", None, None, None),
    (("--engine",), None, "torch", None, None),
    (("--ray",), None, None, None, None),
    (("--optimizer",), None, "torch", None, None),
    (("--actor-cpus",), None, 1.0, 0, None),
    (("--actor-gpus",), None, None, 0, None),
    (("--zero",), None, None, 0, 3),
    (("--max-live-runs",), None, 8, 1, None),
    (("--concurrent-runs",), None, None, 1, None),
    (("--keep-checkpoints",), None, 2, 0, None),
    (("--ended-policies-resident",), None, 1, 0, None),
    (("--max-inflight-per-key",), None, 16, 1, None),
    (("--max-choices-per-request",), None, 64, 1, None),
    (("--shutdown-grace-s",), None, 5.0, 0, None),
]
# sha256 of the options' help texts joined by newlines, in the order above, at cf4dd29
HELP_TEXTS_BEFORE = "6a766b53e98f0bb498f83709428883568290203c91972e3ba9f07c7cf742ad6e"


def serve_params():
    return typer.main.get_command(cli).commands["serve"].params


def test_serve_offers_the_same_options_as_before_with_the_same_env_vars_defaults_and_bounds():
    now = [
        (tuple(p.opts + p.secondary_opts), p.envvar, p.default, p.min, p.max)
        for p in serve_params()
    ]
    assert now == OPTIONS_BEFORE


def test_every_options_help_text_is_the_one_it_had_before():
    joined = "\n".join(p.help for p in serve_params())
    assert hashlib.sha256(joined.encode()).hexdigest() == HELP_TEXTS_BEFORE


def is_flag(word: str) -> bool:
    return word.startswith("--")


def test_serve_help_lists_every_option_and_nothing_else():
    result = CliRunner().invoke(cli, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Load the models and serve the gateway until interrupted." in result.output
    rows = [line.removeprefix("│ ").split() for line in result.output.splitlines()]
    listed = {flag for row in rows for flag in itertools.takewhile(is_flag, row)}
    expected = {flag for flags, *_ in OPTIONS_BEFORE for flag in flags} | {"--help"}
    assert listed == expected


def parsed(args: list[str], env: dict[str, str] | None = None) -> ServeOptions:
    """`args` parsed by typer into the command's one `ServeOptions`."""
    seen: list[ServeOptions] = []
    app = typer.Typer()

    @app.command()
    @typer_command(ServeOptions)
    def command(options: ServeOptions) -> None:
        seen.append(options)

    result = CliRunner().invoke(app, args, env=env or {})
    assert result.exit_code == 0, result.output
    return seen[0]


def test_the_flags_and_env_vars_are_parsed_into_one_typed_model(tmp_path):
    options = parsed(
        ["--model", "tiny", "--model", "smollm2-135m", "--engine", "vllm", "--zero", "2",
         "--allowed-host", "a.example", "--state-dir", str(tmp_path), "--allow-download"],
        env={"SWARMRL_API_KEY": "sk-env", "SWARMRL_GATEWAY_DB_URL": "sqlite:///x.db"},
    )  # fmt: skip
    assert options.model_names == ["tiny", "smollm2-135m"]
    assert options.rollout_engine == "vllm" and options.zero == 2 and options.allow_download
    assert options.state_dir == tmp_path and options.allowed_host == ["a.example"]
    assert options.api_key == "sk-env" and options.database_url == "sqlite:///x.db"
    assert parsed([]) == ServeOptions()


def test_the_options_bounds_hold_without_the_cli_too():
    with pytest.raises(ValidationError, match="zero"):
        ServeOptions(zero=4)
    with pytest.raises(ValidationError, match="client_lease_s"):
        ServeOptions(client_lease_s=0.0)
    with pytest.raises(ValidationError):
        ServeOptions(rollout_engine="tensorrt")


def test_the_defaults_are_those_of_the_settings_they_become(monkeypatch):
    monkeypatch.delenv("SWARMRL_API_KEY", raising=False)
    options = ServeOptions()
    assert options.gateway_settings(api_key=None) == GatewaySettings(api_key=None)
    assert options.engine_config(threads=3) == EngineConfig(threads=3)
    assert options.model_names == ["smollm2-135m"]


def test_the_options_split_into_gateway_engine_model_and_factory_settings(tmp_path):
    options = ServeOptions(
        host="0.0.0.0", port=9000, state_dir=tmp_path, allowed_host=["proxy"], device="cuda:1",
        max_batch=8, max_context=1024, rollout_engine="vllm", ray="auto", optimizer="deepspeed",
        zero=3, max_live_runs=2, concurrent_runs=1, keep_checkpoints=0, max_inflight_per_key=4,
        max_choices_per_request=9, shutdown_grace_s=1.0, client_lease_s=2.0, actor_cpus=1.5,
    )  # fmt: skip
    settings = options.gateway_settings(api_key="sk-admin")
    assert (settings.host, settings.port, settings.state_dir) == ("0.0.0.0", 9000, tmp_path)
    assert (settings.engine, settings.ray_address, settings.optimizer, settings.zero_stage) == (
        "vllm", "auto", "deepspeed", 3
    )  # fmt: skip
    assert settings.api_key == "sk-admin" and settings.allowed_hosts == ["proxy"]
    assert (settings.limits.max_inflight_per_key, settings.limits.max_choices_per_request) == (4, 9)
    assert (settings.max_live_runs, settings.concurrent_runs, settings.keep_checkpoints) == (
        2,
        1,
        0,
    )
    assert (settings.shutdown_grace_s, settings.client_lease_s, settings.device) == (
        1.0,
        2.0,
        "cuda:1",
    )
    engine = options.engine_config(threads=options.ray_actor_threads)
    assert (engine.max_batch, engine.max_context, engine.threads) == (8, 1024, 2)
    assert options.ray_actor_resources() == {"num_cpus": 1.5, "num_gpus": 1.0}  # cuda: 1 GPU
    [model] = options.model_configs(dtype="bfloat16")
    assert (model.name, model.dtype, model.device) == ("smollm2-135m", "bfloat16", "cuda:1")
    assert options.policy_factory_kwargs(dtype="bfloat16") == {
        "engine_dtype": "bfloat16", "device": "cuda:1", "allow_download": False,
        "engine": "vllm", "optimizer": "deepspeed", "zero_stage": 3,
    }  # fmt: skip


def test_the_admin_key_file_wins_over_the_flag_and_an_unreadable_one_says_so(tmp_path: Path):
    key_file = tmp_path / "key"
    key_file.write_text("  sk-from-file \nignored\n")
    assert ServeOptions(api_key="sk-flag", api_key_file=key_file).admin_key() == "sk-from-file"
    assert ServeOptions(api_key="sk-flag").admin_key() == "sk-flag"
    with pytest.raises(CannotReadKey, match="--api-key-file"):
        ServeOptions(api_key_file=tmp_path / "missing").admin_key()
