"""The reads of a workflow's PARAMS that run when the file is imported.

Owns `params_read_at_import`: where a workflow's source reads PARAMS while it is imported
(module level, class bodies, decorators, default values), followed through names for
PARAMS (`P = PARAMS`, `get = PARAMS.get`, a parameter it is passed to), into the file's
own functions, constructors and methods (`self._load()`) that import-time code calls, and
one level into the modules beside the file that it imports (their top level, and their
functions it calls); and `describe_import_time_read`, those reads in words, naming the
line import runs and the fix. Everything is read with `ast`: nothing is imported or run.

Must not know about readings, studies, planners or the wrapper that sets an arm's PARAMS:
which keys matter, and refusing, are `researcher.user_workflow`'s.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# what reading PARAMS looks like: `PARAMS.get("k")`, and a copy, whose values are the defaults
_READ_METHODS = ("get", "setdefault", "pop")
_COPY_METHODS = ("copy", "items", "values")
_COPY_FUNCTIONS = ("dict", "copy", "deepcopy")
_CONSTRUCTORS = ("__init__", "__post_init__")  # what `Config()` runs of the module's class
_Kind = Literal["function", "method", "staticmethod", "classmethod"]


@dataclass(frozen=True)
class ImportTimeRead:
    """A read of PARAMS that runs when the file is imported, before an arm's PARAMS are set."""

    key: str | None  # None: which key cannot be told (a copy, a computed key)
    line: int  # where import runs it: the read itself, or the call that leads to it
    code: str  # that line, as written
    alias: str | None = None  # the name it reads through: "P is PARAMS", "get is PARAMS.get"
    # how the line reaches the read: the functions it calls ("_prompt()", "self._load()"),
    # and a module beside the workflow that it imports ("helpers.py")
    calls: tuple[str, ...] = ()
    read_line: int | None = None  # the read itself, when it is inside `calls`
    read_code: str | None = None
    read_file: str | None = None  # the module beside the workflow the read is in, if not it


@dataclass(frozen=True)
class _Names:
    """The names that stand for PARAMS in a scope: the dict (`P = PARAMS`) and its read
    methods (`get = PARAMS.get`), each mapped to how the message describes it ("PARAMS"
    for the name itself)."""

    dicts: dict[str, str]
    readers: dict[str, str]

    def without(self, shadowed: set[str]) -> _Names:
        return _Names({k: v for k, v in self.dicts.items() if k not in shadowed},
                      {k: v for k, v in self.readers.items() if k not in shadowed})  # fmt: skip


@dataclass
class _Module:
    """One parsed module: the workflow, or a module beside it that the workflow imports."""

    file: str | None  # "helpers.py" for a module beside the workflow; None: the workflow
    tree: ast.Module
    lines: list[str]
    parents: dict[ast.AST, ast.AST]
    names: _Names = field(default_factory=lambda: _Names({}, {}))
    functions: dict[str, _Function] = field(default_factory=dict)  # "f", "Config.load"
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    instances: dict[str, str] = field(default_factory=dict)  # `AGENT = Agent()`: AGENT → Agent
    modules: dict[str, _Module] = field(default_factory=dict)  # `import helpers as h`: h


@dataclass(frozen=True)
class _Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    module: _Module
    cls: str | None = None  # the class it is a method of
    kind: _Kind = "function"


@dataclass(frozen=True)
class _Scope:
    """Where import-time code runs: its module, the names for PARAMS there, the names for
    the instance or class of the method it is in (`self`, `cls`), and the calls (label,
    line, function or module) that led there from the workflow's top level."""

    module: _Module
    names: _Names
    selves: dict[str, tuple[str, _Kind]]  # `self` → (its class, the method's kind)
    calls: tuple[tuple[str, int, object], ...]


def params_read_at_import(source: str, *, path: str | Path | None = None) -> list[ImportTimeRead]:
    """Where `source` reads PARAMS while it is imported: `PARAMS["k"]`, `PARAMS.get("k")`
    (or `.setdefault`, `.pop`) and copies (`dict(PARAMS)`, `PARAMS.copy()`, `**PARAMS`,
    `.items()`, `.values()`) at module level, in a class body, a decorator or a default
    argument value — not in the body of a def or lambda, nor under `if __name__ ==
    "__main__":`. Followed through a name bound to PARAMS or to its read method (`P =
    PARAMS`, `get = PARAMS.get`, at module level or in a class body), into the body of the
    module's own functions (and lambdas, classes' constructors and the methods they call
    through `self`/`cls`, methods of a module-level instance) that import-time code calls
    or decorates with, however deep, with a parameter PARAMS is passed to standing for it;
    and, given the workflow's `path`, one level into the modules beside it that it imports
    (`import helpers`, `from helpers import build`, `from .helpers import build`): their
    top level, where `from <workflow> import PARAMS` names it, and their functions it
    calls. Such a read is reported at the line import runs, with the calls that lead to
    it. Passing the dict itself along (`f(PARAMS)`, `CFG = PARAMS`) is not a read: the
    arm's values land in that same dict. Read with `ast`, nothing run."""
    workflow = _module(source, None, _Names({"PARAMS": "PARAMS"}, {}))
    if path is not None:
        path = Path(path)
        _bind_siblings(workflow, path.parent, path.stem)
    found: list[ImportTimeRead] = []
    imported: set[str] = set()  # the modules beside it whose top level was followed

    def visit(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:  # `@register` calls register(...) now
                for label, callee, receiver in _callees(decorator, scope):
                    follow(label, callee, None, receiver, decorator.lineno, scope)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            decorators = [] if isinstance(node, ast.Lambda) else node.decorator_list
            for child in [*decorators, *node.args.defaults, *node.args.kw_defaults]:
                if child is not None:
                    visit(child, scope)
            return  # its body runs when it is called
        if isinstance(node, ast.ClassDef):  # its body runs now, with names of its own
            for child in [*node.decorator_list, *node.bases, *node.keywords]:
                visit(child, scope)
            names = _params_names(node.body, scope.names)
            for statement in node.body:
                visit(statement, _Scope(scope.module, names, scope.selves, scope.calls))
            return
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            for child in node.orelse:
                visit(child, scope)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)) and scope.module is workflow:
            for name in _sibling_names(node, workflow):
                sibling = workflow.modules[name]
                if sibling.file not in imported:  # a module runs its top level once
                    imported.add(sibling.file or "")
                    step = (sibling.file or name, node.lineno, sibling)
                    inner = _Scope(sibling, sibling.names, {}, (*scope.calls, step))
                    for statement in sibling.tree.body:
                        visit(statement, inner)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names = scope.names
            read: str | None | Literal[False] = False
            alias = names.dicts.get(node.id) or names.readers.get(node.id)
            if node.id in names.dicts:
                read = _params_read(node, scope.module.parents)
            elif node.id in names.readers and _called_as(node, scope.module.parents):
                read = _first_key(scope.module.parents[node])
            if read is not False:
                record(read, node.lineno, None if alias == "PARAMS" else alias, scope)
        if isinstance(node, ast.Call):
            for label, callee, receiver in _callees(node.func, scope):
                follow(label, callee, node, receiver, node.lineno, scope)
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    def follow(label: str, function: _Function, call: ast.Call | None, receiver: str | None,
               line: int, scope: _Scope) -> None:  # fmt: skip
        """Visit the body of `function`, called at `line` as `label` (`call`; with an
        instance of the class `receiver`, or that class, as its first argument, if any)."""
        if any(function.node is called for _, _, called in scope.calls):
            return  # recursion: its body is being visited already
        node = function.node
        body = [ast.Expr(node.body)] if isinstance(node, ast.Lambda) else node.body
        arguments = node.args
        positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        shadowed = {*positional, *(a.arg for a in arguments.kwonlyargs)}
        shadowed |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
        selves = {}
        if function.cls is not None and function.kind != "staticmethod" and positional:
            selves[positional[0]] = (receiver or function.cls, function.kind)  # `self`, `cls`
            positional = positional[1:] if receiver else positional
        passed = _passed_params(call, positional, scope) if call is not None else {}
        module_names = function.module.names.without(shadowed)
        names = _Names({**module_names.dicts, **passed}, module_names.readers)
        inner = _Scope(function.module, _params_names(body, names), selves,
                       (*scope.calls, (label, line, node)))  # fmt: skip
        for statement in body:
            visit(statement, inner)

    def record(key: str | None, line: int, alias: str | None, scope: _Scope) -> None:
        lines = scope.module.lines
        if not scope.calls:
            found.append(ImportTimeRead(key, line, lines[line - 1].strip(), alias))
            return
        first = scope.calls[0][1]
        found.append(ImportTimeRead(
            key, first, workflow.lines[first - 1].strip(), alias,
            tuple(label for label, _, _ in scope.calls), line, lines[line - 1].strip(),
            scope.module.file,
        ))  # fmt: skip

    visit(workflow.tree, _Scope(workflow, workflow.names, {}, ()))
    return found


def describe_import_time_read(
    path: str | Path, read: ImportTimeRead, params: dict[str, Any], keys: set[str]
) -> str:
    """`read` in words: the file, the line import runs, how it reaches the read, why every
    arm would run the defaults in `params` of `keys` (the PARAMS that matter), and the fix."""
    what = f'PARAMS["{read.key}"]' if read.key is not None else "PARAMS (a copy of it)"
    if read.alias:
        what += f" ({read.alias})"
    default = (
        f"your default {params[read.key]!r}" if read.key is not None
        else f"your defaults for {', '.join(sorted(keys))}"
    )  # fmt: skip
    key = read.key or sorted(keys)[0]
    how = f"reads {what}"
    use = f'use PARAMS["{key}"] in rollout() where you use the value, not a name set at import'
    if read.calls:
        how = "".join(
            f"{'imports' if label.endswith('.py') else 'calls'} {label}, which "
            for label in read.calls
        )
        where = f"line {read.read_line}" + (f" of {read.read_file}" if read.read_file else "")
        how += f"reads {what} at {where} (`{read.read_code}`),"
        first = read.calls[0]
        use = f"call {first} in rollout() where you use the value, not at import"
        if read.read_file and first.endswith(".py"):  # the top level of a module beside it
            use = (
                f"read PARAMS inside {read.read_file}'s functions and call them from "
                "rollout(), not at its top level (the PARAMS it imports from your file is the "
                "dict the study sets each arm's values into, after the import)"
            )
    return (
        f"{path}, line {read.line}: `{read.code}` {how} when the file is imported, before "
        f"the study sets each arm's PARAMS, so every arm would run {default} and the "
        f"treatment would equal the control: read PARAMS inside rollout()/tasks(): {use}"
    )


def _module(source: str, file: str | None, names: _Names) -> _Module:
    """`source` parsed: its names for PARAMS (starting from `names`), functions, classes
    and module-level instances of them."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    module = _Module(file, tree, source.splitlines(), parents)
    module.names = _params_names(tree.body, names)
    for statement in _own_statements(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.functions[statement.name] = _Function(statement, module)
        elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda):
            module.functions.update({t.id: _Function(statement.value, module)
                                     for t in statement.targets if isinstance(t, ast.Name)})  # fmt: skip
        elif isinstance(statement, ast.ClassDef):
            module.classes[statement.name] = statement
            for item in statement.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    module.functions[f"{statement.name}.{item.name}"] = _Function(
                        item, module, statement.name, _method_kind(item)
                    )
    for statement in _own_statements(tree.body):
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in module.classes:
                targets = statement.targets if isinstance(statement, ast.Assign) else [
                    statement.target]  # type: ignore[union-attr]  # fmt: skip
                module.instances.update({t.id: value.func.id for t in targets
                                         if isinstance(t, ast.Name)})  # fmt: skip
    return module


def _method_kind(function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Kind:
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod"):
            return "staticmethod" if decorator.id == "staticmethod" else "classmethod"
    return "method"


def _bind_siblings(workflow: _Module, folder: Path, stem: str) -> None:
    """Bind in `workflow` the names its imports give to the modules beside it (`import
    helpers as h`) and to their functions and classes (`from helpers import build`), each
    module parsed once; one level: what those import in turn is not followed."""
    parsed: dict[str, _Module | None] = {}

    def sibling(name: str) -> _Module | None:
        if name == stem or "." in name or not name.isidentifier():
            return None
        if name not in parsed:
            file = folder / f"{name}.py"
            try:
                source = file.read_text()
                dicts = {}  # `from my_agent import PARAMS as P` names the workflow's PARAMS
                for node in _own_statements(ast.parse(source).body):
                    if isinstance(node, ast.ImportFrom) and node.module == stem:
                        for alias in node.names:
                            if alias.name == "PARAMS" and alias.asname not in (None, "PARAMS"):
                                dicts[alias.asname] = f"{alias.asname} is PARAMS"
                            elif alias.name == "PARAMS":
                                dicts["PARAMS"] = "PARAMS"
                parsed[name] = _module(source, file.name, _Names(dicts, {}))
            except (OSError, SyntaxError, ValueError):
                parsed[name] = None
        return parsed[name]

    for node in _own_statements(workflow.tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if module := sibling(alias.name):
                    workflow.modules[alias.asname or alias.name] = module
        elif isinstance(node, ast.ImportFrom) and node.level <= 1:
            if node.module is None:  # `from . import helpers`
                for alias in node.names:
                    if node.level == 1 and (module := sibling(alias.name)):
                        workflow.modules[alias.asname or alias.name] = module
                continue
            if (module := sibling(node.module)) is None:
                continue
            workflow.modules.setdefault(f"<{node.module}>", module)  # followed at the import
            for alias in node.names:
                name = alias.asname or alias.name
                if alias.name in module.functions and name not in workflow.functions:
                    workflow.functions[name] = module.functions[alias.name]
                elif alias.name in module.classes and name not in workflow.classes:
                    workflow.classes[name] = module.classes[alias.name]
                    for method, function in list(module.functions.items()):
                        if method.startswith(f"{alias.name}."):
                            workflow.functions[f"{name}.{method.partition('.')[2]}"] = function


def _sibling_names(node: ast.Import | ast.ImportFrom, workflow: _Module) -> list[str]:
    """The keys of `workflow.modules` for the modules beside it that `node` imports."""
    if isinstance(node, ast.Import):
        return [a.asname or a.name for a in node.names if (a.asname or a.name) in workflow.modules]
    if node.module is None:
        return [a.asname or a.name for a in node.names if (a.asname or a.name) in workflow.modules]
    return [f"<{node.module}>"] if f"<{node.module}>" in workflow.modules else []


def _passed_params(call: ast.Call, positional: list[str], scope: _Scope) -> dict[str, str]:
    """The parameters of a function that `call` passes PARAMS (or a name for it) to, each
    described as a name for PARAMS: `build(PARAMS)` to `def build(params)`."""
    dicts = scope.names.dicts
    passed = {}
    for name, value in zip(positional, call.args, strict=False):
        if isinstance(value, ast.Starred):
            break
        if isinstance(value, ast.Name) and value.id in dicts:
            passed[name] = f"{name} is PARAMS"
    for keyword in call.keywords:
        if keyword.arg and isinstance(keyword.value, ast.Name) and keyword.value.id in dicts:
            passed[keyword.arg] = f"{keyword.arg} is PARAMS"
    return passed


def _params_names(body: list[ast.stmt], names: _Names) -> _Names:
    """`names` and the names `body`'s own statements (not those of a def or class in it)
    bind to PARAMS or to one of its read methods, `P = PARAMS` or `get = P.get`, through
    any number of such assignments."""
    dicts, readers = dict(names.dicts), dict(names.readers)
    assignments = []
    for statement in _own_statements(body):
        if isinstance(statement, ast.Assign):
            assignments += [(t.id, statement.value) for t in statement.targets
                            if isinstance(t, ast.Name)]  # fmt: skip
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if statement.value is not None:
                assignments.append((statement.target.id, statement.value))
    grew = True
    while grew:
        grew = False
        for target, value in assignments:
            if target in dicts or target in readers:
                continue
            if isinstance(value, ast.Name) and value.id in dicts:
                dicts[target] = f"{target} is PARAMS"
            elif (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id in dicts
                and value.attr in _READ_METHODS
            ):
                readers[target] = f"{target} is PARAMS.{value.attr}"
            else:
                continue
            grew = True
    return _Names(dicts, readers)


def _own_statements(body: list[ast.stmt]):
    """`body`'s statements and those nested in its if/for/while/with/try blocks, not those
    of a def or class in it."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            yield from _own_statements(getattr(statement, name, []))


def _callees(func: ast.expr, scope: _Scope) -> list[tuple[str, _Function, str | None]]:
    """The functions of the workflow (or of a module beside it) that calling `func` runs,
    each with how it was called and the class whose instance (or itself) comes as its
    first argument, if one does: `f()`, `Config()` (its constructors), `Config.load()`,
    `self._load()`, `cls()`, `AGENT.prompt()`, `helpers.build()`."""
    module = scope.module
    if isinstance(func, ast.Name):
        if func.id in module.functions:
            return [(f"{func.id}()", module.functions[func.id], None)]
        cls, kind = scope.selves.get(func.id, (func.id, None))
        if cls in module.classes and (kind is None or kind == "classmethod"):  # `cls()` too
            return [(f"{func.id}()", method, cls) for name in _CONSTRUCTORS
                    if (method := _method(module, cls, name)) is not None]  # fmt: skip
        return []
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return []
    owner, label = func.value.id, f"{func.value.id}.{func.attr}()"
    if owner in module.modules:  # `helpers.build()`, `helpers.Config()`
        sibling = module.modules[owner]
        inner = _Scope(sibling, sibling.names, {}, scope.calls)
        return [(f"{owner}.{name}", callee, receiver)
                for name, callee, receiver in _callees(ast.Name(id=func.attr), inner)]  # fmt: skip
    cls = scope.selves[owner][0] if owner in scope.selves else module.instances.get(owner)
    if cls is not None:  # `self._load()`, `cls.build()`, `AGENT.prompt()`
        method = _method(module, cls, func.attr)
        return [(label, method, None if method.kind == "staticmethod" else cls)] if method else []
    if owner in module.classes:  # `Config.load()`
        method = _method(module, owner, func.attr)
        return [(label, method, owner if method.kind == "classmethod" else None)] if method else []
    return []


def _method(
    module: _Module, cls: str, name: str, seen: frozenset = frozenset()
) -> _Function | None:
    """`cls.name` as Python finds it: the class's own, else a base class's of the module."""
    if (found := module.functions.get(f"{cls}.{name}")) is not None:
        return found
    node = module.classes.get(cls)
    for base in node.bases if node is not None and cls not in seen else []:
        if isinstance(base, ast.Name) and base.id in module.classes:
            if (found := _method(module, base.id, name, seen | {cls})) is not None:
                return found
    return None


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _called_as(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> bool:
    call = parents.get(node)
    return isinstance(call, ast.Call) and call.func is node


def _first_key(call: ast.AST) -> str | None:
    """The constant string key a read call (`PARAMS.get("k")`) reads, None when computed."""
    assert isinstance(call, ast.Call)
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _params_read(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> str | None | Literal[False]:
    """The key this use of PARAMS (or of a copy of it) reads (None: some key, which cannot
    be told), or False when it reads none (a write, an alias, the dict passed along)."""
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        if not isinstance(parent.ctx, ast.Load):
            return False  # PARAMS["k"] = ...: a write
        key = parent.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr in _READ_METHODS and _called_as(parent, parents):
            return _first_key(parents[parent])
        if parent.attr == "copy" and _called_as(parent, parents):
            return _copy_read(parents[parent], parents)
        return None if parent.attr in _COPY_METHODS else False
    if isinstance(parent, ast.keyword) and parent.arg is None:  # f(**PARAMS)
        return None
    if isinstance(parent, ast.Dict) and any(
        k is None and v is node for k, v in zip(parent.keys, parent.values, strict=True)
    ):  # {**PARAMS}
        return None
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return _copy_read(parent, parents) if called in _COPY_FUNCTIONS else False
    return False


def _copy_read(copy: ast.expr, parents: dict[ast.AST, ast.AST]) -> str | None:
    """What taking a copy of PARAMS at import reads: the key read from it at once
    (`PARAMS.copy()["k"]`), else every key (the copy keeps the defaults)."""
    read = _params_read(copy, parents)
    return read if isinstance(read, str) else None
