"""`gateway serve` backend flags (issue 8): every request this machine cannot honour is one
line naming the fix and exit 2, before the database opens or a model loads; the probes
are simulated, so "installed but no GPU" and friends run on any box."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gateway.__main__ as gateway_main
from gateway.serve import backends
from gateway.serve.backends import BackendProbes, BackendUnavailable, check_backends
from gateway.settings import GatewaySettings

NOT_INSTALLED = "vLLM is not installed: pip install 'swarmrl[gpu]' on a CUDA machine"
NO_GPU = "vLLM needs a CUDA GPU; this machine has none: use --engine torch"
NO_RAY = "--ray needs Ray, which is not installed: pip install 'swarmrl[cluster]'"
NO_LOCAL_CLUSTER = (
    "--ray auto found no running Ray cluster on this machine: start one with "
    "`ray start --head`, or pass --ray HOST:PORT"
)
NO_DEEPSPEED = "DeepSpeed is not installed: pip install --no-build-isolation deepspeed"
ZERO_WITHOUT_DEEPSPEED = (
    "--zero needs --optimizer deepspeed (ZeRO stages are DeepSpeed's): add "
    "--optimizer deepspeed or drop --zero"
)


class StartedAnyway(BaseException):
    """Raised where the gateway would open its database or load a model (a BaseException,
    so the serve command's own error handling cannot swallow it)."""


@pytest.fixture
def started(monkeypatch) -> list[str]:
    """Opening the database or loading a model is recorded and stops the command there."""
    import trainer.model

    calls: list[str] = []

    def recording(what: str):
        def stop(*_args, **_kwargs):
            calls.append(what)
            raise StartedAnyway(what)

        return stop

    monkeypatch.setattr(trainer.model, "load_model", recording("load_model"))
    monkeypatch.setattr(gateway_main.EpisodeRecorder, "from_settings", recording("open_database"))
    return calls


@pytest.fixture
def nothing_starts(started):
    yield
    assert started == [], "the gateway started despite a bad backend flag"


def simulate(
    monkeypatch,
    *,
    installed: set[str] = frozenset(),
    gpu: bool = False,
    answering: set[tuple[str, int]] = frozenset(),
    local_ray: str | None = None,
    sizes: dict[str, int] | None = None,
    memory: int | None = None,
) -> list[str]:
    """Swap the probes for a simulated machine (`sizes`: parameters of the models whose
    size is known; `memory`: bytes available to any device); returns the log of probes
    asked."""
    asked: list[str] = []

    def model_parameters(name: str) -> int | None:
        asked.append(f"params:{name}")
        return (sizes or {}).get(name)

    def available_memory(device: str) -> int | None:
        asked.append(f"memory:{device}")
        return memory

    def module_installed(name: str) -> bool:
        asked.append(f"installed:{name}")
        return name in installed

    def cuda_available() -> bool:
        asked.append("cuda")
        return gpu

    def tcp_answers(host: str, port: int, timeout_s: float) -> bool:
        asked.append(f"tcp:{host}:{port}")
        assert timeout_s <= 5, "the probe must be short"
        return (host, port) in answering

    probes = BackendProbes(
        module_installed=module_installed,
        cuda_available=cuda_available,
        tcp_answers=tcp_answers,
        local_ray_address=lambda: local_ray,
        model_parameters=model_parameters,
        available_memory=available_memory,
    )
    monkeypatch.setattr(backends, "probes", probes)
    return asked


def serve(tmp_path: Path, *flags: str):
    args = ["serve", "--model", "tiny", "--state-dir", str(tmp_path / "gw"), *flags]
    return CliRunner().invoke(gateway_main.cli, args)


def assert_one_line_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {message}\n"


BAD_INPUT = [
    pytest.param(["--engine", "vllm"], {}, NOT_INSTALLED, id="vllm-not-installed"),
    pytest.param(["--engine", "vllm"], {"installed": {"vllm"}}, NO_GPU, id="vllm-without-gpu"),
    pytest.param(["--ray", "auto"], {}, NO_RAY, id="ray-not-installed"),
    pytest.param(["--ray", "auto"], {"installed": {"ray"}}, NO_LOCAL_CLUSTER, id="ray-auto-none"),
    pytest.param(
        ["--ray", "auto"],
        {"installed": {"ray"}, "local_ray": "127.0.0.1:6379"},
        "--ray auto: the Ray cluster recorded on this machine (127.0.0.1:6379) does not "
        "answer: start one with `ray start --head`, or pass --ray HOST:PORT",
        id="ray-auto-stale",
    ),
    pytest.param(
        ["--ray", "10.0.0.5:6379"],
        {"installed": {"ray"}},
        "--ray 10.0.0.5:6379: no Ray cluster answers there within 2s: check the address, "
        "or start one on that node with `ray start --head --port 6379`",
        id="ray-address-silent",
    ),
    pytest.param(
        ["--ray", "headnode"],
        {"installed": {"ray"}},
        "--ray expects auto or HOST:PORT (e.g. 10.0.0.5:6379), got 'headnode'",
        id="ray-address-malformed",
    ),
    pytest.param(["--optimizer", "deepspeed"], {}, NO_DEEPSPEED, id="deepspeed-not-installed"),
    pytest.param(
        ["--optimizer", "deepspeed", "--zero", "3"], {}, NO_DEEPSPEED, id="zero3-no-deepspeed"
    ),
    pytest.param(["--zero", "2"], {}, ZERO_WITHOUT_DEEPSPEED, id="zero-with-torch-optimizer"),
    pytest.param(
        ["--zero", "1"],
        {"installed": {"deepspeed"}},
        ZERO_WITHOUT_DEEPSPEED,
        id="zero-with-torch-optimizer-deepspeed-installed",
    ),
]


@pytest.mark.parametrize(("flags", "machine", "message"), BAD_INPUT)
def test_a_backend_this_machine_lacks_is_one_line_and_exit_2_before_anything_starts(
    tmp_path, monkeypatch, nothing_starts, flags, machine, message
):
    simulate(monkeypatch, **machine)
    assert_one_line_error(serve(tmp_path, *flags), message)
    assert not (tmp_path / "gw").exists()


@pytest.mark.parametrize("flags", [["--zero", "4"], ["--zero", "-1"], ["--engine", "sglang"]])
def test_values_outside_the_choices_are_refused_by_the_cli(tmp_path, nothing_starts, flags):
    result = serve(tmp_path, *flags)
    assert result.exit_code == 2
    assert "Invalid value for" in result.stderr


def test_the_default_backends_probe_nothing_and_go_on_to_start(tmp_path, monkeypatch, started):
    asked = simulate(monkeypatch)  # a bare machine: nothing installed, no GPU, no cluster
    with pytest.raises(StartedAnyway):
        serve(tmp_path)
    assert started == ["open_database"]
    assert asked == []


def test_the_backend_settings_are_part_of_the_resolved_settings():
    dumped = GatewaySettings(
        engine="vllm", ray_address="auto", optimizer="deepspeed", zero_stage=3
    ).model_dump(mode="json")
    assert {k: dumped[k] for k in ("engine", "ray_address", "optimizer", "zero_stage")} == {
        "engine": "vllm",
        "ray_address": "auto",
        "optimizer": "deepspeed",
        "zero_stage": 3,
    }


def test_serve_help_lists_the_backend_flags():
    result = CliRunner().invoke(gateway_main.cli, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for flag in ("--engine", "--ray", "--optimizer", "--zero"):
        assert flag in result.output


def test_flag_mistakes_are_found_before_any_probe(monkeypatch):
    asked = simulate(monkeypatch)
    with pytest.raises(BackendUnavailable, match="--zero needs --optimizer deepspeed"):
        check_backends(GatewaySettings(engine="vllm", zero_stage=2))
    assert asked == []


def test_vllm_without_vllm_never_asks_for_the_gpu(monkeypatch):
    asked = simulate(monkeypatch)
    with pytest.raises(BackendUnavailable, match="vLLM is not installed"):
        check_backends(GatewaySettings(engine="vllm"))
    assert "cuda" not in asked


# A DeepSpeed update whose model states cannot fit (sized from the config, nothing loaded).

GB = 2**30
SEVEN_B = 7_000_000_000


def check_deepspeed(zero: int | None, models=("big",), device="cpu", **flags) -> None:
    settings = GatewaySettings(optimizer="deepspeed", zero_stage=zero, **flags)
    check_backends(settings, models=list(models), device=device)


@pytest.mark.parametrize(
    ("zero", "message"),
    [
        pytest.param(
            3,
            "--optimizer deepspeed --zero 3 cannot fit big on cpu: its model states alone take "
            "at least 143.4 GiB (7,000.0M params x 22 B: fp32 weights, gradients, AdamW "
            "moments, ZeRO fp32 copy and the served copy; ZeRO shards nothing in one process) "
            "and 24.0 GiB is available: use a smaller --model, a GPU with more memory, or "
            "--optimizer torch with LoRA runs",
            id="zero3",
        ),
        pytest.param(
            None,
            "--optimizer deepspeed --zero 0 cannot fit big on cpu: its model states alone take "
            "at least 117.3 GiB (7,000.0M params x 18 B: fp32 weights, gradients, AdamW "
            "moments and the served copy; ZeRO shards nothing in one process) and 24.0 GiB is "
            "available: use a smaller --model, a GPU with more memory, or --optimizer torch "
            "with LoRA runs",
            id="no-zero-flag-is-stage-0",
        ),
    ],
)
def test_a_deepspeed_update_that_cannot_fit_is_one_line_naming_the_sizes(
    monkeypatch, zero, message
):
    simulate(monkeypatch, installed={"deepspeed"}, sizes={"big": SEVEN_B}, memory=24 * GB)
    with pytest.raises(BackendUnavailable) as caught:
        check_deepspeed(zero)
    assert str(caught.value) == message


def test_the_deepspeed_size_check_is_against_the_gpu_on_a_cuda_device(monkeypatch):
    asked = simulate(
        monkeypatch,
        installed={"deepspeed"},
        sizes={"small": 135_000_000, "big": SEVEN_B},
        memory=80 * GB,
    )
    with pytest.raises(BackendUnavailable, match="cannot fit big on cuda:1: .* 80.0 GiB"):
        check_deepspeed(1, models=["small", "big"], device="cuda:1")
    assert "memory:cuda:1" in asked


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_a_deepspeed_update_that_fits_goes_on(monkeypatch, zero):
    asked = simulate(monkeypatch, installed={"deepspeed"}, sizes={"big": SEVEN_B}, memory=200 * GB)
    check_deepspeed(zero)
    assert asked[-2:] == ["params:big", "memory:cpu"]


def test_a_model_of_unknown_size_or_a_machine_of_unknown_memory_is_not_refused(monkeypatch):
    asked = simulate(monkeypatch, installed={"deepspeed"}, sizes={}, memory=1 * GB)
    check_deepspeed(3, models=["some/moe"])
    assert "memory:cpu" not in asked  # nothing to size: memory is not even asked
    simulate(monkeypatch, installed={"deepspeed"}, sizes={"big": SEVEN_B}, memory=None)
    check_deepspeed(3)


def test_the_size_check_is_skipped_with_ray_and_for_the_torch_optimizer(monkeypatch):
    asked = simulate(
        monkeypatch,
        installed={"deepspeed", "ray"},
        answering={("10.0.0.5", 6379)},
        sizes={"big": SEVEN_B},
        memory=1 * GB,
    )
    check_deepspeed(3, ray_address="10.0.0.5:6379")  # the cluster's nodes hold the models
    check_backends(GatewaySettings(), models=["big"])
    assert not any(a.startswith(("params:", "memory:")) for a in asked)


def test_the_bundled_models_pass_the_size_check_with_the_real_probes():
    if not backends.module_installed("deepspeed"):
        pytest.skip("DeepSpeed is not installed here")
    for zero in (0, 1, 2, 3):  # SmolLM2 at ZeRO 1-3: 2.7 GiB at least; this box has ~20
        settings = GatewaySettings(optimizer="deepspeed", zero_stage=zero)
        check_backends(settings, models=["tiny", "smollm2-135m"])


# The real probes, on this machine.


def _random_model_parameters(model_type: str, **extra) -> tuple[dict, int]:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        model_type,
        vocab_size=96,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        **extra,
    )
    model = AutoModelForCausalLM.from_config(config)
    return config.to_dict(), sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("model_type", "extra"),
    [
        ("llama", {"tie_word_embeddings": True}),
        ("llama", {"tie_word_embeddings": False, "attention_bias": True, "mlp_bias": True}),
        ("mistral", {"tie_word_embeddings": False}),
        ("qwen2", {"tie_word_embeddings": False}),
        ("qwen3", {"tie_word_embeddings": True, "head_dim": 16}),
    ],
)
def test_count_parameters_from_a_config_matches_the_built_model(model_type, extra):
    config, expected = _random_model_parameters(model_type, **extra)
    assert backends.count_parameters(config) == expected


def test_model_parameters_knows_the_bundled_names_reads_a_directory_and_admits_ignorance(
    tmp_path, tiny_loaded
):
    assert backends.model_parameters("tiny") == sum(
        p.numel() for p in tiny_loaded.model.parameters()
    )
    assert backends.model_parameters("smollm2-135m") == 134_515_008
    (tmp_path / "config.json").write_text(json.dumps(tiny_loaded.model.config.to_dict()))
    assert backends.model_parameters(str(tmp_path)) == backends.KNOWN_PARAMETERS["tiny"]
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mixtral"}))
    assert backends.model_parameters(str(tmp_path)) is None
    assert backends.model_parameters(str(tmp_path / "missing")) is None
    assert backends.model_parameters("surely-not/a-cached-model") is None


def test_available_memory_reads_this_machine():
    assert backends.available_memory("cpu") > 0


def test_module_installed_finds_packages_without_importing_them():
    assert backends.module_installed("json")
    assert not backends.module_installed("surely_not_a_module_swarmrl")
    assert not backends.module_installed("json.surely_not_a_submodule")


def test_tcp_answers_tells_a_listening_port_from_a_closed_one():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert backends.tcp_answers("127.0.0.1", port, 1.0)
    assert not backends.tcp_answers("127.0.0.1", port, 1.0)


def test_local_ray_address_reads_ray_address_then_the_recorded_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert backends.local_ray_address() is None
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("10.1.2.3:6379\n")
    assert backends.local_ray_address() == "10.1.2.3:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6380")
    assert backends.local_ray_address() == "10.9.9.9:6380"


def test_this_venv_has_none_of_the_optional_backends_and_says_so():
    """The default probes on the CI box: no vLLM, Ray or DeepSpeed installed."""
    for flags, message in [
        ({"engine": "vllm"}, NOT_INSTALLED),
        ({"ray_address": "auto"}, NO_RAY),
        ({"optimizer": "deepspeed"}, NO_DEEPSPEED),
    ]:
        if any(backends.module_installed(m) for m in ("vllm", "ray", "deepspeed")):
            pytest.skip("an optional backend is installed here")
        with pytest.raises(BackendUnavailable) as caught:
            check_backends(GatewaySettings(**flags))
        assert str(caught.value) == message


def test_serve_sizes_a_deepspeed_update_against_the_machine_before_anything_starts(
    tmp_path, monkeypatch, nothing_starts
):
    asked = simulate(monkeypatch, installed={"deepspeed"}, sizes={"tiny": SEVEN_B}, memory=24 * GB)
    result = serve(tmp_path, "--optimizer", "deepspeed", "--zero", "2")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --optimizer deepspeed --zero 2 cannot fit tiny on cpu")
    assert result.stderr.count("\n") == 1
    assert "memory:cpu" in asked
    assert not (tmp_path / "gw").exists()
