"""`make demo`: the smallest real thing swarmrl does, end to end, on a laptop.

    .venv/bin/python -m gateway.demo [--model smollm2-135m] [--keep-serving]

Starts `gateway serve` with the bundled SmolLM2-135M-Instruct (CPU, nothing downloaded),
opens an episode, has a two-turn conversation and a forced tool call through the official
openai SDK with the episode's key — exactly what any agent framework would do — and prints
the token-level trace the gateway recorded for training: every token, its logprob, and
the weights version that produced it. (When the researcher lands, `make demo` runs
`researcher start "does multi-task mixing help?" --budget 20m` instead.)

Talks to the gateway over HTTP only, like every client.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai
from rich.console import Console
from rich.table import Table
from rich.text import Text

console = Console()
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(model: str, port: int, state_dir: Path, log_path: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "gateway",
        "serve",
        "--model",
        model,
        "--port",
        str(port),
        "--state-dir",
        str(state_dir),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(cmd, stdout=log_path.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    with console.status(
        f"starting [bold]gateway serve --model {model}[/] (first run converts the bundled GGUF, ~20 s)"
    ):
        while True:
            if process.poll() is not None:
                console.print(log_path.read_text())
                raise SystemExit(f"gateway exited with code {process.returncode}; log above")
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    return process
            except httpx.HTTPError:
                time.sleep(0.3)


def _logprob_style(logprob: float) -> str:
    if logprob > -0.5:
        return "green"
    return "yellow" if logprob > -2.5 else "red"


def show_trace(trace: dict) -> None:
    console.rule(f"recorded trace of episode {trace['episode_id']}")
    table = Table(
        "call",
        "prompt tok",
        "completion tok",
        "version",
        "finish",
        "completion (coloured by logprob)",
    )
    for call in trace["calls"]:
        text = Text()
        for piece, lp in zip(call["token_texts"], call["logprobs"], strict=False):
            text.append(piece, style=_logprob_style(lp))
        table.add_row(
            str(call["index"]),
            str(len(call["prompt_token_ids"])),
            str(len(call["completion_token_ids"])),
            str(call["version"]),
            call["finish_reason"],
            text,
        )
    console.print(table)
    first = trace["calls"][0]
    console.print(
        "first completion, token by token (id, logprob):",
        [
            (t, round(lp, 3))
            for t, lp in zip(
                first["completion_token_ids"][:12], first["logprobs"][:12], strict=False
            )
        ],
    )


def run_demo(url: str, model: str) -> None:
    models = httpx.get(url + "/v1/models").json()
    console.print(f"[bold]GET /v1/models[/] → {[m['id'] for m in models['data']]}")

    episode = httpx.post(
        url + "/swarm/episodes", json={"task_id": "demo-capitals", "task_family": "demo"}
    ).json()
    console.print(
        f"[bold]POST /swarm/episodes[/] → episode {episode['episode_id']}, base_url {episode['base_url']}"
    )
    llm = openai.OpenAI(base_url=episode["base_url"], api_key=episode["api_key"])

    messages = [{"role": "user", "content": "What is the capital of France?"}]
    console.print(f"\n[bold cyan]user:[/] {messages[0]['content']}")
    reply = llm.chat.completions.create(
        model=model, messages=messages, max_tokens=48, temperature=0.7, seed=0
    )
    answer = reply.choices[0].message.content
    console.print(
        f"[bold magenta]{model}:[/] {answer}  [dim]({reply.usage.completion_tokens} tokens)[/]"
    )

    messages += [
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "And what is it famous for?"},
    ]
    console.print(f"[bold cyan]user:[/] {messages[-1]['content']}")
    console.print(f"[bold magenta]{model} (streaming):[/] ", end="")
    for chunk in llm.chat.completions.create(
        model=model, messages=messages, max_tokens=64, temperature=0.7, seed=0, stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            console.print(chunk.choices[0].delta.content, end="", highlight=False)
    console.print()

    tool_reply = llm.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=40,
        temperature=0,
    )
    for call in tool_reply.choices[0].message.tool_calls or []:
        console.print(
            f"[bold magenta]{model} calls a tool:[/] {call.function.name}({call.function.arguments})"
        )

    trace = httpx.get(f"{url}/swarm/episodes/{episode['episode_id']}").json()
    show_trace(trace)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument(
        "--keep-serving", action="store_true", help="leave the gateway running after the demo"
    )
    args = ap.parse_args()

    home = Path(os.environ.get("SWARMRL_HOME", Path.home() / ".swarmrl")).expanduser()
    state_dir = home / "gateway"
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = Path(tempfile.gettempdir()) / "swarmrl-demo-gateway.log"
    port = _free_port()
    process = start_gateway(args.model, port, state_dir, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        run_demo(url, args.model)
        console.print(f"\nEpisodes are stored in [bold]{state_dir}[/]; gateway log: {log_path}")
        if args.keep_serving:
            console.print(
                f"gateway running at {url}/v1 — point any OpenAI client there. Ctrl-C to stop."
            )
            process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
