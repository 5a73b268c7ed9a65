"""`make demo`: train SmolLM2 on the learnable task through the whole stack, on a laptop CPU.

    .venv/bin/python -m researcher.demo [--steps 20] [--model smollm2-135m] [--workflow examples/learnable.py]

Starts `gateway serve` with the bundled SmolLM2-135M-Instruct, creates a GRPO run
(`POST /runs`), launches `swarm run examples/learnable.py` as a separate client process
— the same 20-line workflow a user writes — and follows the run's metrics until it
finishes. Then it prints the reward curve, saves it as a PNG, and asks the trained policy
and the untouched base model the same question. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from researcher.local_gateway import LocalGateway, start_local_gateway
from researcher.settings import swarmrl_home

console = Console()
REPO = Path(__file__).resolve().parents[1]


def ask(gateway: LocalGateway, model: str, question: str) -> str:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": question}],
        "max_tokens": 24,
        "temperature": 0,
    }
    r = httpx.post(gateway.v1 + "/chat/completions", json=body, timeout=120)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]["content"]


def sparkline(values: list[float]) -> str:
    bars = "▁▂▃▄▅▆▇█"
    return "".join(bars[min(len(bars) - 1, int(v * (len(bars) - 1) + 0.5))] for v in values)


def save_curve(steps: list[int], rewards: list[float], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, rewards, marker="o")
    ax.set(
        xlabel="training step", ylabel="mean reward of the batch", title=title, ylim=(-0.05, 1.05)
    )
    ax.grid(alpha=0.3)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def follow_run(
    gateway: LocalGateway, run: str, max_steps: int, client: subprocess.Popen
) -> list[tuple[int, float]]:
    curve: dict[int, float] = {}
    with Progress(
        TextColumn("[bold]training[/]"),
        BarColumn(),
        TextColumn("step {task.completed}/{task.total}"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("train", total=max_steps, info="collecting the first groups…")
        while True:
            info = httpx.get(f"{gateway.url}/runs/{run}", timeout=30).json()
            for point in httpx.get(f"{gateway.url}/runs/{run}/metrics", timeout=30).json():
                if point["name"] == "reward/mean":
                    curve[point["step"]] = point["value"]
            latest = curve[max(curve)] if curve else None
            progress.update(
                task,
                completed=info["step"],
                info=(
                    f"reward {latest:.2f}  episodes {info['episodes_finished']}"
                    if latest is not None
                    else f"episodes {info['episodes_finished']}"
                ),
            )
            if info["status"] in ("finished", "stopped", "failed"):
                if info["status"] == "failed":
                    raise SystemExit(f"run failed: {info.get('error')}")
                break
            if client.poll() is not None and client.returncode not in (0,):
                raise SystemExit(f"swarm run exited with {client.returncode}; see its log")
            time.sleep(1.0)
    return sorted(curve.items())


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--workflow", type=Path, default=REPO / "examples" / "learnable.py")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--groups-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()

    out = swarmrl_home() / "demo"
    out.mkdir(parents=True, exist_ok=True)
    run = time.strftime("demo-%Y%m%d-%H%M%S")
    with console.status(
        f"starting [bold]gateway serve --model {args.model}[/] (the first run converts the bundled GGUF, ~20 s)"
    ):
        gateway = start_local_gateway(
            model=args.model, state_dir=swarmrl_home() / "gateway", log_path=out / "gateway.log"
        )
    client = None
    try:
        created = httpx.post(
            f"{gateway.url}/runs",
            timeout=300,
            json={
                "name": run,
                "policies": {"policy": {"base_model": args.model}},
                "algorithm": "grpo",
                "lr": args.lr,
                "group_size": args.group_size,
                "batch_groups": args.groups_per_step,
                "max_steps": args.steps,
                "seed": 0,
            },
        )
        if created.status_code >= 400:
            raise SystemExit(f"POST /runs failed: {created.status_code} {created.text}")
        policy_model = created.json()["policies"]["policy"]["model"]
        console.print(
            f"run [bold]{run}[/]: GRPO, {args.groups_per_step} groups of {args.group_size} per step, "
            f"lr {args.lr}, {args.steps} steps — policy served as [bold]{policy_model}[/]"
        )
        client_log = out / "swarm-run.log"
        client = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "swarm.cli",
                "run",
                str(args.workflow),
                "--gateway",
                gateway.url,
                "--run",
                run,
                "--concurrency",
                str(args.concurrency),
            ],
            stdout=client_log.open("w"),
            stderr=subprocess.STDOUT,
        )
        console.print(
            f"client: [bold]swarm run {args.workflow.relative_to(REPO) if args.workflow.is_relative_to(REPO) else args.workflow}[/] "
            f"(log: {client_log})"
        )
        curve = follow_run(gateway, run, args.steps, client)
        steps, rewards = [s for s, _ in curve], [r for _, r in curve]
        console.print(
            f"\nreward per step: {sparkline(rewards)}  ({rewards[0]:.2f} → {rewards[-1]:.2f})"
            if rewards
            else "no steps"
        )
        png = out / f"{run}-reward.png"
        if rewards:
            save_curve(steps, rewards, png, f"GRPO on {args.workflow.stem} ({args.model})")
            console.print(f"reward curve saved to [bold]{png}[/]")
        question = "Reply with the word banana."
        console.print(f"\n[bold cyan]{question}[/]")
        console.print(f"  base {args.model}: {ask(gateway, args.model, question)!r}")
        console.print(f"  trained {policy_model}: {ask(gateway, policy_model, question)!r}")
    finally:
        if client is not None and client.poll() is None:
            client.send_signal(signal.SIGINT)
            try:
                client.wait(timeout=30)
            except subprocess.TimeoutExpired:
                client.kill()
        gateway.stop()


if __name__ == "__main__":
    main()
