"""Run a study: create it, drive its graph to the end, pause, stop, resume after a crash.

Owns: `create_study` (database row, folder, settings.json), `drive` (the loop around the
LangGraph stream: checkpointed in the study's `graph.sqlite` with `durability="sync"`,
honouring pause/stop requests and `--ask` approvals between nodes), the embedded gateway's
lifecycle (started per study under `<study>/gateway` with a random admin key kept in
`$SWARMRL_HOME/secrets/`, recorded in `gateway.json`, adopted again by `resume` while it
still answers to that key; its runs and episodes are in its SQLite file there, or in the
schema `gateway_<study id>` of a PostgreSQL study database), `stop_study` for a
researcher that is gone, and `prepare_replay` / `create_replay` for `researcher rerun` (a
new study replaying one's final design: `researcher.planner.replay`). A `--gateway`'s admin
key is never written down: it lives in this process (from `create_study` to `drive`), and
`resume` takes it from `$SWARMRL_API_KEY`.
Knows nothing of the command line.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sqlite3
import time
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from rich.console import Console
from sqlalchemy.engine import Engine

from experiments_db import crud
from experiments_db.db import make_engine, session_scope
from experiments_db.migrate import upgrade
from experiments_db.studies import StudyRow, new_study_id
from researcher.context import StudyContext, client_limits
from researcher.errors import ResearcherError
from researcher.gateway_api import GatewayAPI, GatewayRefused, GatewayUnavailable
from researcher.graph import build_graph
from researcher.launcher import Launcher, LocalLauncher, make_launcher, was_started
from researcher.launcher.base import STOPPED_STATUS
from researcher.local_gateway import (
    GatewayStartError,
    embedded_gateway_database,
    embedded_gateway_schema,
    start_local_gateway,
)
from researcher.nodes.common import LIVE
from researcher.nodes.report import write_study_report
from researcher.nodes.validate import dry_run_failures
from researcher.plan import Design, Framing, Hypothesis
from researcher.planner import budget, make_planner
from researcher.planner import replay as replaying
from researcher.settings import (
    DEFAULT_MODEL,
    StudySettings,
    database_url,
    gateway_key_path,
    read_gateway_key,
    studies_dir,
    write_gateway_key,
)

RECURSION_LIMIT = 1_000_000  # monitor loops once per poll; the budget ends a study, not this
# `researcher start --api-key K`: K for the study this process created, kept in memory only
_api_keys: dict[str, str] = {}


class StudyNotFoundError(ResearcherError):
    """No study with that id in the database."""


def open_db(db_url: str | None = None) -> Engine:
    url = database_url(db_url)
    upgrade(url)
    return make_engine(url)


def get_study(engine: Engine, study_id: str) -> StudyRow:
    with session_scope(engine) as session:
        study = crud.get_study(session, study_id=study_id)
    if study is None:
        raise StudyNotFoundError(f"no study {study_id!r} here; `researcher list` shows them")
    return study


def create_study(engine: Engine, settings: StudySettings) -> StudyRow:
    study_id = new_study_id()
    directory = studies_dir() / study_id
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "settings.json").write_text(settings.public_json())
    if settings.workflow:
        keep_workflow_copy(directory, settings.workflow)
    if settings.api_key:
        _api_keys[study_id] = settings.api_key
    now = time.time()
    row = StudyRow(
        id=study_id, question=settings.question, status="running", phase="start",
        planner=settings.planner, model=settings.model, gateway_url=settings.gateway,
        budget_s=settings.budget_s, seeds=settings.seeds, ask=settings.ask,
        directory=str(directory), pid=os.getpid(), created_at=now, updated_at=now,
    )  # fmt: skip
    with session_scope(engine) as session:
        crud.create_study(session, study=row)
        crud.add_event(session, study_id=study_id, phase="start", kind="started",
                       message=f"study of {settings.question!r}, budget {settings.budget_s:g} s")  # fmt: skip
    return row


def keep_workflow_copy(directory: Path, workflow: str) -> Path:
    """A copy of the user's workflow file in the study folder (`user_workflow/`), for the
    record: the runs import the file itself, through each arm's generated wrapper."""
    source = Path(workflow)
    copy = directory / "user_workflow" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    return copy


def set_workflow(study: StudyRow, workflow: str) -> None:
    """`researcher resume --workflow FILE`: the study's workflow file is now `workflow` (it
    moved); settings.json says so and the record's copy is refreshed."""
    path = Path(study.directory) / "settings.json"
    settings = StudySettings.model_validate_json(path.read_text())
    settings.workflow = workflow
    path.write_text(settings.public_json())
    keep_workflow_copy(Path(study.directory), workflow)


def load_settings(study: StudyRow) -> StudySettings:
    """settings.json, with the --gateway's admin key from this process or $SWARMRL_API_KEY
    (a study saved by an older version has it in the file, which is still read)."""
    settings = StudySettings.model_validate_json(
        (Path(study.directory) / "settings.json").read_text()
    )
    settings.api_key = (
        settings.api_key or _api_keys.get(study.id) or os.environ.get("SWARMRL_API_KEY") or None
    )
    return settings


# -- the gateway a study talks to -----------------------------------------------------------


def _gateway_record(directory: Path) -> Path:
    return directory / "gateway.json"


def connect_gateway(
    engine: Engine, study: StudyRow, settings: StudySettings, console: Console
) -> GatewayAPI:
    """The study's gateway: the given URL, else its embedded one — adopted when a killed
    researcher left it running, else started (it restores its runs from its state dir)."""
    if settings.gateway:
        api = GatewayAPI(settings.gateway, api_key=settings.api_key)
        api.check()  # GatewayUnavailable in seconds, with the URL in the message
        return api
    directory = Path(study.directory)
    record = _gateway_record(directory)
    key = read_gateway_key(study.id)
    if record.exists():
        known = json.loads(record.read_text())
        api = GatewayAPI(known["url"], api_key=key)
        try:
            api.check(within_s=3.0)
        except GatewayUnavailable:
            api.close()  # gone: start another
        else:
            try:
                if key is not None:
                    api.list_runs()  # answers only to its admin key: it is this study's
                    console.print(
                        f"[dim]embedded gateway {known['url']} (pid {known['pid']}) adopted[/dim]"
                    )
                    return api
            except GatewayRefused:
                pass
            api.close()  # it runs, but its key is lost (or it is older than keys): restart it
            stop_embedded_gateway(directory)
    model = settings.model or settings.embedded_model or DEFAULT_MODEL
    database = embedded_gateway_database(engine, study.id)  # PostgreSQL: a schema of its own
    where = f"schema {embedded_gateway_schema(study.id)}" if database else "SQLite"
    console.print(f"[dim]starting an embedded gateway serving {model} ({where}) …[/dim]")
    key = "sk-admin-" + secrets.token_urlsafe(32)
    write_gateway_key(study.id, key)  # before it starts: a crash in between loses nothing
    gateway = start_local_gateway(
        model=model, state_dir=directory / "gateway", log_path=directory / "gateway.log",
        start_new_session=True, database_url=database, api_key=key,
    )  # fmt: skip
    record.write_text(json.dumps({"url": gateway.url, "pid": gateway.process.pid}))
    with session_scope(engine) as session:
        crud.update_study(session, study_id=study.id, gateway_url=gateway.url)
    return GatewayAPI(gateway.url, api_key=key)


def stop_embedded_gateway(directory: Path) -> None:
    record = _gateway_record(directory)
    if not record.exists():
        return
    pid = json.loads(record.read_text())["pid"]
    LocalLauncher().stop(pid, timeout_s=30)
    record.unlink(missing_ok=True)
    gateway_key_path(directory.name).unlink(missing_ok=True)


# -- driving the graph ----------------------------------------------------------------------


def _set_status(ctx: StudyContext, status: str, **fields) -> None:
    with ctx.session() as session:
        crud.update_study(session, study_id=ctx.study_id, status=status, **fields)


def _wait_while_paused(ctx: StudyContext) -> str:
    """Pause the live runs, wait for resume or stop, resume the runs. The status after."""
    live = [r for r in _experiments(ctx) if r.status in LIVE]
    for row in live:
        ctx.gateway.pause_run(row.id)
    ctx.event("pause", "action", f"study paused; {len(live)} run(s) paused")
    while (status := ctx.study().status) == "paused":
        time.sleep(1.0)
    ctx.restart_clock()
    if status == "running":
        for row in live:
            ctx.gateway.resume_run(row.id)
        ctx.event("pause", "action", "study resumed")
    return status


def _experiments(ctx: StudyContext):
    with ctx.session() as session:
        return crud.experiments(session, study_id=ctx.study_id)


def _wait_for_approval(ctx: StudyContext, waiting_for: dict) -> dict:
    ctx.event("approve", "waiting", "waiting for a human to approve or reject the design",
              reason="started with --ask; `researcher` UI or an approve/reject intervention")  # fmt: skip
    while True:
        with ctx.session() as session:
            pending = crud.interventions(session, study_id=ctx.study_id, status="pending",
                                         kinds=["approve", "reject"])  # fmt: skip
            if pending:
                item = pending[0]
                crud.mark_intervention(session, intervention_id=item.id, status="applied")
                return {"verdict": item.kind, "reason": item.reason}
        if ctx.study().status in ("stopping", "stopped"):
            return {"verdict": "reject", "reason": "study stopped while waiting"}
        time.sleep(1.0)


def stop_everything(ctx: StudyContext, *, reason: str) -> None:
    """Stop the study's live runs and clients (the gateway stays for evaluation/reporting)."""
    for row in _experiments(ctx):
        if row.status in LIVE or row.status in ("planned", "validated"):
            if row.status in LIVE:
                try:
                    ctx.gateway.stop_run(row.id)
                except ResearcherError:
                    pass  # the gateway is gone: nothing to stop there
            with ctx.session() as session:
                crud.update_experiment(
                    session, experiment_id=row.id, status="stopped", error=reason
                )
        with ctx.session() as session:
            processes = crud.client_processes(session, experiment_id=row.id)
        for process in processes:
            if not was_started(process) or process.exit_status is not None:
                continue
            launcher = ctx.launcher_for(process)
            if launcher.client_alive(process):
                launcher.stop_client(process)
                with ctx.session() as session:
                    crud.update_client_process(session, process_id=process.id, exited_at=time.time(),
                                               exit_status=STOPPED_STATUS)  # fmt: skip


def build_context(engine: Engine, study: StudyRow, console: Console) -> StudyContext:
    settings = load_settings(study)
    launcher = make_launcher(
        settings.launcher, ray_address=settings.ray_address, limits=client_limits(settings),
        allow_env=tuple(settings.client_env_allow),
    )  # fmt: skip
    gateway = connect_gateway(engine, study, settings, console)
    if settings.planner.startswith(replaying.PREFIX):  # `researcher rerun`: the stored design
        record = replaying.load_replay(Path(study.directory))
        if record is None:
            raise ResearcherError(f"study {study.id} replays a study but has no "
                                  f"{replaying.RECORD_FILE} in {study.directory}")  # fmt: skip
        planner = replaying.ReplayPlanner(record)
    else:
        planner = make_planner(settings.planner, model=settings.planner_model)
    model = settings.model or settings.embedded_model
    ctx = StudyContext(
        study_id=study.id, settings=settings, directory=Path(study.directory), db=engine,
        gateway=gateway, planner=planner, launcher=launcher, console=console,
        step_seconds=budget.step_seconds_for(model),
    )  # fmt: skip
    # asked of this gateway at every start and resume ("auto": GET /capacity)
    ctx.event("start", "decision", ctx.parallel_runs.message,
              data={"parallel_runs": ctx.parallel_runs.runs})  # fmt: skip
    return ctx


def drive(engine: Engine, study_id: str, *, console: Console | None = None) -> int:
    """Run (or resume) a study until it finishes, fails or is stopped. Exit code 0/1."""
    console = console or Console(stderr=True)
    study = get_study(engine, study_id)
    with session_scope(engine) as session:
        crud.update_study(session, study_id=study_id, pid=os.getpid(), status="running")
    try:
        ctx = build_context(engine, study, console)
    except (ResearcherError, GatewayStartError) as error:
        _fail(engine, study_id, "start", f"cannot start: {error}")
        console.print(f"[red]researcher: {error}[/red]")
        return 1
    previous = signal.signal(signal.SIGTERM, lambda *_: _request_stop(ctx))
    try:
        return _drive(ctx, console)
    finally:
        signal.signal(signal.SIGTERM, previous)
        ctx.gateway.close()


def _request_stop(ctx: StudyContext) -> None:
    _set_status(ctx, "stopping")


def _drive(ctx: StudyContext, console: Console) -> int:
    path = ctx.directory / "graph.sqlite"
    with sqlite3.connect(path, check_same_thread=False) as connection:
        graph = build_graph().compile(checkpointer=SqliteSaver(connection))
        config = {"configurable": {"thread_id": ctx.study_id}, "recursion_limit": RECURSION_LIMIT}
        payload = (
            None if graph.get_state(config).values else {"study_id": ctx.study_id, "notes": []}
        )
        if payload is None:
            ctx.event(
                "resume", "action", f"resuming at {graph.get_state(config).next or 'the end'}"
            )
        while True:
            try:
                for _ in graph.stream(payload, config, context=ctx, durability="sync",
                                      stream_mode="updates"):  # fmt: skip
                    if ctx.study().status != "running":
                        break
            except KeyboardInterrupt:
                _set_status(ctx, "stopping")
            except Exception as error:  # a node failed: record it, report what exists
                return _fail_study(ctx, graph.get_state(config).values, error)
            payload = None
            snapshot = graph.get_state(config)
            status = ctx.study().status
            if status == "paused":
                status = _wait_while_paused(ctx)
            if status in ("stopping", "stopped"):
                return _stop_study(ctx, snapshot.values)
            if snapshot.interrupts:
                payload = Command(resume=_wait_for_approval(ctx, snapshot.interrupts[0].value))
                continue
            if not snapshot.next and snapshot.values.get("outcome") == "no valid workflow":
                # nothing could run: the study failed, and the dry runs' errors say why
                why = dry_run_failures(ctx)
                _set_status(ctx, "failed", error=why[:2000], finished_at=time.time())
                if not ctx.settings.gateway:
                    stop_embedded_gateway(ctx.directory)
                console.print(f"[red]study {ctx.study_id} failed[/red]: {why}")
                console.print(f"report: {ctx.directory / 'report' / 'report.html'}")
                return 1
            if not snapshot.next:
                _set_status(ctx, "finished", finished_at=time.time())
                if not ctx.settings.gateway:
                    stop_embedded_gateway(ctx.directory)
                console.print(
                    f"[green]study {ctx.study_id} finished[/green]: {ctx.study().latest_finding}"
                )
                console.print(f"report: {ctx.directory / 'report' / 'report.html'}")
                return 0


def _fail(engine: Engine, study_id: str, phase: str, message: str) -> None:
    with session_scope(engine) as session:
        crud.add_event(session, study_id=study_id, phase=phase, kind="error", message=message)
        crud.update_study(session, study_id=study_id, status="failed", error=message[:2000],
                          finished_at=time.time())  # fmt: skip


def _fail_study(ctx: StudyContext, values: dict, error: Exception) -> int:
    phase = ctx.study().phase
    message = f"{type(error).__name__}: {error}"
    ctx.event(phase, "error", f"the study failed in {phase}: {message}")
    stop_everything(ctx, reason=f"study failed: {message}")
    _report_if_possible(ctx, values, conclusion=f"no conclusion: the study failed ({message})")
    _set_status(ctx, "failed", error=message[:2000], finished_at=time.time())
    if not ctx.settings.gateway:
        stop_embedded_gateway(ctx.directory)
    ctx.console.print(f"[red]researcher: {message}[/red]")
    return 1


def _stop_study(ctx: StudyContext, values: dict) -> int:
    ctx.event(ctx.study().phase, "action", "study stopped on request")
    stop_everything(ctx, reason="study stopped")
    _report_if_possible(ctx, values, conclusion="no conclusion: the study was stopped")
    _set_status(ctx, "stopped", finished_at=time.time())
    if not ctx.settings.gateway:
        stop_embedded_gateway(ctx.directory)
    return 0


def _report_if_possible(ctx: StudyContext, values: dict, *, conclusion: str) -> None:
    if not values.get("framing"):
        return  # nothing was planned: the events say why
    try:
        write_study_report(ctx, values, conclusion=conclusion)
    except Exception as error:  # the report is best effort here; the failure is recorded
        ctx.event("report", "error", f"could not write the report: {error}")


def stop_study(engine: Engine, study_id: str) -> str:
    """`researcher stop`: ask the driving researcher to stop; when none is alive, stop what
    the study left running directly. Returns what happened, in words."""
    study = get_study(engine, study_id)
    if study.status in ("finished", "failed", "stopped"):
        return f"study {study_id} is already {study.status}"
    with session_scope(engine) as session:
        crud.update_study(session, study_id=study_id, status="stopping")
        crud.add_event(session, study_id=study_id, phase=study.phase, kind="action",
                       message="stop requested", reason="researcher stop")  # fmt: skip
    if study.pid and study.pid != os.getpid() and LocalLauncher().alive(study.pid):
        return f"asked researcher pid {study.pid} to stop study {study_id}"
    directory = Path(study.directory)
    settings = load_settings(study)
    with session_scope(engine) as session:
        for row in crud.experiments(session, study_id=study_id):
            if row.status in LIVE or row.status in ("planned", "validated"):
                crud.update_experiment(session, experiment_id=row.id, status="stopped",
                                       error="study stopped")  # fmt: skip
        processes = crud.client_processes(session, study_id=study_id)
    launchers: dict[str, Launcher | None] = {}
    unreachable: list[str] = []
    for process in processes:
        if not was_started(process) or process.exit_status is not None:
            continue
        if process.launcher not in launchers:  # the launcher that started it
            launchers[process.launcher] = _launcher_or_none(process.launcher, settings, unreachable)
        launcher = launchers[process.launcher]
        if launcher is None:
            continue
        if launcher.client_alive(process):
            launcher.stop_client(process)
        with session_scope(engine) as session:
            crud.update_client_process(session, process_id=process.id, exited_at=time.time(),
                                       exit_status=launcher.client_exit_status(process))  # fmt: skip
    if not settings.gateway:
        stop_embedded_gateway(directory)
    with session_scope(engine) as session:
        crud.update_study(session, study_id=study_id, status="stopped", finished_at=time.time())
    note = f"; some clients may still run: {'; '.join(unreachable)}" if unreachable else ""
    return f"study {study_id} stopped (no researcher was running it){note}"


def _launcher_or_none(kind: str, settings: StudySettings, problems: list[str]) -> Launcher | None:
    try:
        return make_launcher(kind, ray_address=settings.ray_address)
    except ResearcherError as error:
        problems.append(str(error))
        return None


# -- `researcher rerun`: replay a study's final design into a new study ---------------------


def study_state(study: StudyRow) -> dict:
    """The study graph's last checkpointed state (framing, hypotheses, designs, ...); {} when
    it never ran a node."""
    path = Path(study.directory) / "graph.sqlite"
    if not path.is_file():
        return {}
    with sqlite3.connect(path, check_same_thread=False) as connection:
        graph = build_graph().compile(checkpointer=SqliteSaver(connection))
        return dict(graph.get_state({"configurable": {"thread_id": study.id}}).values or {})


def prepare_replay(
    engine: Engine,
    original_id: str,
    *,
    budget_s: float | None = None,
    gateway: str | None = None,
    api_key: str | None = None,
) -> tuple[replaying.ReplayRecord, StudySettings]:
    """What `researcher rerun` will start: the replay record of `original_id`'s final design
    and the new study's settings (the original's, with the replay planner, its budget unless
    `budget_s`, its gateway unless `gateway`). Raises StudyNotFoundError / ResearcherError."""
    original = get_study(engine, original_id)
    values = study_state(original)
    if not values.get("framing") or not values.get("designs"):
        raise ResearcherError(
            f"study {original_id} has no design to replay (it stopped at {original.phase!r})"
        )
    designs = [Design.model_validate(d) for d in values["designs"]]
    final_round = len(designs)
    with session_scope(engine) as session:
        rows = crud.experiments(session, study_id=original_id)
        report = crud.latest_report(session, study_id=original_id)
    workflows = {
        f"{row.arm}/{row.seed}": Path(row.workflow_path).read_text()
        for row in rows
        if row.config.get("round", 1) == final_round
        and row.workflow_path
        and Path(row.workflow_path).is_file()
    }
    record = replaying.replay_record(
        original_id,
        Framing.model_validate(values["framing"]),
        [Hypothesis.model_validate(h) for h in values.get("hypotheses", [])],
        designs,
        workflows=workflows,
        report=report.html_path if report else None,
    )
    kept = load_settings(original)
    settings = kept.model_copy(
        update={
            "planner": f"{replaying.PREFIX}{original_id}",
            "budget_s": budget_s or original.budget_s,
            "gateway": gateway or kept.gateway,  # None: an embedded one, as the original had
            "api_key": api_key or (None if gateway else kept.api_key),
            "ask": False,
        }
    )
    return record, settings


def create_replay(
    engine: Engine, record: replaying.ReplayRecord, settings: StudySettings
) -> StudyRow:
    """The new study that replays `record`: its row and folder, the record kept in it, and
    an event saying what it replays."""
    study = create_study(engine, settings)
    replaying.save_replay(Path(study.directory), record)
    d = record.design
    with session_scope(engine) as session:
        crud.add_event(
            session, study_id=study.id, phase="start", kind="replays",
            message=f"replays study {record.replays}'s final design: arms "
            f"{', '.join(a.name for a in d.arms)}; seeds {d.seeds}; {d.steps_words}; "
            f"judged once on {d.eval_episodes} held-out {d.eval_task} tasks",
            reason=f"researcher rerun {record.replays}",
        )  # fmt: skip
    return study
