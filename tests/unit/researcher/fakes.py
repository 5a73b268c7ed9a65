"""Fakes for driving the study graph in-process: a scripted planner, a gateway that
advances a run one step per look, a launcher that starts no process, a scripted dry run.

Each fake has the methods the graph calls on the real thing (`researcher.planner.base.Planner`,
`researcher.gateway_api.GatewayAPI`, `researcher.launcher.LocalLauncher`,
`researcher.nodes.validate.dry_run`) and records every call, so a test can say what the
researcher asked for and when. No model, no HTTP, no subprocess.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from researcher.gateway_api import GatewayRefused
from researcher.launcher import ProcessInfo
from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis

GOOD_WORKFLOW = "async def rollout(episode, task):\n    return 1.0\n"
BROKEN_WORKFLOW = "async def rollout(episode, task):\n    raise RuntimeError('BROKEN rollout')\n"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "workflow.py", line 2, in rollout\n'
    "RuntimeError: BROKEN rollout"
)


def small_design(*, steps: int = 3, arms: tuple[str, ...] = ("control", "mixed")) -> Design:
    """Two arms × one seed, a few steps: the smallest design with a comparison."""
    return Design(
        hypothesis="H1",
        arms=[
            Arm(
                name=name,
                role="control" if i == 0 else "treatment",
                description=f"the {name} arm",
                tasks={"arithmetic": 1.0},
                run={"lr": 1e-5, "group_size": 2},
            )
            for i, name in enumerate(arms)
        ],
        seeds=[0],
        steps=steps,
        eval_family="arithmetic",
        eval_episodes=4,
        decision_rule="supported if mixed beats control by 0.05",
    )


class ScriptedPlanner:
    """A `Planner` that records each call (and the notes it was given) and answers from a
    script: `workflows[arm]` is the list of sources write_workflow returns in turn (the
    last one repeats), GOOD_WORKFLOW for an arm not scripted."""

    name = "scripted"

    def __init__(self, design: Design | None = None, workflows: dict[str, list[str]] | None = None):
        self.plan = design or small_design()
        self.workflows = {arm: list(sources) for arm, sources in (workflows or {}).items()}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def called(self, method: str) -> list[dict[str, Any]]:
        return [kwargs for name, kwargs in self.calls if name == method]

    def frame(
        self, question: str, *, served_models: list[str], model: str | None = None
    ) -> Framing:
        self.calls.append(("frame", {"question": question, "served_models": served_models}))
        return Framing(
            question=question,
            family="task_mixing",
            summary="mixed vs control on held-out arithmetic",
            model=served_models[0],
            planner="scripted",
            served_models=served_models,
        )

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]:
        self.calls.append(("hypotheses", {"notes": list(notes)}))
        return [Hypothesis(key="H1", statement="mixing helps", prediction="mixed > control",
                           refuted_if="mixed <= control")]  # fmt: skip

    def design(self, framing, hypothesis, *, budget_s, seeds, step_seconds, notes) -> Design:
        self.calls.append(("design", {"budget_s": budget_s, "notes": list(notes)}))
        return self.plan

    def write_workflow(self, framing, design, arm: Arm, *, seed: int, feedback=None) -> str:
        self.calls.append(("write_workflow", {"arm": arm.name, "seed": seed, "feedback": feedback}))
        sources = self.workflows.get(arm.name)
        if not sources:
            return GOOD_WORKFLOW
        return sources.pop(0) if len(sources) > 1 else sources[0]

    def decide(self, framing, hypothesis, analysis: Analysis, *, notes, budget_left_s, round):
        self.calls.append(("decide", {"notes": list(notes), "round": round}))
        return Decision(action="conclude", reason="one round is enough",
                        conclusion=f"the scripted conclusion ({analysis.verdict})")  # fmt: skip


def scripted_dry_run(
    calls: list[tuple[str, str]], timeouts: list[float | None] | None = None
) -> Callable[..., str | None]:
    """A stand-in for `researcher.nodes.validate.dry_run`: a workflow whose source says
    BROKEN fails with TRACEBACK, any other passes. Appends (run, source) to `calls`, and
    the time it was given to `timeouts`."""

    def dry_run(
        ctx,
        workflow: str,
        run: str,
        run_settings: dict,
        notes: list[str] | None = None,
        *,
        timeout_s: float | None = None,
    ) -> str | None:
        source = Path(workflow).read_text()
        calls.append((run, source))
        if timeouts is not None:
            timeouts.append(timeout_s)
        return TRACEBACK if "BROKEN" in source else None

    return dry_run


@dataclass
class FakeRun:
    name: str
    max_steps: int
    settings: dict[str, Any]
    step: int = 0
    status: str = "running"
    error: str | None = None
    aborted: int = 0  # episodes aborted so far (a test raises it to simulate failing code)


class FakeGateway:
    """`GatewayAPI`'s methods over in-memory runs. A live run advances one step per
    get_run and finishes at max_steps; `nan_loss_at[run]` are the steps whose loss is NaN;
    `on_get_run(gateway, run)` runs before each look (a test's hook into time)."""

    def __init__(self, *, url: str = "http://fake-gateway", api_key: str | None = None):
        self.url = url
        self.api_key = api_key
        self.runs: dict[str, FakeRun] = {}
        self.created: list[str] = []  # runs made new, in order
        self.create_calls: list[str] = []  # every create_run, repeats included
        self.stopped: list[str] = []
        self.patches: list[tuple[str, dict]] = []
        self.deleted_checkpoints: list[str] = []  # runs whose weights a study deleted
        self.paused: list[str] = []
        self.resumed: list[str] = []
        self.nan_loss_at: dict[str, set[int]] = defaultdict(set)
        self.on_get_run: Callable[[FakeGateway, FakeRun], None] | None = None

    def close(self) -> None:
        pass

    def healthz(self) -> dict:
        return {"status": "ok"}

    def served_models(self) -> list[str]:
        return ["tiny"]

    def capacity(self) -> dict | None:
        return None  # a gateway older than GET /capacity: "auto" runs one at a time

    def _run(self, name: str) -> FakeRun:
        if name not in self.runs:
            raise GatewayRefused(f"no run {name!r}", status=404, code="run_not_found")
        return self.runs[name]

    def _public(self, run: FakeRun) -> dict:
        return {"name": run.name, "step": run.step, "status": run.status, "error": run.error,
                "settings": dict(run.settings), "max_steps": run.max_steps,
                "episodes_finished": run.step * 2, "episodes_aborted": run.aborted}  # fmt: skip

    def create_run(self, body: dict) -> dict:
        self.create_calls.append(body["name"])
        if body["name"] not in self.runs:
            self.created.append(body["name"])
            settings = {"lr": 1e-5, **{k: v for k, v in body.items() if k != "name"}}
            self.runs[body["name"]] = FakeRun(body["name"], int(body.get("max_steps", 3)), settings)
        return self._public(self.runs[body["name"]])

    def client_key(self, name: str) -> str | None:
        """As GatewayAPI.client_key: a run-scoped key when the gateway has an admin key."""
        self._run(name)
        return f"sk-cl-fake-{name}" if self.api_key else None

    def get_run(self, name: str) -> dict:
        run = self._run(name)
        if self.on_get_run is not None:
            self.on_get_run(self, run)
        if run.status == "running" and run.step < run.max_steps:
            run.step += 1
            if run.step >= run.max_steps:
                run.status = "finished"
        return self._public(run)

    def checkpoints(self, name: str) -> list[dict]:
        """As GatewayAPI.checkpoints: a finished run has its final export."""
        run = self._run(name)
        if run.status != "finished" or name in self.deleted_checkpoints:
            return []
        return [{"step": run.step, "path": f"/fake-gateway/runs/{name}/export", "created_at": 0.0}]

    def delete_checkpoint(self, name: str, step: int) -> None:
        self._run(name)
        self.deleted_checkpoints.append(name)

    def patch_run(self, name: str, fields: dict) -> dict:
        run = self._run(name)
        self.patches.append((name, dict(fields)))
        run.settings.update(fields)
        return self._public(run)

    def stop_run(self, name: str) -> dict | None:
        self.stopped.append(name)
        run = self.runs.get(name)
        if run is None or run.status != "running":
            return None
        run.status = "stopped"
        return self._public(run)

    def metrics(self, name: str, *, since: int = 0) -> list[dict]:
        run = self._run(name)
        points = []
        for step in range(max(1, since + 1), run.step + 1):  # step metrics start at step 1
            loss = math.nan if step in self.nan_loss_at[name] else 1.0 / step
            points += [{"step": step, "name": "reward/mean", "value": 0.1 * step},
                       {"step": step, "name": "loss", "value": loss}]  # fmt: skip
        return points

    def pause_run(self, name: str) -> None:
        self.paused.append(name)

    def resume_run(self, name: str) -> None:
        self.resumed.append(name)


@dataclass
class FakeLauncher:
    """The `Launcher` protocol (and `LocalLauncher`'s pid methods), starting nothing. A
    started pid is alive until stopped; `crashed` pids read as exited with status 1 (while
    alive stays False for them); `always_alive` makes every pid alive (a client a killed
    researcher left running)."""

    name: str = "local"
    ships_files: bool = False
    started: list[tuple[int, list[str]]] = field(default_factory=list)
    envs: list[dict[str, str]] = field(default_factory=list)  # what each start was handed
    stopped: list[int] = field(default_factory=list)
    crashed: set[int] = field(default_factory=set)
    crash_every_start: bool = False
    always_alive: bool = False
    _next_pid: int = 1000

    def start(
        self, command: list[str], *, log_path: Path, cwd: Path, env=None, name=None, files=None
    ) -> ProcessInfo:
        self._next_pid += 1
        pid = self._next_pid
        self.started.append((pid, list(command)))
        self.envs.append(dict(env or {}))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"client {pid} log\n")
        if self.crash_every_start:
            self.crashed.add(pid)
        return ProcessInfo(pid, "fakehost", log_path, log_path.with_suffix(".exit"), time.time())

    def starts_for(self, experiment: str) -> list[int]:
        return [
            pid
            for pid, command in self.started
            if command[command.index("--run") + 1] == experiment
        ]

    def alive(self, pid: int) -> bool:
        if self.always_alive:
            return True
        return pid not in self.stopped and pid not in self.crashed

    def exit_status(self, pid: int, exit_path: Path) -> int | None:
        if pid in self.crashed:
            return 1
        if pid in self.stopped:
            return -15
        return None

    def stop(self, pid: int, *, timeout_s: float = 15.0, exit_path=None) -> None:
        self.stopped.append(pid)

    # the `Launcher` protocol: a client by its record
    def client_alive(self, client) -> bool:
        return self.alive(client.pid)

    def client_exit_status(self, client) -> int | None:
        return self.exit_status(client.pid, Path(client.log_path).with_suffix(".exit"))

    def stop_client(self, client, *, timeout_s: float = 15.0) -> None:
        self.stop(client.pid, timeout_s=timeout_s)
