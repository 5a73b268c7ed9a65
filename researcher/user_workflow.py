"""The user's own workflow (`researcher start --workflow FILE`): read it, wrap it per arm.

Owns: `inspect_workflow` — the file's `PARAMS = {...}` read with `ast`
(never executed for this; a PARAMS that is not a literal dict is refused, naming the line)
and whether it has a held-out split (`tasks("test")` yields a task, and how many, up to
`TEST_SIZE_CAP`: checked by importing the file in a subprocess under a time limit, whose
error is reported; a train split that raises or yields nothing, tasks without an "id" and
a multi-policy team are refused there too, each in a first line naming the fix). The
gates (`require_test_split`: `researcher plan`/`start`, the web form) import it with the
environment a study client gets (`client_env`'s allow-list and the study's
`client_env_allow`), so a variable clients lack fails there, naming it. The probe also
counts the test split's distinct ids and how many of its first ids `tasks("train")` yields
too; the last inspection of each file's content is kept for the reading (`inspected`).
`client_env_allow` is the one rule for the names a study's clients get on top of that
allow-list (`--client-env`, the web start form's field).
`with_sampling_reach` is where the reading meets the workflow's code: it refuses a
workflow that reads at import time a PARAM the question varies or holds (found by
`researcher.params_at_import`: every arm would run the default), notes a test split that repeats ids or overlaps
the train split, and says how a sampling factor reaches the workflow's model calls; and
`render_wrapper`, the source of the workflow file each arm runs
(`prompts/workflows/user.py.j2`): it imports the user's file by its absolute path, puts the
arm's `workflow_params` into the module's `PARAMS` dict (and into
`$SWARMRL_WORKFLOW_PARAMS` as JSON, set before the file is imported) and re-exports
`tasks` and `rollout`. A sampling setting (temperature, max_tokens) that PARAMS does not
declare is sent with every chat completion the rollout makes through `episode.openai()`
in training (held-out evaluation keeps temperature 0); any other undeclared name is
refused. The user's file is never edited.

Must not know about LangGraph, the gateway or the database.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import prompts
from researcher.errors import ClientEnvRefused, ResearcherError
from researcher.launcher.local import (
    ALLOWED_ENV_NAMES,
    ALLOWED_ENV_PREFIXES,
    client_env,
    is_scrubbed,
    never_passed,
)
from researcher.params_at_import import describe_import_time_read, params_read_at_import
from researcher.plan import Arm, Framing, Reading
from researcher.planner.budget import MAX_EVAL_EPISODES

WRAPPER_TEMPLATE = "workflows/user.py.j2"
PARAMS_ENV = "SWARMRL_WORKFLOW_PARAMS"
TEST_SPLIT = "test"
PROBE_TIMEOUT_S = 20.0
# a workflow that imports a reward model or loads a dataset may need longer: seconds, here
PROBE_TIMEOUT_ENV = "SWARMRL_WORKFLOW_PROBE_S"
# the test split is counted up to this many tasks: more than any study judges a run on
TEST_SIZE_CAP = 1000
# the first this many ids of each split are compared: a tasks() that ignores its split
# yields the same ones for both
OVERLAP_SAMPLE = 50
# sampling settings an arm may set on a workflow whose PARAMS does not declare them: sent
# with every chat completion of a training episode (held-out evaluation stays greedy)
SAMPLING = ("temperature", "max_tokens")
POLICY = "policy"  # the one policy every run of a study trains (`researcher.nodes.launch`)
SWARM_ROOT = Path(__file__).resolve().parents[1]  # where `swarm` imports from, for the probe

# Imports the workflow as `swarm run` does and draws the first tasks of its train split (the
# study trains on it) and of its test split (counted, up to a cap); prints one JSON line. A
# split that fails is described by `problem` (one line: what went wrong), `fix` (one line:
# what to change) and `detail` (the user's traceback, when tasks() raised).
_PROBE = """
import itertools, json, sys
from swarm.errors import WorkflowError
from swarm.workflow import check_task, format_user_traceback, load_workflow


def draw(tasks, split, n):
    call = f'tasks("{split}")'
    try:
        found = list(itertools.islice(tasks(split), n))
    except Exception as error:
        last = format_user_traceback(error).splitlines()[-1].strip()
        return None, {"problem": f"{call} raised {last}", "detail": format_user_traceback(error),
                      "fix": f'make tasks(split) work for split == "{split}"'}
    if not found:
        return None, {"problem": f"{call} yielded no tasks",
                      "fix": f'make tasks(split) yield tasks for split == "{split}"'
                             + (' (held out: kept apart from "train")' if split == "test" else "")}
    try:
        for task in found:
            check_task(task, split)
    except WorkflowError as error:
        return None, {"problem": str(error),
                      "fix": 'make every task a dict with an "id" (str or int), e.g. '
                             '{"id": "q-1", "question": ...}'}
    return found, None


def first_ids(tasks, split, n):
    ids = []
    try:
        for task in itertools.islice(tasks(split), n):
            if isinstance(task, dict) and isinstance(task.get("id"), (str, int)):
                ids.append(task["id"])
    except Exception:  # the first task was checked; these ids only feed the overlap count
        pass
    return ids


try:
    workflow = load_workflow(sys.argv[1])
except WorkflowError as error:
    cause = error.__cause__
    missing = cause.name if isinstance(cause, ModuleNotFoundError) else None
    print(json.dumps({"loads": False, "error": str(error), "missing": missing}))
    sys.exit(0)
out = {"loads": True}
_, out["train_problem"] = draw(workflow.tasks, "train", 1)
found, out["test_problem"] = draw(workflow.tasks, sys.argv[2], int(sys.argv[3]))
out["has_test"] = found is not None
out["test_size"] = len(found) if found is not None else None
if found is not None and out["train_problem"] is None:
    sample = int(sys.argv[4])
    out["test_distinct"] = len({task["id"] for task in found})
    # a run is judged on distinct tasks (swarm.evaluate.first_tasks)
    out["judged_distinct"] = min(out["test_distinct"], int(sys.argv[5]))
    head = list(dict.fromkeys(task["id"] for task in found[:sample]))
    train = set(first_ids(workflow.tasks, "train", sample))
    out["overlap"] = [sum(i in train for i in head), len(head)]
print(json.dumps(out))
"""


class WorkflowFileError(ResearcherError):
    """The user's workflow file cannot be studied: missing, unreadable, a syntax error, a
    PARAMS that is not a literal dict, or it does not import."""


@dataclass(frozen=True)
class UserWorkflow:
    path: Path
    params: dict[str, Any]  # its PARAMS defaults ({} when it declares none)
    has_test: bool
    test_problem: str | None = None  # why it has no test split, in one line
    test_size: int | None = None  # tasks in tasks("test"), counted up to TEST_SIZE_CAP
    test_fix: str | None = None  # what to change so that it has one, in one line
    test_detail: str | None = None  # the traceback, when tasks("test") raised
    test_distinct: int | None = None  # distinct ids among the test_size tasks counted
    # (how many of the first distinct test ids also come among the first OVERLAP_SAMPLE
    # train ids, how many were compared)
    overlap: tuple[int, int] | None = None
    judged_distinct: int | None = None  # distinct ids among the first MAX_EVAL_EPISODES


# the last inspection of each workflow file, by (path, sha256 of its content): what the probe
# found reaches the planner's reading without importing the file again
_INSPECTED: dict[tuple[Path, str], UserWorkflow] = {}


def read_params(path: str | Path) -> dict[str, Any]:
    """The literal value of the file's top-level `PARAMS = {...}` (the last one when it is
    assigned twice), {} when it has none."""
    path = Path(path)
    try:
        source = path.read_text()
    except OSError as error:
        raise WorkflowFileError(f"{path}: cannot read the workflow file: {error}") from error
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as error:
        raise WorkflowFileError(
            f"{path}, line {error.lineno}: syntax error in the workflow file: {error.msg}"
        ) from error
    params: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in targets):
            continue
        try:
            found = ast.literal_eval(value)
        except ValueError:
            found = None
        if not isinstance(found, dict) or not all(isinstance(k, str) for k in found):
            raise WorkflowFileError(
                f"{path}, line {node.lineno}: PARAMS must be a literal dict of names to values "
                f'(PARAMS = {{"system_prompt": "...", "max_tokens": 64}}), read without running '
                f"the file; this one is `{ast.get_source_segment(source, value) or '...'}`"[:600]
            )
        params = found
    return params


def inspect_workflow(
    path: str | Path,
    *,
    timeout_s: float | None = None,
    client_env_allow: Iterable[str] | None = None,
) -> UserWorkflow:
    """PARAMS, and whether `tasks("test")` yields a task and how many (the file imported in
    a subprocess with `timeout_s`, by default `$SWARMRL_WORKFLOW_PROBE_S` or
    `PROBE_TIMEOUT_S`: a file that does not import is a `WorkflowFileError`). With
    `client_env_allow` the file is imported with the environment a study client gets (the
    allow-list plus those names, its own HOME), as a gate must; None: with this process's
    own (re-reading a workflow a gate already admitted)."""
    if timeout_s is None:
        timeout_s = _probe_timeout_s()
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise WorkflowFileError(f"{path}: no such workflow file")
    params = read_params(path)
    pythonpath = os.pathsep.join(p for p in (str(SWARM_ROOT), os.environ.get("PYTHONPATH")) if p)
    allow = None if client_env_allow is None else tuple(client_env_allow)
    argv = [sys.executable, "-c", _PROBE, str(path), TEST_SPLIT, str(TEST_SIZE_CAP),
            str(OVERLAP_SAMPLE), str(MAX_EVAL_EPISODES)]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="swarmrl-probe-home-") as home:
        if allow is None:
            env = {**os.environ, "PYTHONPATH": pythonpath}
        else:
            env = client_env({"PYTHONPATH": pythonpath}, home=Path(home), allow=allow)
        try:
            probe = subprocess.run(
                argv, cwd=path.parent, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=timeout_s,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise WorkflowFileError(
                f"{path}: importing it and calling tasks({TEST_SPLIT!r}) took over {timeout_s:g} "
                "s: yield tasks lazily if tasks() downloads or computes a lot up front, or allow "
                f"it longer with {PROBE_TIMEOUT_ENV}=120 (seconds) for a slow import"
            ) from None
    lines = [line for line in probe.stdout.splitlines() if line.startswith("{")]
    if probe.returncode != 0 or not lines:
        raise WorkflowFileError(
            f"{path}: checking the workflow failed (exit {probe.returncode}):\n"
            f"{(probe.stderr or probe.stdout).strip()[-2000:]}"
        )
    found = json.loads(lines[-1])
    if not found["loads"]:
        if missing := found.get("missing"):  # the first line says what to install, and where
            raise WorkflowFileError(
                f"{path} cannot be studied: it imports {missing!r}, which is not installed in the "
                f"Python that runs the study's workflows ({sys.executable}): install the package "
                f"that provides it there ({sys.executable} -m pip install ...)\n{found['error']}"
            )
        error = found["error"]
        if allow is not None and (hint := _client_env_hint(error, allow, unnamed=True)):
            first, _, rest = error.partition("\n")
            error = f"{first}: {hint}" + (f"\n{rest}" if rest else "")
        raise WorkflowFileError(error)
    if train := found.get("train_problem"):
        if allow is not None and (hint := _client_env_hint(train.get("detail") or "", allow)):
            train["fix"] = hint
        raise WorkflowFileError(
            _unusable(path, train, 'every run trains on tasks("train") (what `swarm run` draws)')
        )
    if team := [name for name in team_policies(path) if name != POLICY]:
        raise WorkflowFileError(
            f"{path} cannot be studied: its rollout calls the policies "
            f"{', '.join(map(repr, team))} by name (episode.models[...]), a multi-policy team, and "
            f"every run of a study trains one policy, {POLICY!r}: study a workflow that calls "
            "episode.model (train the team itself with `swarm run` on a run with those policies)"
        )
    if unknown := [(key, line) for key, line in reward_policies(path) if key != POLICY]:
        names = sorted({key for key, _ in unknown})
        raise WorkflowFileError(
            f"{path}, line {unknown[0][1]}: rollout returns a reward for unknown "
            f"polic{'ies' if len(names) > 1 else 'y'} {', '.join(names)}; this run's policies "
            f"are: {POLICY}. Every run of a study trains one policy, {POLICY!r}: return the "
            f'reward as a float (or {{"{POLICY}": reward}})'
        )
    test = found.get("test_problem") or {}
    if allow is not None and (hint := _client_env_hint(test.get("detail") or "", allow)):
        test["fix"] = hint
    overlap = found.get("overlap")
    inspected = UserWorkflow(
        path, params, found["has_test"], test.get("problem"), found.get("test_size"),
        test.get("fix"), test.get("detail"), found.get("test_distinct"),
        tuple(overlap) if overlap else None, found.get("judged_distinct"),
    )  # fmt: skip
    _INSPECTED[(path, _sha256(path))] = inspected
    return inspected


def inspected(path: str | Path) -> UserWorkflow | None:
    """The last `inspect_workflow` of this file as it is now; None when its content changed
    since, or it was never inspected in this process."""
    path = Path(path).expanduser().resolve()
    try:
        return _INSPECTED.get((path, _sha256(path)))
    except OSError:
        return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def client_env_allow(names: Iterable[str], *, given_as: str = "--client-env") -> list[str]:
    """The variables a study's clients are to get on top of the allow-list (`--client-env`,
    the web start form's field), each once, in order; `ClientEnvRefused`, naming them as
    `given_as`, for one that is not a variable's name or that a client is never handed
    (`never_passed`: the researcher's database and planner credentials)."""
    names = list(dict.fromkeys(names))
    if bad := [name for name in names if not _ENV_NAME.fullmatch(name)]:
        raise ClientEnvRefused(
            f"{given_as} {', '.join(map(repr, bad))}: not the name of an environment variable "
            "(letters, digits and _, such as ACME_JUDGE_URL; its value is taken from the "
            "environment the study starts in)"
        )
    if refused := [name for name in names if never_passed(name)]:
        raise ClientEnvRefused(
            f"{given_as} {', '.join(refused)}: never passed to a client (the researcher's "
            "database and planner credentials stay with it)"
        )
    return names


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def client_env_names(allow: Iterable[str] = ()) -> str:
    """The variables a study client gets from this environment, in words (a lower-case
    spelling of an upper-case name left out)."""
    names = {*ALLOWED_ENV_NAMES, *allow} - {"HOME"}
    shown = sorted(name for name in names if name == name.upper() or name.upper() not in names)
    return ", ".join([*shown, *(f"{prefix}*" for prefix in ALLOWED_ENV_PREFIXES)])


def _client_env_hint(text: str, allow: Iterable[str], *, unnamed: bool = False) -> str | None:
    """What to do when `text` (a traceback from the probe, run with a client's environment)
    names a variable set here that a client does not get; with `unnamed`, also when it
    failed on a KeyError from os.environ for a variable not set here either."""
    allow = tuple(allow)
    named = [name for name in sorted(os.environ)
             if is_scrubbed(name, allow) and re.search(rf"['\"]{re.escape(name)}['\"]", text)]  # fmt: skip
    gets = (
        f"study clients get only {client_env_names(allow)} from your environment "
        "(and HOME is their own folder)"
    )
    if named:
        what, set_ = ", ".join(named), "set here but not passed to study clients"
    elif unnamed and "environ" in text and (key := re.search(r"KeyError: '(\w+)'", text)):
        named, set_ = [key[1]], "not set here, and study clients would not get it either"
        what = key[1]
    else:
        return None
    flags = " ".join(f"--client-env {name}" for name in named)
    return (
        f"it reads {what}, {set_}: set it and pass it with {flags} (`researcher plan`/`start`; "
        "the web start form's extra environment variables for clients; client_env_allow in a "
        f"study's settings); {gets}"
    )


def _probe_timeout_s() -> float:
    raw = os.environ.get(PROBE_TIMEOUT_ENV, "").strip()
    if not raw:
        return PROBE_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise WorkflowFileError(
            f"{PROBE_TIMEOUT_ENV}={raw!r} is not a number of seconds above 0 (e.g. 120)"
        )
    return seconds


def _unusable(path: Path, problem: dict[str, str], why: str) -> str:
    """One line saying what is wrong with the workflow, why it matters and what to change;
    the user's traceback below it when its tasks() raised."""
    line = f"{path} cannot be studied: {problem['problem']}; {why}: {problem['fix']}"
    return line + (f"\n{problem['detail']}" if problem.get("detail") else "")


def require_test_split(path: str | Path, *, client_env_allow: Iterable[str] = ()) -> UserWorkflow:
    """`inspect_workflow` with a study client's environment (the allow-list plus
    `client_env_allow`), refusing a workflow without a held-out split: the study judges
    every arm on `tasks("test")`."""
    found = inspect_workflow(path, client_env_allow=client_env_allow)
    if not found.has_test:
        raise WorkflowFileError(no_test_split(found))
    return found


def no_test_split(found: UserWorkflow) -> str:
    """Why `found` cannot be judged, in one line naming the fix (its traceback below it)."""
    problem = {
        "problem": found.test_problem or 'tasks("test") yielded no tasks',
        "fix": found.test_fix or 'make tasks(split) yield held-out tasks for split == "test"',
        "detail": found.test_detail,
    }
    return _unusable(
        found.path, problem, 'the held-out evaluation runs its rollout on tasks("test")'
    )


def with_sampling_reach(reading: Reading, path: str | Path, params: dict[str, Any]) -> Reading:
    """`reading` checked against the workflow's code, where both planners' readings meet it:
    refused (`WorkflowFileError`) when the file reads at import time a PARAM the question
    varies or holds (`refuse_params_read_at_import`); with a word on a test split that
    repeats ids or shares ids with the train split (`with_split_notes`); and with a word on
    how a sampling factor reaches its model calls (`_with_sampling_note`)."""
    refuse_params_read_at_import(reading, path, params)
    reading = _with_sampling_note(with_split_notes(reading, path), path, params)
    if not _reaches_the_model(Path(path)) and _NO_MODEL_CALL not in reading.assumptions:
        reading = reading.model_copy(update={"assumptions": [*reading.assumptions, _NO_MODEL_CALL]})
    return reading


_NO_MODEL_CALL = (
    "your workflow's code never reaches the model through the episode (episode.openai(), "
    "episode.base_url, episode.models, or a shipped task's rollout): the gateway records no "
    "call of it, so no run has anything to train on — call the model through the episode"
)


def _reaches_the_model(path: Path) -> bool:
    """Whether the workflow's code (the file and the modules beside it that it imports) uses
    any way to the episode's model: `.openai(`, `.base_url`, `.models`, or a shipped task's
    rollout. A file that does not parse counts as reaching it (say nothing that could be
    wrong)."""
    for tree in _code_trees(path):
        if tree is None:
            return True
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("openai", "base_url", "models"):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swarm.tasks"):
                return True
    return False


def refuse_params_read_at_import(
    reading: Reading, path: str | Path, params: dict[str, Any]
) -> None:
    """Refuse (`WorkflowFileError`, naming the file, the line and the fix) a workflow that
    reads at import time a PARAM the question varies or holds, or PARAMS as a whole —
    directly, through an alias, in a function or method of its own that import-time code
    calls, or in a module beside it that it imports (`params_read_at_import`):
    the wrapper sets each arm's values into PARAMS only once the file is imported, so a
    value taken then is the default in every arm and the treatment would equal the
    control. A read of a PARAM the question leaves alone is harmless. A file that does not
    parse passes (`read_params` has said why)."""
    keys = {name.removeprefix("workflow:") for name in (reading.factor, *reading.held)}
    keys &= set(params)
    if not keys:
        return
    path = Path(path)
    try:
        reads = params_read_at_import(path.read_text(), path=path)
    except (OSError, SyntaxError, ValueError):
        return
    for read in reads:
        if read.key is None or read.key in keys:
            raise WorkflowFileError(describe_import_time_read(path, read, params, keys))


def with_split_notes(reading: Reading, path: str | Path) -> Reading:
    """`reading` with a word on what the last inspection of the workflow found in its test
    split (`inspected`): ids that repeat (a run is judged on the first tasks it yields,
    repeats included), and test ids that `tasks("train")` yields too (their held-out
    scores are training scores). Nothing when the file was not inspected in this process."""
    found = inspected(path)
    if found is None:
        return reading
    notes = []
    size, distinct = found.test_size, found.test_distinct
    if size is not None and distinct is not None and distinct < size:
        among = f"the first {size}" if size >= TEST_SIZE_CAP else f"the {size}"
        notes.append(
            f"your workflow's tasks('test') repeats ids: {distinct} distinct ids among {among} "
            "tasks it yields (ids repeat); a run is judged on distinct tasks only, so on at "
            f"most {found.judged_distinct} (make tasks('test') yield each held-out task once)"
        )
    if found.overlap and found.overlap[0]:
        shared, compared = found.overlap
        notes.append(
            f"{shared} of the first {compared} ids your tasks('test') yields also come among the "
            f"first {OVERLAP_SAMPLE} of tasks('train'): held-out scores are then not held out (a "
            "run is scored on tasks it trained on); make tasks(split) keep the test tasks apart "
            "from the train ones"
        )
    new = [note for note in notes if note not in reading.assumptions]
    if not new:
        return reading
    return reading.model_copy(update={"assumptions": [*reading.assumptions, *new]})


def _with_sampling_note(reading: Reading, path: str | Path, params: dict[str, Any]) -> Reading:
    """`reading` with a word on how a sampling factor its PARAMS do not declare (temperature,
    max_tokens) reaches the workflow's model calls: only through `episode.openai()`'s chat
    completions, in place of a value the rollout passes itself. A workflow whose code (the
    file and the modules beside it that it imports) never calls `.openai(` is warned that
    every arm would sample alike. A PARAM the rollout passes as `temperature=` (the factor
    `workflow:temperature`, or `workflow:sampling_temp` sent as one) samples the held-out
    answers too, which is said. Read with `ast`, nothing run."""
    factor = reading.factor
    param = factor.removeprefix("workflow:")
    if param != factor and param in params and param in _temperature_params(Path(path)):
        note = (
            f'your rollout passes PARAMS["{param}"] as its temperature, so each arm samples its '
            "held-out answers at its own temperature too (the evaluation is not greedy): the "
            "comparison is of training and of sampling at evaluation together"
        )
        if note in reading.assumptions:
            return reading
        return reading.model_copy(update={"assumptions": [*reading.assumptions, note]})
    if factor not in SAMPLING or factor in params:
        return reading
    calls_openai, passes_own = _sampling_calls(Path(path), factor)
    if not calls_openai:
        note = (
            f"your workflow never calls episode.openai(): each arm's {factor} is sent only with "
            "the chat completions made through it, so a rollout that calls the model another "
            f"way (LangChain or raw HTTP on episode.base_url, a subprocess) keeps its own {factor} "
            f'and every arm would train alike; declare "{factor}" in PARAMS and pass '
            f'PARAMS["{factor}"] to your model calls'
        )
    elif factor == "temperature":
        note = (
            "each arm's temperature is sent with every chat completion your rollout makes "
            "through episode.openai() in training"
            + (", in place of the temperature your rollout passes itself" if passes_own else "")
            + "; the held-out evaluation samples at "
            + ("your rollout's own temperature" if passes_own else "temperature 0")
        )
    else:
        note = (
            f"each arm's {factor} is sent with every chat completion your rollout makes through "
            "episode.openai(), in training and in the held-out evaluation"
            + (f", in place of the {factor} your rollout passes itself" if passes_own else "")
        )
    if note in reading.assumptions:
        return reading
    return reading.model_copy(update={"assumptions": [*reading.assumptions, note]})


def _sampling_calls(path: Path, factor: str) -> tuple[bool, bool]:
    """(whether the workflow's code calls `.openai(` or imports a shipped task's rollout,
    which does; whether a call of it passes `factor=` itself), over the file and the modules
    beside it that it imports. A file that does not parse counts as calling it (say nothing
    that could be wrong)."""
    calls_openai = passes_own = False
    for tree in _code_trees(path):
        if tree is None:
            return True, passes_own
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "openai":
                    calls_openai = True
                passes_own |= any(k.arg == factor for k in node.keywords)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swarm.tasks"):
                # a shipped task's rollout calls episode.openai()
                calls_openai |= any(a.name == "rollout" for a in node.names)
    return calls_openai, passes_own


def _temperature_params(path: Path) -> set[str]:
    """The PARAMS keys the workflow's code passes as `temperature=PARAMS["key"]`."""
    keys: set[str] = set()
    for tree in _code_trees(path):
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.keyword) and node.arg == "temperature":
                value = node.value
                if (
                    isinstance(value, ast.Subscript)
                    and isinstance(value.value, ast.Name)
                    and value.value.id == "PARAMS"
                    and isinstance(value.slice, ast.Constant)
                ):
                    keys.add(str(value.slice.value))
    return keys


def team_policies(path: str | Path) -> list[str]:
    """The policies the workflow's code calls by name, `episode.models["planner"]`: a
    multi-policy team (`examples/team.py`), sorted; [] for a one-model workflow."""
    names: set[str] = set()
    for tree in _code_trees(Path(path)):
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "models"
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
            ):
                names.add(node.slice.value)
    return sorted(names)


def reward_policies(path: str | Path) -> list[tuple[str, int]]:
    """The policies the file's `rollout` returns a reward for in a dict literal with constant
    keys (`return {"solver": 1.0}`), each with its line; [] when it returns a float or a dict
    built otherwise (which only the dry run tells), or the file does not parse."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[tuple[str, int]] = []
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if function.name != "rollout":
            continue
        for node in _own_nodes(function.body):
            value = node.value if isinstance(node, ast.Return) else None
            if isinstance(value, ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys
            ):
                found += [(k.value, node.lineno) for k in value.keys]  # type: ignore[union-attr]
    return sorted(found, key=lambda key_line: key_line[1])


def _own_nodes(body: list[ast.stmt]):
    """Every node of `body`, not those inside a def, lambda or class in it (their returns
    are not the function's)."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _code_trees(path: Path):
    """The syntax trees of the workflow file and of the modules beside it that it imports
    (transitively), each once; None for one that does not parse."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        file = todo.pop()
        if file in seen or not file.is_file():
            continue
        seen.add(file)
        try:
            tree = ast.parse(file.read_text())
        except (OSError, SyntaxError, ValueError):
            yield None
            continue
        yield tree
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                todo.append(path.parent / f"{node.module.split('.')[0]}.py")
            elif isinstance(node, ast.Import):
                todo += [path.parent / f"{a.name.split('.')[0]}.py" for a in node.names]


def render_wrapper(framing: Framing, arm: Arm, *, seed: int, planner: str = "template") -> str:
    """The workflow file `arm` × `seed` runs: the user's workflow with the arm's PARAMS."""
    if not framing.workflow:
        raise ResearcherError("the study has no user workflow to wrap (framing.workflow)")
    path = Path(framing.workflow)
    overrides = {k: v for k, v in arm.workflow_params.items() if k in framing.workflow_params}
    sampling = {k: v for k, v in arm.workflow_params.items()
                if k in SAMPLING and k not in framing.workflow_params}  # fmt: skip
    undeclared = sorted(set(arm.workflow_params) - set(overrides) - set(sampling))
    if undeclared:
        raise ResearcherError(
            f"arm {arm.name!r} sets {', '.join(undeclared)}, which {path.name}'s PARAMS does not "
            f"declare (it declares {', '.join(framing.workflow_params) or 'nothing'}); add "
            f"them to PARAMS and read them in rollout()"
        )
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        raise ResearcherError(f"{path}: cannot read the user's workflow: {error}") from error
    module = f"swarmrl_user_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}_{path.stem}"
    return prompts.render(
        WRAPPER_TEMPLATE,
        planner=planner,
        question=framing.question,
        arm=arm,
        seed=seed,
        path_literal=repr(str(path)),
        sha256=digest,
        module_literal=repr(module),
        overrides_literal=repr(json.dumps(overrides, sort_keys=True)),
        overrides=overrides,
        sampling_literal=repr(json.dumps(sampling, sort_keys=True)),
        sampling=sampling,
        params_env=PARAMS_ENV,
    )
