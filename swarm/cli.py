"""The `swarm` command: `swarm run workflow.py --gateway URL --run RUN`.

Owns: argument parsing (typer), loading the workflow *before* touching the network (a
broken file exits 2 at once), signals (first Ctrl-C/SIGTERM: abort open episodes,
deregister, exit 130/143; a second one: leave at once), logging to the console, and turning
the runner's `RunSummary` into an exit code. With `--watch` it hands the run to
`swarm.watch.WatchedRun`, which restarts the workflow when its code changes.

Must not know how episodes are scheduled (`swarm.runner`) or sent (`swarm.client`), nor how
files are watched (`swarm.watch`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from swarm.errors import WorkflowError
from swarm.workflow import Workflow, load_workflow

if TYPE_CHECKING:
    from swarm.runner import Outcome, RunnerSettings, WorkflowRunner
    from swarm.watch import WatchedRun

DEFAULT_GATEWAY = "http://127.0.0.1:8400"

app = typer.Typer(
    help="The swarmrl swarm client: run agent workflows against a training gateway.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@app.callback()
def _swarm() -> None:
    """The swarmrl swarm client: run agent workflows against a training gateway."""


@app.command("run")
def run_command(
    workflow: Annotated[
        Path,
        typer.Argument(
            help="A Python file defining `tasks(split)` and `async def rollout(task, episode)`.",
            show_default=False,
        ),
    ],
    run: Annotated[
        str,
        typer.Option(help="The training run whose episodes these are (see `POST /runs`)."),
    ],
    gateway: Annotated[
        str, typer.Option(envvar="SWARMRL_GATEWAY", help="The gateway's base URL.")
    ] = DEFAULT_GATEWAY,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-n", min=1, help="Episodes run at the same time.")
    ] = 8,
    group_size: Annotated[
        int | None,
        typer.Option(
            "--group-size",
            "-g",
            min=1,
            help="Episodes per task, sharing one group_id (a GRPO group). "
            "Default: the run's settings.group_size, else 8.",
            show_default=False,
        ),
    ] = None,
    max_episodes: Annotated[
        int | None,
        typer.Option(
            "--max-episodes",
            "-m",
            min=1,
            help="Stop after this many episodes (finished + aborted) and exit 0. "
            "Default: run until Ctrl-C or until the run stops.",
            show_default=False,
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Passed to `tasks(split)`.")] = "train",
    episode_timeout: Annotated[
        float | None,
        typer.Option(
            "--episode-timeout",
            min=0.001,
            help="Seconds one rollout may take; a slower one is cancelled and its episode "
            "aborted with the reason. A rollout that blocks the event loop (time.sleep in "
            "async code) has its episode aborted by a watchdog thread once the loop has "
            "been blocked a second past the limit, and the client exits 3 if the loop is "
            "still blocked 10 s later. "
            "Default: no limit.",
            show_default=False,
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_API_KEY",
            help="The gateway's admin key, or a client key of the run (`POST "
            "/runs/{run}/client-keys`), when the gateway has an admin key.",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help=(
                "This client's name on the gateway: its identity. A client registering under "
                "the name of a live one supersedes it (the old one's open episodes are "
                "aborted at once), so give a restarted client its old name and concurrent "
                "clients distinct ones. Default: WORKFLOW-NAME@HOSTNAME:PID."
            ),
            show_default=False,
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            "-w",
            help="Restart with the new code when WORKFLOW, or a .py file beside it, changes: "
            'the open episodes are aborted (reason "workflow changed"), the client '
            "deregisters and registers again with the new code_version. An edit that does "
            "not load is printed and the old code keeps running until one does.",
        ),
    ] = False,
) -> None:
    """Run WORKFLOW's rollouts as training episodes of RUN until done or stopped.

    Cycles through `tasks(split)` (again from the start when they run out), G episodes per
    task. A rollout that raises is aborted and its traceback printed at once; a return value
    that is not a float or a {policy: float} dict is aborted too.

    With --watch, the files are polled twice a second; --max-episodes counts over every
    code version, and a workflow error at run time waits for the next edit.

    Exit codes: 0 when --max-episodes ran or the run stopped taking episodes (it finished
    or was stopped: one line names its last step); 1 on a gateway error (unreachable after
    retries, refused key, unknown run) or when the run failed (its error is printed); 2
    when the workflow file cannot be used; 3 when a rollout blocked the event loop past
    --episode-timeout; 130 on Ctrl-C; 143 on SIGTERM.
    """
    try:
        loaded = load_workflow(workflow)
    except WorkflowError as error:
        print(f"swarm run: workflow error: {error}", file=sys.stderr, flush=True)
        raise typer.Exit(2) from None
    from swarm.runner import RunnerSettings  # after the workflow: a broken file fails first

    settings = RunnerSettings(
        run=run,
        concurrency=concurrency,
        group_size=group_size,
        max_episodes=max_episodes,
        split=split,
        episode_timeout_s=episode_timeout,
    )
    name = name or f"{loaded.path.stem}@{socket.gethostname()}:{os.getpid()}"
    raise typer.Exit(
        asyncio.run(
            _run(loaded, settings, gateway=gateway, api_key=api_key, name=name, watch=watch)
        )
    )


async def _run(
    workflow: Workflow,
    settings: RunnerSettings,
    *,
    gateway: str,
    api_key: str | None,
    name: str,
    watch: bool = False,
) -> int:
    from rich.console import Console
    from rich.logging import RichHandler

    from swarm.client import SwarmClient
    from swarm.progress import RunProgress
    from swarm.runner import Outcome, WorkflowRunner

    console = Console(stderr=True)
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_time=False, show_path=False, markup=False)],
    )
    labels = {"workflow": workflow.path.name, "host": socket.gethostname(), "pid": str(os.getpid())}
    if watch:
        from swarm.watch import WatchedRun

        sys.dont_write_bytecode = True  # a helper edited twice in a second must not load stale

        def make_client(loaded: Workflow) -> SwarmClient:
            return SwarmClient(
                gateway,
                api_key=api_key or None,
                name=name,
                code_version=loaded.code_version,
                labels=labels,
            )

        watched = WatchedRun(workflow, settings, make_client, console)
        _stop_on_signals(
            watched, {signal.SIGINT: Outcome.INTERRUPTED, signal.SIGTERM: Outcome.TERMINATED}
        )
        summary = await watched.run()
        console.print(
            f"swarm run: {summary.describe()}", markup=False, highlight=False, soft_wrap=True
        )
        return summary.exit_code
    async with SwarmClient(
        gateway,
        api_key=api_key or None,
        name=name,
        code_version=workflow.code_version,
        labels=labels,
    ) as client:
        progress = RunProgress(console, total=settings.max_episodes)
        runner = WorkflowRunner(workflow, settings, client, progress)
        _stop_on_signals(
            runner, {signal.SIGINT: Outcome.INTERRUPTED, signal.SIGTERM: Outcome.TERMINATED}
        )
        summary = await runner.run()
    console.print(f"swarm run: {summary.describe()}", markup=False, highlight=False, soft_wrap=True)
    return summary.exit_code


def _stop_on_signals(
    runner: WorkflowRunner | WatchedRun, outcomes: dict[signal.Signals, Outcome]
) -> None:
    """First signal: stop cleanly. Then the default handlers apply, so a second one leaves."""
    loop = asyncio.get_running_loop()

    def on_signal(received: signal.Signals) -> None:
        for sig in outcomes:
            loop.remove_signal_handler(sig)
        runner.stop(outcomes[received], f"received {received.name}; aborting open episodes")

    for sig in outcomes:
        loop.add_signal_handler(sig, on_signal, sig)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # a second Ctrl-C during the clean stop
        sys.exit(130)


if __name__ == "__main__":
    main()
