"""Loading a workflow file, and cycling through its tasks.

Owns: the workflow contract's checks — a file that defines `tasks(split)` and
`async def rollout(task, episode)` — turned into `WorkflowError`s with messages a user can
act on (the file and line of a syntax error, the traceback of an exception at import, what
is missing), the file's `code_version`, and `TaskCycle`, which re-iterates `tasks(split)`
when it runs out and checks that every task is a dict with an "id".

Must not know about the gateway, episodes' wire types or concurrency (`swarm.runner`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from swarm.errors import WorkflowError

Task = dict[str, Any]
TasksFunction = Callable[..., Iterable[Task]]
RolloutFunction = Callable[[Task, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Workflow:
    path: Path
    tasks: TasksFunction
    rollout: RolloutFunction
    code_version: str
    module: ModuleType


def code_version(source: bytes) -> str:
    """The first 12 hex digits of the sha256 of a workflow file's bytes."""
    return hashlib.sha256(source).hexdigest()[:12]


def load_workflow(path: str | Path) -> Workflow:
    """Import the workflow file at `path` and check its two functions.

    The file's directory goes first on `sys.path`, so it may import modules beside it.
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
    return Workflow(
        path=path,
        tasks=tasks,
        rollout=rollout,
        code_version=code_version(source),
        module=module,
    )


def _execute(path: Path, code: Any) -> ModuleType:
    name = f"swarm_workflow_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look themselves up here
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # SystemExit/KeyboardInterrupt at import too: report, don't hang
        del sys.modules[name]
        if isinstance(error, KeyboardInterrupt):
            raise
        shown = format_user_traceback(error)
        raise WorkflowError(f"{path}: the workflow raised while being imported\n{shown}") from error
    return module


def format_user_traceback(error: BaseException) -> str:
    """The traceback of an error raised in the user's code, without our calling frame (the
    first one: where we called into the workflow)."""
    tb = error.__traceback__.tb_next if error.__traceback__ is not None else None
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
