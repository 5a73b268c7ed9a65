"""The import arrows of DESIGN.md hold, and the light packages import with torch blocked."""

from __future__ import annotations

import ast
import subprocess
import sys
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


def test_gateway_app_and_swarm_import_with_torch_blocked():
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
