"""The `swarm` command: `swarm run workflow.py --gateway URL --run RUN`, and `swarm eval
workflow.py --gateway URL --model RUN/POLICY` (held-out evaluation, `swarm.evaluate`).

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


@app.command("eval")
def eval_command(
    workflow: Annotated[
        Path,
        typer.Argument(
            help="A Python file defining `tasks(split)` and `async def rollout(task, episode)`.",
            show_default=False,
        ),
    ],
    model: Annotated[
        str,
        typer.Option(
            help="What to evaluate: a run's policy (`RUN/POLICY`) or a base model the gateway "
            "serves (`GET /v1/models` lists them).",
        ),
    ],
    gateway: Annotated[
        str, typer.Option(envvar="SWARMRL_GATEWAY", help="The gateway's base URL.")
    ] = DEFAULT_GATEWAY,
    split: Annotated[str, typer.Option(help="Passed to `tasks(split)`.")] = "test",
    episodes: Annotated[
        int,
        typer.Option(
            "--episodes", "-e", min=1, help="How many of the split's tasks (the first N)."
        ),
    ] = 100,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-n", min=1, help="Rollouts run at the same time.")
    ] = 8,
    episode_timeout: Annotated[
        float | None,
        typer.Option(
            "--episode-timeout",
            min=0.001,
            help="Seconds one rollout may take; a slower one counts as a failure.",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object on stdout instead of text.")
    ] = False,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="SWARMRL_API_KEY",
            help="The gateway's admin key, when it has one (plain inference needs it).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Evaluate MODEL with WORKFLOW's own rollout and reward on the first N tasks of a split.

    Plain inference through the gateway's OpenAI API: no episode is recorded and nothing is
    trained. Calls sample at temperature 0 unless the rollout sets a temperature. Prints the
    mean reward with a 95% interval (Wilson when every reward is 0 or 1, else a bootstrap),
    n, and how many rollouts failed (raised, aborted, timed out or returned no reward; they
    are left out of the mean and printed).

    Exit codes: 0 evaluated; 1 the gateway could not be reached or refused the key, or every
    rollout failed; 2 the workflow cannot be used, has no such split, or the gateway does
    not serve MODEL.
    """
    from swarm.evaluate import first_tasks

    try:
        loaded = load_workflow(workflow)
        tasks = first_tasks(loaded.tasks, split, episodes)
    except WorkflowError as error:
        print(f"swarm eval: workflow error: {error}", file=sys.stderr, flush=True)
        raise typer.Exit(2) from None
    raise typer.Exit(
        asyncio.run(
            _evaluate(
                loaded, tasks, model=model, gateway=gateway, split=split, api_key=api_key,
                concurrency=concurrency, timeout_s=episode_timeout, json_output=json_output,
            )
        )
    )  # fmt: skip


async def _evaluate(
    workflow: Workflow,
    tasks: list[dict],
    *,
    model: str,
    gateway: str,
    split: str,
    api_key: str | None,
    concurrency: int,
    timeout_s: float | None,
    json_output: bool,
) -> int:
    import json

    import openai
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from swarm.evaluate import run_evaluation, run_models, served_models, short_error, summarize

    console = Console(stderr=True)
    try:
        served = await served_models(gateway, api_key)
    except openai.APIStatusError as error:
        console.print(f"swarm eval: the gateway at {gateway} refused GET /v1/models: {error}",
                      markup=False, highlight=False)  # fmt: skip
        return 1
    except openai.APIError as error:
        console.print(f"swarm eval: cannot reach the gateway at {gateway}: {error}",
                      markup=False, highlight=False)  # fmt: skip
        return 1
    if model not in served:
        console.print(
            f"swarm eval: the gateway at {gateway} does not serve {model!r}; it serves "
            f"{', '.join(served) or 'no models'} (a run's policy is RUN/POLICY)",
            markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
        return 2
    with Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[failed]} failed"), console=console,
                  disable=not console.is_terminal) as progress:  # fmt: skip
        bar = progress.add_task("eval", total=len(tasks), failed=0)
        failed = 0

        def done(reward: float | None) -> None:
            nonlocal failed
            failed += reward is None
            progress.update(bar, advance=1, failed=failed)

        evaluation = await run_evaluation(
            tasks, workflow.rollout, gateway_url=gateway, model=model, api_key=api_key,
            models=run_models(model, served), concurrency=concurrency, timeout_s=timeout_s,
            on_done=done,
        )  # fmt: skip
    for task_id, error in evaluation.errors.items():
        shown = error if len(evaluation.errors) == 1 else short_error(error)
        console.print(f"task {task_id}: {shown}", markup=False, highlight=False, soft_wrap=True)
    rewards = evaluation.scored
    summary = summarize(rewards)
    if json_output:
        print(json.dumps({
            "workflow": str(workflow.path), "model": model, "split": split,
            "episodes": len(tasks), "mean_reward": summary.mean, "ci_low": summary.ci_low,
            "ci_high": summary.ci_high, "interval": summary.interval, "n": summary.n,
            "rewards": rewards, "errors": len(evaluation.errors),
        }))  # fmt: skip
    elif summary.mean is not None:
        print(
            f"{workflow.path.name} on {model} ({split}, {summary.n} tasks): mean reward "
            f"{summary.mean:.3f}, 95% interval [{summary.ci_low:.3f}, {summary.ci_high:.3f}] "
            f"({summary.interval}), {len(evaluation.errors)} failed"
        )
    if not rewards:
        console.print(f"swarm eval: every one of the {len(tasks)} rollouts failed",
                      markup=False, highlight=False)  # fmt: skip
        return 1
    return 0


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
