"""Reads of a workflow's PARAMS that run at import time: found where import runs them —
through names for PARAMS, the file's own functions, constructors and methods, and the
modules beside it that it imports — and a workflow that reads PARAMS only once rollout()
runs is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from researcher.params_at_import import params_read_at_import
from researcher.plan import Reading
from researcher.user_workflow import WorkflowFileError, refuse_params_read_at_import

PARAMS = {"system_prompt": "Answer.", "lr": 0.1}
READING = Reading(factor="workflow:system_prompt", levels=["Answer.", "Think."],
                  control="Answer.", task="workflow", held={"workflow:lr": 0.1})  # fmt: skip
ROLLOUT = """
def tasks(split="train"):
    return [{"id": f"{split}-0"}]

async def rollout(task, episode):
    return 1.0
"""


def reads(source: str) -> list[tuple[str | None, int]]:
    return [(read.key, read.line) for read in params_read_at_import(source)]


def workflow(tmp_path: Path, source: str, **beside: str) -> Path:
    """`my_agent.py` with `source`, and the modules beside it (`helpers="..."`)."""
    for name, text in beside.items():
        (tmp_path / f"{name}.py").write_text(text)
    path = tmp_path / "my_agent.py"
    path.write_text('PARAMS = {"system_prompt": "Answer.", "lr": 0.1}\n' + source + ROLLOUT)
    return path


def test_params_read_at_import_are_found_where_import_runs_them():
    source = (
        "import functools\n"
        "PARAMS = {'a': 1, 'b': 2, 'c': 3}\n"  # 2: the assignment is no read
        "A = PARAMS['a']\n"  # 3
        "def rollout(task, episode, b=PARAMS.get('b')):\n"  # 4: a default value runs at import
        "    return PARAMS['c'] + (lambda: PARAMS['c'])()\n"  # 5: run when called
        "class Config:\n"
        "    c = PARAMS.setdefault('c', 0)\n"  # 7: a class body runs at import
        "COPY = dict(PARAMS)\n"  # 8: every key, which cannot be told
        "EXTRA = {**PARAMS, 'd': 4}\n"  # 9
        "KEY = 'a'\nBY_NAME = PARAMS[KEY]\n"  # 11
        "SAME = PARAMS\nprint(PARAMS)\nPARAMS['e'] = 5\n"  # 12-14: the same dict, a write
        "F = lambda p=PARAMS['b']: p\n"  # 15: a lambda's default value runs at import
        "if __name__ == '__main__':\n    print(PARAMS['a'])\n"  # 17: not when imported
        "@functools.lru_cache(maxsize=PARAMS['c'])\ndef cached():\n    return 1\n"  # 18
    )
    assert reads(source) == [
        ("a", 3), ("b", 4), ("c", 7), (None, 8), (None, 9), (None, 11), ("b", 15), ("c", 18)
    ]  # fmt: skip


def test_params_read_at_import_are_followed_through_aliases_and_the_modules_own_functions():
    source = (
        "PARAMS = {'a': 1, 'b': 2, 'c': 3}\n"
        "P = PARAMS\nQ: dict = P\nget = Q.get\n"  # 2-4: names for the same dict: no read
        "A = Q['a']\n"  # 5: through two aliases
        "B = get('b')\n"  # 6: through a bound read method
        "C = PARAMS.copy()['c']\n"  # 7: the key read from a copy is told
        "def _prompt():\n    return P['a']\n"  # 9
        "def _outer():\n    return _prompt()\n"  # a second level
        "SYSTEM = _outer()\n"  # 12
        "def rollout(task, episode, limit=_prompt()):\n"  # 13: a default value runs at import
        "    return _prompt() + get('b')\n"  # run when called: no read at import
        "class Config:\n"
        "    def __init__(self):\n        self.c = PARAMS['c']\n"  # 17
        "    def later(self):\n        return PARAMS['a']\n"  # never called at import
        "    default = _prompt()\n"  # 20: a class body runs at import
        "CONFIG = Config()\n"  # 21: its __init__ runs
        "def _shadowed(P):\n    return P['a']\n"
        "OTHER = _shadowed({'a': 0})\n"  # its P is not PARAMS
        "def _loop(n):\n    return _loop(n - 1) if n else 0\n"
        "LOOP = _loop(3)\n"  # recursion ends
        "if __name__ == '__main__':\n    print(_prompt())\n"
    )
    found = {read.line: read for read in params_read_at_import(source)}
    assert [(read.key, line) for line, read in found.items()] == [
        ("a", 5), ("b", 6), ("c", 7), ("a", 12), ("a", 13), ("a", 20), ("c", 21)
    ]  # fmt: skip
    assert (found[5].alias, found[6].alias) == ("Q is PARAMS", "get is PARAMS.get")
    assert found[12].calls == ("_outer()", "_prompt()") and found[12].code == "SYSTEM = _outer()"
    assert (found[12].read_line, found[12].read_code) == (9, "return P['a']")
    assert found[21].calls == ("Config()",) and found[21].read_line == 17


def test_names_for_params_set_in_a_class_body_are_followed_there_and_only_there():
    source = (
        "PARAMS = {'lr': 1, 'system_prompt': 'x'}\n"
        "class Config:\n"
        "    P = PARAMS\n"
        "    lr = P['lr']\n"  # 4: a class body runs at import, its names with it
        "class C:\n"
        "    sys = PARAMS.get('system_prompt')\n"  # 6
        "    get = PARAMS.get\n"
        "    other = get('system_prompt')\n"  # 8
        "    def later(self):\n"
        "        return P['lr']\n"  # a method does not see the class body's names
    )
    found = params_read_at_import(source)
    assert [(read.key, read.line, read.alias) for read in found] == [
        ("lr", 4, "P is PARAMS"), ("system_prompt", 6, None),
        ("system_prompt", 8, "get is PARAMS.get"),
    ]  # fmt: skip


def test_methods_a_constructor_calls_through_self_are_followed():
    source = (
        "PARAMS = {'system_prompt': 'x', 'lr': 1}\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.prompt = self._load()\n"  # 4
        "    def _load(self):\n"
        "        return PARAMS['system_prompt']\n"  # 6
        "    def rate(self):\n"
        "        return PARAMS['lr']\n"
        "AGENT = Agent()\n"  # 9: runs __init__, which runs self._load()
        "RATE = AGENT.rate()\n"  # 10: a method of an instance made at import
        "class Base:\n"
        "    def __init__(self, params):\n"
        "        self.lr = self.scaled(params)\n"
        "class Child(Base):\n"
        "    @classmethod\n"
        "    def make(cls):\n"
        "        return cls(PARAMS)\n"
        "    def scaled(self, params):\n"
        "        return params['lr'] * 2\n"  # 19
        "CHILD = Child.make()\n"  # 20: a classmethod, the base's constructor, the dict passed on
    )
    found = {read.line: read for read in params_read_at_import(source)}
    assert [(read.key, line) for line, read in found.items()] == [
        ("system_prompt", 9), ("lr", 10), ("lr", 20)
    ]  # fmt: skip
    assert found[9].calls == ("Agent()", "self._load()") and found[9].read_line == 6
    assert found[10].calls == ("AGENT.rate()",)
    assert found[20].calls == ("Child.make()", "cls()", "self.scaled()")
    assert (found[20].read_line, found[20].alias) == (19, "params is PARAMS")


HELPER_READS_AT_ITS_TOP = """from my_agent import PARAMS
SYSTEM = PARAMS["system_prompt"]
"""
HELPER_BUILDS_FROM_PARAMS = """def build(params):
    return params["system_prompt"] + "!"
"""
HELPER_BUILDS_FROM_ITS_IMPORT = """from my_agent import PARAMS as P

def build():
    return P.get("system_prompt")
"""


@pytest.mark.parametrize(
    ("source", "helper", "refusal"),
    [
        ("import helpers\n", HELPER_READS_AT_ITS_TOP,
         r'line 2: `import helpers` imports helpers\.py, which reads PARAMS\["system_prompt"\] '
         r'at line 2 of helpers\.py \(`SYSTEM = PARAMS\["system_prompt"\]`\)'),
        ("from helpers import build\nSYSTEM = build(PARAMS)\n", HELPER_BUILDS_FROM_PARAMS,
         r'line 3: `SYSTEM = build\(PARAMS\)` calls build\(\), which reads '
         r'PARAMS\["system_prompt"\] \(params is PARAMS\) at line 2 of helpers\.py'),
        ("from .helpers import build\nSYSTEM = build()\n", HELPER_BUILDS_FROM_ITS_IMPORT,
         r'line 3: `SYSTEM = build\(\)` calls build\(\), which reads PARAMS\["system_prompt"\] '
         r"\(P is PARAMS\) at line 4 of helpers\.py"),
        ("import helpers as h\nSYSTEM = h.build(params=PARAMS)\n", HELPER_BUILDS_FROM_PARAMS,
         r"line 3: `SYSTEM = h\.build\(params=PARAMS\)` calls h\.build\(\), which reads"),
    ],
    ids=["its-top-level", "a-function-passed-params", "relative-import", "module-alias"],
)  # fmt: skip
def test_a_read_at_import_in_a_module_beside_the_workflow_is_refused(
    tmp_path: Path, source: str, helper: str, refusal: str
):
    path = workflow(tmp_path, source, helpers=helper)
    with pytest.raises(WorkflowFileError, match=refusal) as raised:
        refuse_params_read_at_import(READING, path, PARAMS)
    assert str(raised.value).startswith(f"{path}, line ")
    assert "every arm would run your default 'Answer.'" in str(raised.value)


def test_a_read_at_the_top_of_a_module_beside_it_says_to_read_inside_its_functions(
    tmp_path: Path,
):
    # the PARAMS a module beside the workflow imports from it is the dict the study sets
    # (swarm's loader makes `import my_agent` the module it runs), only not yet at import
    path = workflow(tmp_path, "import helpers\n", helpers=HELPER_READS_AT_ITS_TOP)
    with pytest.raises(WorkflowFileError) as raised:
        refuse_params_read_at_import(READING, path, PARAMS)
    assert str(raised.value).endswith(
        "read PARAMS inside rollout()/tasks(): read PARAMS inside helpers.py's functions and "
        "call them from rollout(), not at its top level (the PARAMS it imports from your file "
        "is the dict the study sets each arm's values into, after the import)"
    )


def test_a_workflow_that_reads_params_only_once_rollout_runs_is_accepted(tmp_path: Path):
    # every read below runs after the arm's PARAMS are set, or never at import
    source = """
import json
import helpers
from helpers import build, Prompter

ASK = lambda: PARAMS["system_prompt"]

def prompt():
    return PARAMS["system_prompt"]

class Agent:
    def __init__(self, params):
        self.params = params  # the same dict, read later
    def system(self):
        return self.params["system_prompt"]
    def unused(self):
        return PARAMS["lr"]

AGENT = Agent(PARAMS)
HANDLER = lambda task: build(PARAMS)
PROMPTER = Prompter()

if __name__ == "__main__":
    print(PARAMS["system_prompt"], prompt(), build(PARAMS), AGENT.unused())
"""
    helper = """
PARAMS = {"system_prompt": "its own dict, not the workflow's"}
OWN = PARAMS["system_prompt"]

def build(params):
    return params["system_prompt"]

class Prompter:
    def __init__(self):
        self.calls = 0
    def __call__(self, params):
        return params["lr"]
"""
    path = workflow(tmp_path, source, helpers=helper)
    refuse_params_read_at_import(READING, path, PARAMS)
    assert params_read_at_import(path.read_text(), path=path) == []


def test_only_module_files_beside_the_workflow_are_followed(tmp_path: Path):
    (tmp_path / "pkg").mkdir()  # a package, not a module file beside it
    (tmp_path / "pkg" / "__init__.py").write_text(HELPER_READS_AT_ITS_TOP)
    path = workflow(tmp_path, "import pkg\nimport json\nfrom os import path as helpers\n")
    refuse_params_read_at_import(READING, path, PARAMS)
