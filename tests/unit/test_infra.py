"""infra/ stays true to the code: every file parses, and every command line, flag,
environment variable and copied path it names exists in this checkout.

Docker, Kubernetes and GPUs are not exercised here; `docker compose config` runs only
where the compose plugin is installed.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer.main
import yaml

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
CODE_DIRS = ("gateway", "researcher", "swarm", "experiments_db", "trainer")


def load_yaml(name: str) -> list[dict]:
    return list(yaml.safe_load_all((INFRA / name).read_text()))


def options_of(app: typer.Typer, command: str) -> set[str]:
    click_command = typer.main.get_command(app).commands[command]
    return {opt for param in click_command.params for opt in param.opts + param.secondary_opts}


def envvars_of(app: typer.Typer, command: str) -> set[str]:
    click_command = typer.main.get_command(app).commands[command]
    return {param.envvar for param in click_command.params if isinstance(param.envvar, str)}


def flags_in(args: list[str]) -> list[str]:
    return [arg.split("=", 1)[0] for arg in args if arg.startswith("--")]


def gateway_serve_options() -> set[str]:
    from gateway.__main__ import cli

    return options_of(cli, "serve")


def dockerfile_instructions(name: str) -> list[tuple[str, str]]:
    text = (INFRA / name).read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_name(spec: str) -> str:
    # a distribution name as its import name (pydantic-core → pydantic_core)
    return re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].strip().lower().replace("-", "_")


def test_every_yaml_file_under_infra_parses():
    files = sorted(INFRA.rglob("*.yaml")) + sorted(INFRA.rglob("*.yml"))
    assert {f.relative_to(INFRA).as_posix() for f in files} >= {
        "compose.yaml",
        "ray/cluster.yaml",
        "k8s/kuberay-gateway.yaml",
    }
    for file in files:
        assert all(doc for doc in yaml.safe_load_all(file.read_text())), file


def test_the_readme_names_every_infra_file():
    readme = (INFRA / "README.md").read_text()
    for file in INFRA.rglob("*"):
        if file.is_file() and file.name != "README.md":
            assert file.relative_to(INFRA).as_posix() in readme, file


def test_compose_runs_gateway_postgres_and_ui_each_with_a_healthcheck():
    (compose,) = load_yaml("compose.yaml")
    services = compose["services"]
    assert set(services) == {"gateway", "postgres", "ui"}
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
    assert services["ui"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["gateway"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name, service in services.items():
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            if source.startswith("."):
                assert (INFRA / source).exists(), (name, mount)
            else:
                assert source in compose["volumes"], (name, mount)


def test_compose_sets_only_environment_variables_the_code_reads():
    (compose,) = load_yaml("compose.yaml")
    source = "\n".join(path.read_text() for d in CODE_DIRS for path in (ROOT / d).rglob("*.py"))
    for name, service in compose["services"].items():
        for var in service.get("environment", {}):
            if var.startswith("SWARMRL_"):
                assert f'"{var}"' in source, (name, var)


def test_compose_gives_the_gateway_and_the_ui_their_database_urls():
    from gateway.__main__ import cli
    from researcher.cli import app

    (compose,) = load_yaml("compose.yaml")
    gateway_db_var = "SWARMRL_GATEWAY_DB_URL"
    assert gateway_db_var in envvars_of(cli, "serve")
    assert "SWARMRL_DB_URL" in envvars_of(app, "ui")
    gateway_env = compose["services"]["gateway"]["environment"]
    ui_env = compose["services"]["ui"]["environment"]
    assert gateway_env[gateway_db_var].startswith("postgresql://")
    assert ui_env["SWARMRL_DB_URL"].startswith("postgresql://")
    assert gateway_env[gateway_db_var] != ui_env["SWARMRL_DB_URL"]  # two databases
    assert "SWARMRL_API_KEY" in gateway_env
    assert "SWARMRL_UI_TOKEN" in envvars_of(app, "ui") and "SWARMRL_UI_TOKEN" in ui_env


def test_compose_commands_use_flags_that_exist():
    from researcher.cli import app

    (compose,) = load_yaml("compose.yaml")
    services = compose["services"]
    assert set(flags_in(services["gateway"]["command"])) <= gateway_serve_options()
    assert services["ui"]["entrypoint"] == ["researcher", "ui"]
    assert set(flags_in(services["ui"]["command"])) <= options_of(app, "ui")
    assert "--host" in services["gateway"]["command"][0]  # reachable from the other services


def test_the_systemd_unit_runs_gateway_serve_with_existing_flags_and_restarts_always():
    text = (INFRA / "systemd/swarmrl-gateway.service").read_text().replace("\\\n", " ")
    settings = dict(
        line.split("=", 1)
        for line in text.splitlines()
        if "=" in line and not line.startswith("#") and not line.startswith("Environment=")
    )
    argv = shlex.split(settings["ExecStart"])
    assert argv[0].endswith("/gateway") and argv[1] == "serve"
    assert set(flags_in(argv)) <= gateway_serve_options()
    assert settings["Restart"] == "always"
    assert settings["StateDirectory"] == "swarmrl"
    state_dir = argv[argv.index("--state-dir") + 1]
    assert state_dir.startswith("/var/lib/swarmrl/")  # inside StateDirectory=
    assert "[Install]" in text and "WantedBy=multi-user.target" in text


def test_the_gateway_image_installs_the_gpu_and_cluster_extras_and_serves():
    instructions = dockerfile_instructions("gateway.Dockerfile")
    assert instructions[0][0] == "FROM" and "nvidia/cuda" in instructions[0][1]
    runs = " ".join(arg for op, arg in instructions if op == "RUN")
    assert 'pip install ".[gpu,cluster]"' in runs
    extras = pyproject()["project"]["optional-dependencies"]
    assert {"gpu", "cluster"} <= set(extras)
    entrypoint = [json.loads(arg) for op, arg in instructions if op == "ENTRYPOINT"]
    assert entrypoint == [["gateway", "serve"]]
    cmd = [json.loads(arg) for op, arg in instructions if op == "CMD"][-1]
    assert set(flags_in(cmd)) <= gateway_serve_options()


def test_the_client_image_installs_no_torch_and_runs_swarm():
    instructions = dockerfile_instructions("client.Dockerfile")
    runs = " ".join(arg for op, arg in instructions if op == "RUN")
    assert "pip install --no-deps ." in runs
    assert "torch" not in client_requirements()
    entrypoint = [json.loads(arg) for op, arg in instructions if op == "ENTRYPOINT"]
    assert entrypoint == [["swarm"]]


@pytest.mark.parametrize("dockerfile", ["gateway.Dockerfile", "client.Dockerfile"])
def test_dockerfiles_copy_only_paths_that_exist(dockerfile):
    # build context: the repository root (compose.yaml: context ..)
    copies = [arg.split() for op, arg in dockerfile_instructions(dockerfile) if op == "COPY"]
    assert copies
    for *sources, _dest in copies:
        for source in sources:
            assert (ROOT / source).exists(), (dockerfile, source)
    copied = {source for *sources, _ in copies for source in sources}
    packages = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    for package in packages:  # `pip install .` needs every package pyproject names
        assert package.rstrip("*") in copied, (dockerfile, package)


def client_requirements() -> dict[str, str]:
    lines = (INFRA / "client-requirements.txt").read_text().splitlines()
    specs = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return {requirement_name(spec): spec for spec in specs}


def third_party_imports(package: Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__", package.name}


@pytest.mark.slow
def test_the_client_requirements_cover_every_third_party_import_of_swarm():
    imports = third_party_imports(ROOT / "swarm")
    assert imports >= {"httpx", "pydantic"}  # the walk sees the SDK's imports
    assert imports <= set(client_requirements()), imports - set(client_requirements())


def test_the_client_requirements_match_the_project_dependencies():
    declared = {requirement_name(spec): spec for spec in pyproject()["project"]["dependencies"]}
    for name, spec in client_requirements().items():
        assert declared.get(name) == spec, (name, spec, declared.get(name))


def test_the_kuberay_manifest_is_a_ray_io_v1_raycluster_whose_head_serves_the_gateway():
    docs = load_yaml("k8s/kuberay-gateway.yaml")
    kinds = {(doc["apiVersion"], doc["kind"]) for doc in docs}
    assert kinds == {
        ("ray.io/v1", "RayCluster"),
        ("v1", "Service"),
        ("v1", "PersistentVolumeClaim"),
    }
    (cluster,) = [doc for doc in docs if doc["kind"] == "RayCluster"]
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    (gateway,) = [c for c in head["containers"] if c["name"] == "gateway"]
    assert set(flags_in(gateway["args"])) <= gateway_serve_options()
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/healthz"
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for v in head["volumes"]
        if "persistentVolumeClaim" in v
    }
    assert claims == {
        doc["metadata"]["name"] for doc in docs if doc["kind"] == "PersistentVolumeClaim"
    }
    workers = cluster["spec"]["workerGroupSpecs"]
    assert any(
        "nvidia.com/gpu" in c["resources"]["limits"]
        for group in workers
        for c in group["template"]["spec"]["containers"]
    )
    (service,) = [doc for doc in docs if doc["kind"] == "Service"]
    assert service["spec"]["selector"]["ray.io/cluster"] == cluster["metadata"]["name"]


def test_the_ray_cluster_config_has_a_head_and_gpu_workers_on_the_gateway_image():
    (config,) = load_yaml("ray/cluster.yaml")
    assert config["head_node_type"] in config["available_node_types"]
    assert "gpu_worker" in config["available_node_types"]
    assert "swarmrl-gateway" in config["docker"]["image"]
    assert any("ray start --head" in c for c in config["head_start_ray_commands"])
    assert any("ray start --address" in c for c in config["worker_start_ray_commands"])


def docker_compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20)
    return probe.returncode == 0


@pytest.mark.skipif(
    not docker_compose_available(),
    reason="no `docker compose` (the compose plugin) on this machine",
)
def test_docker_compose_accepts_the_compose_file():
    env = INFRA / "env.example"
    result = subprocess.run(
        [
            "docker",
            "compose",
            "-f",
            str(INFRA / "compose.yaml"),
            "--env-file",
            str(env),
            "config",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
