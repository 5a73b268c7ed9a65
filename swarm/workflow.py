"""Loading a workflow file, and cycling through its tasks.

Owns: the workflow contract's checks — a file that defines `tasks(split)` and
`async def rollout(task, episode)` — turned into `WorkflowError`s with messages a user can
act on (the file and line of a syntax error, the traceback of an exception at import, what
is missing), the workflow's `code_version` (its file, and the modules it imported from
beside it), executing a workflow file as the module `import <its stem>` returns too
(`execute_workflow_file`: a module beside it that imports the workflow gets the module
`swarm run` runs, not a second copy), which modules count as the user's own
(`local_modules`: what `swarm run --watch` watches and reloads), and `TaskCycle`, which
re-iterates `tasks(split)` when it runs out and checks that every task is a dict with an
"id".

Must not know about the gateway, episodes' wire types or concurrency (`swarm.runner`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import keyword
import sys
import sysconfig
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from swarm.errors import WorkflowError

Task = dict[str, Any]
TasksFunction = Callable[..., Iterable[Task]]
RolloutFunction = Callable[[Task, Any], Awaitable[Any]]
WORKFLOW_MODULE_PREFIX = "swarm_workflow_"
_stems: dict[str, ModuleType] = {}  # the workflow modules `execute_workflow_file` put under
# their file's stem in sys.modules, by stem


@dataclass(frozen=True)
class Workflow:
    path: Path
    tasks: TasksFunction
    rollout: RolloutFunction
    code_version: str
    module: ModuleType
    helper_files: tuple[Path, ...] = ()  # the modules it imported from beside it


def code_version(source: bytes, helpers: Mapping[str, bytes] | None = None) -> str:
    """The first 12 hex digits of the sha256 of a workflow file's bytes, followed by each
    helper module's relative path and bytes (sorted by path) when it imported any from
    beside it: an edit to `rewards.py` next to the workflow is a new code version too."""
    digest = hashlib.sha256(source)
    for name in sorted(helpers or {}):
        digest.update(b"\0" + name.encode() + b"\0" + helpers[name])
    return digest.hexdigest()[:12]


def source_version(path: Path, helper_files: Iterable[Path]) -> str:
    """`code_version` of the workflow at `path` and `helper_files` as they are on disk now
    (a file that went away counts as empty)."""
    return code_version(_read(path), {_relative(f, path.parent): _read(f) for f in helper_files})


def local_modules(directory: Path) -> dict[str, ModuleType]:
    """The modules in `sys.modules` loaded from files under `directory`: the user's own,
    which `swarm run --watch` reloads. Never `swarm` itself, a workflow file loaded by
    `load_workflow` (under its own name or its stem), nor anything installed (a virtualenv
    or site-packages inside the directory) or under a hidden folder."""
    directory = directory.resolve()
    installed = _installed_dirs()
    found = {}
    for name, module in list(sys.modules.items()):
        if name in ("__main__", "swarm") or name.startswith(("swarm.", WORKFLOW_MODULE_PREFIX)):
            continue
        if _stems.get(name) is module:  # a workflow file, under its stem
            continue
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        resolved = Path(file).resolve()
        if not resolved.is_relative_to(directory):
            continue
        parts = resolved.relative_to(directory).parts
        if any(p.startswith(".") or p in ("site-packages", "dist-packages") for p in parts):
            continue
        if any(resolved.is_relative_to(d) and not directory.is_relative_to(d) for d in installed):
            continue
        found[name] = module
    return found


def _installed_dirs() -> list[Path]:
    paths = sysconfig.get_paths()
    return [Path(paths[key]).resolve() for key in ("stdlib", "purelib", "platlib") if key in paths]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _relative(path: Path, directory: Path) -> str:
    return path.resolve().relative_to(directory.resolve()).as_posix()


def load_workflow(path: str | Path) -> Workflow:
    """Import the workflow file at `path` and check its two functions.

    The file's directory goes first on `sys.path`, so it may import modules beside it;
    those (`local_modules`) are its `helper_files` and count in its `code_version`.
    """
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise WorkflowError(f"{path}: no such workflow file")
    try:
        source = path.read_bytes()
        code = compile(source, str(path), "exec")
    except SyntaxError as error:
        where = f"{error.filename}, line {error.lineno}"
        shown = "".join(traceback.format_exception_only(error)).rstrip()
        raise WorkflowError(f"{where}: syntax error in the workflow file\n{shown}") from error
    except OSError as error:
        raise WorkflowError(f"{path}: cannot read the workflow file: {error}") from error

    module = _execute(path, code)
    tasks = getattr(module, "tasks", None)
    rollout = getattr(module, "rollout", None)
    missing = [name for name, value in (("tasks", tasks), ("rollout", rollout)) if value is None]
    if missing:
        raise WorkflowError(
            f"{path}: the workflow defines no {' and no '.join(f'`{m}`' for m in missing)}; "
            "it needs `def tasks(split='train')` and `async def rollout(task, episode)`"
        )
    if not callable(tasks):
        raise WorkflowError(f"{path}: `tasks` is a {type(tasks).__name__}, not a function")
    if not _is_async_callable(rollout):
        kind = "a synchronous function" if callable(rollout) else f"a {type(rollout).__name__}"
        raise WorkflowError(
            f"{path}: `rollout` is {kind}; it must be `async def rollout(task, episode)`"
        )
    helper_files = tuple(
        sorted(Path(helper.__file__).resolve() for helper in local_modules(path.parent).values())
    )
    return Workflow(
        path=path,
        tasks=tasks,
        rollout=rollout,
        code_version=code_version(
            source, {_relative(f, path.parent): _read(f) for f in helper_files}
        ),
        module=module,
        helper_files=helper_files,
    )


def workflow_module_name(path: Path) -> str:
    """The `sys.modules` name the workflow file at `path` (resolved) is imported under."""
    return (
        f"{WORKFLOW_MODULE_PREFIX}{hashlib.sha256(str(path).encode()).hexdigest()[:8]}_{path.stem}"
    )


def _execute(path: Path, code: Any) -> ModuleType:
    try:
        return execute_workflow_file(path, code, workflow_module_name(path))
    except BaseException as error:  # SystemExit/KeyboardInterrupt at import too: report, don't hang
        if isinstance(error, KeyboardInterrupt):
            raise
        shown = format_user_traceback(error, frames=2)
        raise WorkflowError(f"{path}: the workflow raised while being imported\n{shown}") from error


def execute_workflow_file(path: Path, code: Any, name: str) -> ModuleType:
    """Run `code`, compiled from the workflow file at `path`, as a new module `name` in
    `sys.modules` (dataclasses and pickle look themselves up there), with the file's folder
    first on `sys.path` so that it may import modules beside it.

    The module is in `sys.modules` under the file's stem too, where `import <stem>` finds
    that file (`import_name`): a module beside it that does `from my_agent import PARAMS`
    gets this module's PARAMS, the dict a study's wrapper sets an arm's values into, not a
    second copy of the file that nothing sets. What the code raises propagates, with those
    entries taken out again.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
        _forget_stale_names()  # an earlier file's stem may now find one in this folder
    stem = import_name(path)
    replaced = sys.modules.get(stem) if stem else None
    if stem:
        sys.modules[stem] = _stems[stem] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        if stem and sys.modules.get(stem) is module:
            del sys.modules[stem], _stems[stem]
            if replaced is not None:
                sys.modules[stem] = _stems[stem] = replaced
        raise
    return module


def import_name(path: Path) -> str | None:
    """The name `import` finds the workflow file at `path` under now: its stem, unless that
    is no module name, or names a module of the standard library (`json.py`), or one
    imported already under that name (`swarm.py`), or `import <stem>` would find another
    file first on `sys.path` (an installed package): a workflow never shadows a module. A
    workflow file executed earlier under another name and put under that stem (a wrapper
    named `workflow.py` around the user's `workflow.py`) may be replaced. None: no such name.
    """
    stem = path.stem
    if (
        not stem.isidentifier()
        or keyword.iskeyword(stem)
        or stem in sys.stdlib_module_names
        or stem in sys.builtin_module_names
    ):
        return None
    present = sys.modules.get(stem)
    if present is not None and _stems.get(stem) is not present:
        return None
    found = _found_file(stem)
    return stem if found is not None and found == path.resolve() else None


def _found_file(name: str) -> Path | None:
    """The file `import name` of a top-level module not yet imported would run."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec(name, None) if find_spec is not None else None
        if spec is not None:
            return Path(spec.origin).resolve() if spec.has_location and spec.origin else None
    return None


def _forget_stale_names() -> None:
    """Take out the stems `execute_workflow_file` put workflow modules under that `import`
    now finds another file for (`sys.path` changed)."""
    for stem, module in list(_stems.items()):
        if sys.modules.get(stem) is not module:  # evicted, or imported anew by someone
            del _stems[stem]
        elif _found_file(stem) != Path(module.__file__ or "").resolve():
            del sys.modules[stem], _stems[stem]


def format_user_traceback(error: BaseException, frames: int = 1) -> str:
    """The traceback of an error raised in the user's code, without our calling `frames` (the
    first ones: where we called into the workflow)."""
    tb = error.__traceback__
    for _ in range(frames):
        tb = tb.tb_next if tb is not None else None
    return "".join(traceback.format_exception(type(error), error, tb)).rstrip()


def _is_async_callable(value: Any) -> bool:
    return inspect.iscoroutinefunction(value) or (
        callable(value) and inspect.iscoroutinefunction(getattr(value, "__call__", None))  # noqa: B004
    )


class TaskCycle:
    """The tasks of `tasks(split)` one after another, forever: re-iterated when exhausted."""

    def __init__(self, tasks: TasksFunction, split: str = "train"):
        self.tasks = tasks
        self.split = split
        self.passes = 0  # how many times `tasks(split)` was called
        self._current: Iterator[Task] | None = None
        self._yielded_this_pass = 0

    def __iter__(self) -> TaskCycle:
        return self

    def __next__(self) -> Task:
        while True:
            if self._current is None:
                self._current = self._start_pass()
            try:
                task = next(self._current)
            except StopIteration:
                if self._yielded_this_pass == 0:
                    raise WorkflowError(f"tasks({self.split!r}) yielded no tasks") from None
                self._current = None
                continue
            except Exception as error:
                raise WorkflowError(
                    f"tasks({self.split!r}) raised\n{format_user_traceback(error)}"
                ) from error
            self._yielded_this_pass += 1
            return check_task(task, self.split)

    def _start_pass(self) -> Iterator[Task]:
        self.passes += 1
        self._yielded_this_pass = 0
        try:
            return iter(self.tasks(self.split))
        except Exception as error:
            raise WorkflowError(
                f"tasks({self.split!r}) raised\n{format_user_traceback(error)}"
            ) from error


def check_task(task: Any, split: str = "train") -> Task:
    if not isinstance(task, dict):
        raise WorkflowError(
            f"tasks({split!r}) yielded a {type(task).__name__} ({task!r:.80}); "
            "each task must be a dict with an 'id'"
        )
    if task.get("id") in (None, ""):
        raise WorkflowError(f"tasks({split!r}) yielded a task without an 'id': {task!r:.200}")
    return task
