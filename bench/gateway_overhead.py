"""How much the HTTP gateway adds on top of the engine, with an instant fake engine.

Run (from the repository root):

    .venv/bin/python bench/gateway_overhead.py            # defaults: 2000 sequential, 3000 @ 64
    .venv/bin/python bench/gateway_overhead.py --sequential 500 --requests 1000 --concurrency 64

(a) Latency: one small chat request, sequentially, measured three ways in this process —
    the engine alone (`engine.generate` on pre-rendered ids), the chat service in-process
    (validate the request dict, render, generate, build and serialise the response), and
    through real HTTP (uvicorn + uvloop + httptools in a subprocess, httpx keep-alive).
    "added" is HTTP minus engine: everything the gateway costs a caller.
(b) Throughput: 64 concurrent clients (asyncio, one httpx.AsyncClient each), a bounded number
    of requests, against the same server; baseline is 64 concurrent in-process tasks on
    the chat service. The client shares the machine with the server, so on a small box the
    HTTP number is a lower bound for the server alone.

Goals: p50 added <= 2 ms; >= 1,000 req/s on 2 cores. Calls carry no episode key, so
nothing is written to the database (the unrecorded hot path).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for tests.fakes when run as a script

import httpx  # noqa: E402

from gateway.http.app import make_app  # noqa: E402
from gateway.openai.wire import ChatCompletionRequest  # noqa: E402
from gateway.recording.recorder import EpisodeRecorder  # noqa: E402
from gateway.settings import GatewaySettings, RequestLimits  # noqa: E402
from tests.fakes import fake_served_model  # noqa: E402

MODEL = "fake-model"
BODY = {
    "model": MODEL,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hi in five words."},
    ],
    "max_tokens": 32,
}


def build_app(state_dir: Path):
    # 64 concurrent keyless clients share one address: lift the per-caller limit (measured
    # here: the HTTP layer's overhead, not admission)
    settings = GatewaySettings(
        state_dir=state_dir, api_key=None, limits=RequestLimits(max_inflight_per_key=10_000)
    )
    return make_app([fake_served_model(MODEL)], EpisodeRecorder.from_settings(settings), settings)


def serve(port: int, state_dir: Path) -> None:
    import uvicorn

    uvicorn.run(
        build_app(state_dir),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(state_dir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--state-dir", str(state_dir)]
    server = subprocess.Popen(command, cwd=REPO)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return server, base_url
        except httpx.TransportError:
            pass  # not listening yet
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise SystemExit("the gateway subprocess did not come up")
        time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), so the server's cost per request
    can be told apart from the client's when both share the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles_ms(samples_s: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples_s, n=100, method="inclusive")
    return cuts[49] * 1e3, cuts[98] * 1e3


async def in_process_latencies(app, count: int) -> tuple[list[float], list[float]]:
    state = app.state.gateway
    served = state.models.get(MODEL)
    prepared = await state.chat.prepare(ChatCompletionRequest.model_validate(BODY))
    engine_s, service_s = [], []
    for _ in range(count):
        start = time.perf_counter()
        await served.engine.generate(prepared.prompt.token_ids, prepared.params[0])
        engine_s.append(time.perf_counter() - start)
    for _ in range(count):
        start = time.perf_counter()
        await one_in_process_call(state)
        service_s.append(time.perf_counter() - start)
    return engine_s, service_s


async def one_in_process_call(state) -> None:
    chat = await state.chat.prepare(ChatCompletionRequest.model_validate(BODY))
    (await state.chat.complete(chat, episode_id=None)).model_dump_json()


def http_latencies(base_url: str, count: int) -> list[float]:
    samples = []
    with httpx.Client(base_url=base_url, timeout=10) as http:
        for _ in range(200):  # warm-up
            http.post("/v1/chat/completions", json=BODY).raise_for_status()
        for _ in range(count):
            start = time.perf_counter()
            http.post("/v1/chat/completions", json=BODY).raise_for_status()
            samples.append(time.perf_counter() - start)
    return samples


async def in_process_throughput(app, requests: int, concurrency: int) -> float:
    state = app.state.gateway
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await one_in_process_call(state)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return requests / (time.perf_counter() - start)


async def http_throughput(base_url: str, requests: int, concurrency: int) -> float:
    # One keep-alive connection per client: a single httpx pool shared by 64 tasks costs
    # the *client* several ms of CPU per request, which would measure httpx, not us.
    clients = [httpx.AsyncClient(base_url=base_url, timeout=30) for _ in range(concurrency)]
    remaining = requests

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            response = await http.post("/v1/chat/completions", json=BODY)
            response.raise_for_status()

    try:
        await asyncio.gather(*(http.get("/healthz") for http in clients))  # connect
        start = time.perf_counter()
        await asyncio.gather(*(worker(http) for http in clients))
        return requests / (time.perf_counter() - start)
    finally:
        await asyncio.gather(*(http.aclose() for http in clients))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequential", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--state-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.state_dir)
        return

    with tempfile.TemporaryDirectory() as tmp:
        app = build_app(Path(tmp) / "in-process")
        engine_s, service_s = asyncio.run(in_process_latencies(app, args.sequential))
        server, base_url = start_server(Path(tmp) / "server")
        try:
            http_s = http_latencies(base_url, args.sequential)
            cpu_before = cpu_seconds(server.pid)
            rps_http = asyncio.run(http_throughput(base_url, args.requests, args.concurrency))
            server_cpu_ms = (cpu_seconds(server.pid) - cpu_before) / args.requests * 1e3
        finally:
            server.terminate()
            server.wait(timeout=10)
        rps_in_process = asyncio.run(in_process_throughput(app, args.requests, args.concurrency))

    (e50, e99), (s50, s99), (h50, h99) = map(percentiles_ms, (engine_s, service_s, http_s))
    print(f"cores: {os.cpu_count()}  python: {sys.version.split()[0]}")
    print(f"(a) latency, {args.sequential} sequential small chat requests (ms)")
    print(f"    {'':28}{'p50':>8}{'p99':>8}")
    print(f"    {'engine alone (baseline)':28}{e50:8.3f}{e99:8.3f}")
    print(f"    {'chat service in-process':28}{s50:8.3f}{s99:8.3f}")
    print(f"    {'through HTTP (ours)':28}{h50:8.3f}{h99:8.3f}")
    print(
        f"    added by the gateway (HTTP - engine): p50 {h50 - e50:.3f} ms, p99 {h99 - e99:.3f} ms"
    )
    print(
        f"    added by HTTP alone (HTTP - service): p50 {h50 - s50:.3f} ms, p99 {h99 - s99:.3f} ms"
    )
    print(f"    ratio HTTP / engine: p50 {h50 / e50:.1f}x")
    print(f"(b) throughput, {args.requests} requests, {args.concurrency} concurrent clients")
    print(f"    chat service in-process (baseline): {rps_in_process:8.0f} req/s")
    print(f"    through HTTP (ours):                {rps_http:8.0f} req/s")
    print(f"    ratio HTTP / in-process: {rps_http / rps_in_process:.2f}")
    print(
        f"    server CPU per request: {server_cpu_ms:.3f} ms "
        f"(one server core alone would sustain ~{1e3 / server_cpu_ms:.0f} req/s)"
    )


if __name__ == "__main__":
    main()
