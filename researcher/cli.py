"""`researcher`: start, follow, steer and report autonomous RL studies.

    researcher start "does multi-task mixing help?" --budget 20m [--launcher ray]
    researcher plan "does a KL penalty of 0.5 slow learning on the easy task?" [--json]
    researcher list | status STUDY | resume STUDY | stop STUDY | report STUDY [--open]
    researcher rerun STUDY [--budget 30m] [--gateway URL] [--yes]
    researcher ui [--host 127.0.0.1] [--port 8500] [--token T]

Owns argument parsing and how results and errors are shown; the work is in
`researcher.study`. Exit codes: 0 done, 1 the study failed, 2 bad input.
"""

from __future__ import annotations

import json
import time
import webbrowser
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.table import Table

from experiments_db import crud
from experiments_db.db import session_scope
from researcher.errors import EmptyQuestion, ResearcherError
from researcher.settings import (
    StudySettings,
    format_duration,
    parse_budget,
    parse_parallel_runs,
    parse_size,
)

if TYPE_CHECKING:
    from researcher.user_workflow import UserWorkflow

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="markdown",
    help="The swarmrl researcher: from a question to a report, autonomously.",
)
console = Console()
err = Console(stderr=True)

DbOption = Annotated[
    str | None,
    typer.Option("--db", envvar="SWARMRL_DB_URL", show_envvar=True,
                 help="The study database URL. Default: SQLite at $SWARMRL_HOME/researcher.db.",
                 show_default=False),
]  # fmt: skip


WorkflowOption = Annotated[
    str | None,
    typer.Option("--workflow", help="Study your own workflow file (`tasks(split)` + `async def "
                 "rollout(task, episode)`, a held-out `tasks(\"test\")`, optional `PARAMS`) "
                 "instead of a shipped task. It is never edited.", show_default=False),
]  # fmt: skip


ClientEnvOption = Annotated[
    list[str] | None,
    typer.Option("--client-env", metavar="NAME", help="An environment variable the study's "
                 "clients get on top of the allow-list (PATH, LANG, proxies, ...), for a "
                 "workflow that reads it (`os.environ[\"NAME\"]`); repeat for more. Saved in "
                 "the study's settings (`client_env_allow`).", show_default=False),
]  # fmt: skip


def _client_env(names: list[str] | None) -> list[str]:
    """The --client-env names, each once; exit 2 for one that is no variable's name or that
    a client is never handed (`client_env_allow`, as the web start form checks them)."""
    from researcher.user_workflow import client_env_allow

    try:
        return client_env_allow(names or [])
    except ResearcherError as error:
        raise _fail(str(error)) from None


def _user_workflow(path: str, client_env: list[str] | None = None) -> UserWorkflow:
    """The workflow file (absolute path, PARAMS), once it imports with a client's
    environment (plus `client_env`) and has a test split; exit 2 saying why otherwise."""
    from researcher.user_workflow import require_test_split

    try:
        found = require_test_split(path, client_env_allow=client_env or ())
    except ResearcherError as error:
        raise _fail(str(error)) from None
    params = ", ".join(found.params) or "none"
    console.print(f"workflow {found.path} (PARAMS: {params})", soft_wrap=True, markup=False)
    return found


class LauncherKind(StrEnum):
    local = "local"
    ray = "ray"


def _fail(message: str, code: int = 2) -> typer.Exit:
    from rich.markup import escape

    err.print(f"[red]researcher: {escape(message)}[/red]")  # `swarmrl[cluster]` is no markup
    return typer.Exit(code)


def _engine(db: str | None):
    from rich.markup import escape

    from researcher.study import open_db

    try:
        return open_db(db)
    except Exception as error:  # a refused URL, a bad driver: one line naming the fix
        cause = escape(" ".join(str(getattr(error, "orig", None) or error).split()))
        err.print(f"[red]researcher: cannot open the study database ({error.__class__.__name__}: "
                  f"{cause}); check --db / $SWARMRL_DB_URL[/red]", soft_wrap=True, markup=True)  # fmt: skip
        raise typer.Exit(2) from None


@app.command()
def start(
    question: Annotated[str, typer.Argument(help="The research question, in words.")],
    budget: Annotated[str, typer.Option(help="Wall-clock budget: 90s, 20m, 6h, 3d.")] = "20m",
    gateway: Annotated[
        str | None,
        typer.Option(
            help="A running gateway's URL. Default: start an embedded one (CPU).",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    planner: Annotated[
        str,
        typer.Option(
            help="`template`, or an OpenAI-compatible base URL (key in "
            "$SWARMRL_PLANNER_API_KEY, model in $SWARMRL_PLANNER_MODEL)."
        ),
    ] = "template",  # fmt: skip
    model: Annotated[
        str | None,
        typer.Option(
            help="The model to train (one the gateway serves; the embedded gateway "
            "serves it). Default: the bundled SmolLM2-135M-Instruct.",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    seeds: Annotated[int, typer.Option(min=1, max=10, help="Seeds per arm.")] = 2,
    ask: Annotated[
        bool, typer.Option("--ask", help="Wait for a human to approve each design.")
    ] = False,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="SWARMRL_API_KEY", help="The gateway's admin key.", show_default=False),
    ] = None,  # fmt: skip
    launcher: Annotated[
        LauncherKind,
        typer.Option(
            help="How the `swarm run` clients run: `local` processes, or `ray` jobs "
            "submitted to a Ray cluster's job server (needs `swarmrl[cluster]`).",
        ),
    ] = LauncherKind.local,  # fmt: skip
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="The Ray job server for `--launcher ray`: the dashboard URL "
            "(http://HEAD:8265) or a GCS HOST:PORT. Default: $RAY_API_SERVER_ADDRESS, "
            "else $RAY_ADDRESS, else http://127.0.0.1:8265.",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    db: DbOption = None,
    workflow: WorkflowOption = None,
    client_env: ClientEnvOption = None,
    disk_budget: Annotated[
        str,
        typer.Option(help="Disk the study folder may use (checkpoints above all): 2GB, 500MB."),
    ] = "2GB",
    pilot: Annotated[
        bool,
        typer.Option(
            help="Train the control's first seeds before the comparison: check the task is "
            "learnable at these settings (else retune what the question leaves free), measure "
            "a run's cost and the seeds' spread, size the looks and state the minimum "
            "detectable effect from them.",
        ),
    ] = True,  # fmt: skip
    parallel_runs: Annotated[
        str,
        typer.Option(
            help="Runs trained at once: a number, or `auto` (what the gateway suggests for "
            "its device and cores: GET /capacity; 1 from a gateway without it).",
        ),
    ] = "auto",
) -> None:
    """Start a study and follow it until it ends (Ctrl-C stops it and writes a report)."""
    from researcher.study import create_study, drive

    if not question.strip(" \t\n?!.,;:"):
        raise _fail(str(EmptyQuestion("the question is empty: ask something, e.g. "
                                      "researcher start \"does multi-task mixing help?\"")))  # fmt: skip
    try:
        budget_s = parse_budget(budget)
        disk_budget_bytes = parse_size(disk_budget)
        parallel = parse_parallel_runs(parallel_runs)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    client_env_allow = _client_env(client_env)
    user_workflow = _user_workflow(workflow, client_env_allow) if workflow is not None else None
    settings = StudySettings(question=question.strip(), budget_s=budget_s, gateway=gateway,
                             planner=planner, model=model, seeds=seeds, ask=ask, api_key=api_key,
                             launcher=launcher.value, disk_budget_bytes=disk_budget_bytes,
                             parallel_runs=parallel,
                             workflow=str(user_workflow.path) if user_workflow else None,
                             pilot=pilot, client_env_allow=client_env_allow)  # fmt: skip
    try:
        from researcher.planner import make_planner

        planner_ = make_planner(planner)
        if planner == "template":  # a question it cannot read is refused before anything starts
            from researcher.nodes.frame import workflow_frame_args
            from researcher.planning import served_models

            served = served_models(gateway, api_key, model, strict=False)
            extra = workflow_frame_args(getattr(settings, "workflow", None))  # `--workflow`
            framing = planner_.frame(settings.question, served_models=served, model=model, **extra)
            _show_reading(framing)
        if launcher is LauncherKind.ray:
            settings.ray_address = _check_ray(ray_address, gateway)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    engine = _engine(db)
    study = create_study(engine, settings)
    console.print(f"study [bold]{study.id}[/bold] in {study.directory}")
    raise typer.Exit(drive(engine, study.id))


@app.command()
def plan(
    question: Annotated[str, typer.Argument(help="The research question, in words.")],
    workflow: Annotated[
        Path | None,
        typer.Option(help="Your own workflow file (tasks + rollout) to study.", show_default=False),
    ] = None,  # fmt: skip
    budget: Annotated[str, typer.Option(help="Wall-clock budget: 90s, 20m, 6h, 3d.")] = "20m",
    model: Annotated[
        str | None, typer.Option(help="The model to train.", show_default=False)
    ] = None,
    gateway: Annotated[
        str | None,
        typer.Option(
            help="A running gateway whose served models to plan for. Default: the "
            "bundled model, with no gateway started.",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    seeds: Annotated[int, typer.Option(min=1, max=10, help="Seeds per arm.")] = 2,
    planner: Annotated[str, typer.Option(help="`template`, or an OpenAI-compatible base URL.")] = (
        "template"
    ),
    api_key: Annotated[
        str | None,
        typer.Option(envvar="SWARMRL_API_KEY", help="The gateway's admin key.", show_default=False),
    ] = None,  # fmt: skip
    json_: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    client_env: ClientEnvOption = None,
) -> None:
    """Read the question and design the study without running anything (no gateway starts).

    The reading names one factor (a run setting, sampling setting, task mix, base model or
    your workflow's PARAMS key), its levels, the task, the outcome and the direction;
    docs/reading.md lists them all. Examples:

    researcher plan "does a KL penalty of 0.5 slow learning on the easy single-turn task?"

    researcher plan "is LoRA as good as full fine-tuning on the easy task?" --json

    researcher plan "do 3 attempts instead of 1 help my agent?" --workflow my_agent.py
    """
    from researcher.planning import make_plan, pilot_record, plan_record, served_models

    text = question.strip()
    try:
        budget_s = parse_budget(budget)
        served = served_models(gateway, api_key, model, strict=True)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    try:
        from researcher.nodes.frame import frame_args_of
        from researcher.user_workflow import require_test_split

        # a workflow that cannot be studied is refused with its own reason, as `start` does
        allow = _client_env(client_env)
        found = require_test_split(workflow, client_env_allow=allow) if workflow else None
        workflow_args = frame_args_of(found) if found else {}
        plan_ = make_plan(text, planner=planner, served=served, budget_s=budget_s, seeds=seeds,
                          model=model, workflow_args=workflow_args)  # fmt: skip
    except ResearcherError as error:
        if json_:
            print(json.dumps({"question": text, "refused": str(error)}))
            raise typer.Exit(2) from None
        raise _fail(str(error)) from None
    if json_:
        print(json.dumps(plan_record(plan_)))
        return
    design = plan_.design
    _show_reading(plan_.framing)
    table = Table("arm", "role", "level", "run", "workflow params", title="arms")
    for arm in design.arms:
        run = ", ".join(f"{k}={v}" for k, v in arm.run.items())
        table.add_row(arm.name, arm.role, json.dumps(arm.level), run,
                      json.dumps(arm.workflow_params) if arm.workflow_params else "-")  # fmt: skip
    console.print(table)
    console.print(f"[bold]{plan_.hypothesis.key}[/bold]: {plan_.hypothesis.statement}")
    console.print(f"{len(design.seeds)} seed(s) per arm, {design.steps_words}, judged on "
                  f"{design.eval_episodes} held-out {design.eval_task} tasks"
                  f"{_of_test_split(plan_.framing, design)}")  # fmt: skip
    console.print(f"[bold]decision rule[/bold]: {design.decision_rule}")
    if (pilot := pilot_record(design)) is not None:
        console.print(
            f"[bold]pilot[/bold]: {pilot['arm']} trains {pilot['seeds']} seed(s) first; what it "
            "measures (did it learn, a run's cost, the seeds' spread) sizes the looks and the "
            "minimum detectable effect before any treatment run"
        )


def _of_test_split(framing, design) -> str:
    """Of how many: " (the first 48 of the 200 tasks your tasks('test') holds …)" for a
    study of the user's workflow judged on fewer tasks than its test split holds; else ""."""
    from researcher.planner.budget import MAX_EVAL_EPISODES, MIN_EVAL_EPISODES
    from researcher.user_workflow import TEST_SIZE_CAP

    size = framing.workflow_test_size
    if not framing.workflow or size is None or size <= design.eval_episodes:
        return ""
    holds = f"{size}+" if size >= TEST_SIZE_CAP else str(size)
    return (
        f" (the first {design.eval_episodes} of the {holds} tasks your tasks('test') holds: a "
        f"run is judged on {MIN_EVAL_EPISODES} to {min(MAX_EVAL_EPISODES, size)}, as the budget "
        "allows)"
    )


def _show_reading(framing) -> None:
    """The reading of the question, as a small table (`plan`, and `start` before it starts)."""
    from researcher.planner.wording import reading_rows

    if framing.reading is None:
        return
    table = Table("reading", "", title=f"the question, as read by the {framing.planner} planner")
    for name, value in reading_rows(framing.reading):
        table.add_row(name, value)
    table.add_row("model", framing.model + (f" ({framing.substitution})" if framing.substitution
                                            else ""))  # fmt: skip
    console.print(table)


def _check_ray(address: str | None, gateway: str | None) -> str:
    """The job server's URL, once one answers there; an error naming the fix otherwise."""
    from researcher.launcher.ray import RayJobLauncher

    ray = RayJobLauncher(address)
    if ray.ships_files and (gateway is None or urlsplit(gateway).hostname in LOOPBACK):
        raise ResearcherError(
            f"the Ray cluster at {ray.address} is on another machine, where this machine's "
            "embedded gateway cannot be reached: give --gateway URL, a gateway the cluster reaches"
        )
    return ray.address


@app.command("list")
def list_studies(db: DbOption = None) -> None:
    """Every study, newest first."""
    with session_scope(_engine(db)) as session:
        studies = crud.list_studies(session)
    table = Table("study", "status", "phase", "budget", "question", "latest finding")
    for s in studies:
        table.add_row(s.id, s.status, s.phase, f"{format_duration(s.budget_used_s)}/"
                      f"{format_duration(s.budget_s)}", s.question, (s.latest_finding or "")[:80])  # fmt: skip
    console.print(table if studies else 'no studies yet: `researcher start "..."`')


def _aborted(config: dict) -> str:
    """A run's training episodes aborted, as the monitor last counted them ("12 of 40 (30%)",
    "-" before any count)."""
    counts = config.get("episodes") or {}
    finished, aborted = counts.get("finished", 0), counts.get("aborted", 0)
    if not finished + aborted:
        return "-"
    return f"{aborted} of {finished + aborted} ({aborted / (finished + aborted):.0%})"


@app.command()
def status(
    study: Annotated[str, typer.Argument(help="The study id.")], db: DbOption = None
) -> None:
    """Phase, budget, runs and the latest events of a study (works from another terminal)."""
    from researcher.study import get_study

    engine = _engine(db)
    try:
        row = get_study(engine, study)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    with session_scope(engine) as session:
        experiments = crud.experiments(session, study_id=study)
        events = crud.events(session, study_id=study)[-8:]
        snapshots = {e.id: crud.metric_snapshots(session, experiment_id=e.id, name="reward/mean")
                     for e in experiments}  # fmt: skip
        report = crud.latest_report(session, study_id=study)
    console.print(f"[bold]{row.id}[/bold] {row.question!r}")
    console.print(f"status {row.status}, phase {row.phase}, budget {format_duration(row.budget_used_s)}"
                  f" of {format_duration(row.budget_s)}, planner {row.planner}, model {row.model}")  # fmt: skip
    if row.latest_finding:
        console.print(f"latest finding: {row.latest_finding}")
    if experiments:
        table = Table("experiment", "arm", "seed", "status", "step", "reward/mean", "aborted")
        table.columns[0].overflow = table.columns[1].overflow = "fold"
        for e in experiments:
            points = snapshots[e.id]
            last = points[-1] if points else None
            table.add_row(e.id, e.arm, str(e.seed), e.status, str(last.step) if last else "-",
                          f"{last.value:.3f}" if last else "-", _aborted(e.config))  # fmt: skip
        console.print(table)
    for e in events:
        stamp = time.strftime("%H:%M:%S", time.localtime(e.at))
        console.print(
            f"[dim]{stamp}[/dim] {e.phase:>10} {e.message}" + (f" ({e.reason})" if e.reason else "")
        )
    if report:
        console.print(f"report: {report.html_path}")


@app.command()
def resume(
    study: Annotated[str, typer.Argument(help="The study id.")],
    db: DbOption = None,
    workflow: WorkflowOption = None,
) -> None:
    """Carry on a study after a crash or kill -9, from the node it was at (`--workflow`: the
    study's workflow file moved there; workflows written from now on import it)."""
    from researcher.study import drive, get_study, load_settings, set_workflow

    engine = _engine(db)
    try:
        row = get_study(engine, study)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    if row.status in ("finished", "stopped", "failed"):
        raise _fail(
            f"study {study} is {row.status}; `researcher report {study}` shows its report", 1
        )
    if workflow is not None:
        if not load_settings(row).workflow:
            raise _fail(f"study {study} was not started with --workflow; it studies shipped tasks")
        found = _user_workflow(workflow, load_settings(row).client_env_allow)
        set_workflow(row, str(found.path))
    raise typer.Exit(drive(engine, study))


@app.command()
def stop(study: Annotated[str, typer.Argument(help="The study id.")], db: DbOption = None) -> None:
    """Stop a study: its runs and clients stop, and a report of what it did is written."""
    from researcher.study import stop_study

    try:
        console.print(stop_study(_engine(db), study))
    except ResearcherError as error:
        raise _fail(str(error)) from None


@app.command()
def report(
    study: Annotated[str, typer.Argument(help="The study id.")],
    open_: Annotated[
        bool, typer.Option("--open", help="Open the HTML report in a browser.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Print where a study's report is (and open it)."""
    from researcher.study import get_study

    engine = _engine(db)
    try:
        get_study(engine, study)
    except ResearcherError as error:
        raise _fail(str(error)) from None
    with session_scope(engine) as session:
        found = crud.latest_report(session, study_id=study)
    if found is None:
        raise _fail(
            f"study {study} has no report yet; `researcher status {study}` shows where it is", 1
        )
    console.print(f"{found.html_path}\n{found.markdown_path}\n{found.conclusion}")
    if open_:
        webbrowser.open(f"file://{found.html_path}")


@app.command()
def rerun(
    study: Annotated[str, typer.Argument(help="The study whose final design to replay.")],
    budget: Annotated[
        str | None,
        typer.Option(
            help="Wall-clock budget of the new study. Default: the original's.", show_default=False
        ),
    ] = None,  # fmt: skip
    gateway: Annotated[
        str | None,
        typer.Option(
            help="A running gateway's URL. Default: the original's (an embedded one "
            "when it had none).",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    api_key: Annotated[
        str | None,
        typer.Option(envvar="SWARMRL_API_KEY", help="The gateway's admin key.", show_default=False),
    ] = None,  # fmt: skip
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Start without asking.")] = False,
    db: DbOption = None,
) -> None:
    """Replay a study's final design into a NEW study, to check its answer.

    The new study asks the same question as read (factor, levels, task, outcome, direction)
    and runs the original's final design as it was: the same arms with their run settings,
    every seed the original used over its looks, the same steps, held-out tasks and decision
    rule, and the workflow code each run ran. Nothing is re-read or re-designed (no planner
    is asked), and the verdict is read once (look 1 of 1). Its report links the original.
    """
    from researcher.study import create_replay, drive, prepare_replay

    engine = _engine(db)
    try:
        budget_s = parse_budget(budget) if budget is not None else None
        record, settings = prepare_replay(engine, study, budget_s=budget_s, gateway=gateway,
                                          api_key=api_key)  # fmt: skip
    except ResearcherError as error:  # an unknown study, or one without a design: exit 2
        raise _fail(str(error)) from None
    d = record.design
    console.print(
        f"replaying study {study}: {', '.join(f'{a.name} ({a.role})' for a in d.arms)}; "
        f"seeds {d.seeds}; {d.steps_words}; {d.eval_episodes} held-out "
        f"{d.eval_task} tasks; judged once; budget {format_duration(settings.budget_s)}",
        soft_wrap=True, markup=False,
    )  # fmt: skip
    if not yes and not typer.confirm("Start the replay?", default=True):
        raise typer.Exit(0)
    new = create_replay(engine, record, settings)
    console.print(f"study [bold]{new.id}[/bold] in {new.directory} (replays {study})")
    raise typer.Exit(drive(engine, new.id))


LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command("ui")
def ui(
    host: Annotated[
        str, typer.Option(help="Address to bind; non-loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8500,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_UI_TOKEN",
            help="Required on every request (?token= once, or Authorization: Bearer).",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    db: DbOption = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name besides loopback and --host that requests may name, and whose "
            "pages may post (a reverse proxy's public name); repeatable.",
        ),
    ] = None,
) -> None:
    """The experiment web UI: studies, runs, live curves, token traces, interventions."""
    if host not in LOOPBACK and not token:
        raise _fail(f"--host {host} is not loopback: give --token or $SWARMRL_UI_TOKEN")
    import uvicorn

    from researcher.web.app import check_token, make_app

    if token is not None:
        try:
            check_token(token)
        except ValueError as e:
            raise _fail(f"--token: {e}") from None
    console.print(f"researcher UI on http://{host}:{port}/" + ("?token=…" if token else ""))
    app_ = make_app(_engine(db), token=token, bind_host=host, allowed_hosts=allowed_host or [])
    uvicorn.run(app_, host=host, port=port, log_level="warning")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
