"""One key floods the gateway; does a well-behaved key still get answers? (issue 14, F2)

Run (from the repository root):

    .venv/bin/python bench/flood.py                        # 300 flooding connections
    .venv/bin/python bench/flood.py --max-inflight-per-key 100000   # as if there were no limit

Starts a real `gateway serve --model tiny` (loopback, no admin key, `--max-batch 32`), then:

(a) baseline: the well-behaved key ("polite") sends `--requests` small chat calls one after
    another (max_tokens 8) on an idle gateway;
(b) flood: 300 concurrent connections under one key ("flooder") each send chat calls back
    to back (max_tokens `--flood-tokens`, 16); a 429 is answered by waiting its `retry_after`, as the openai
    SDK does. Meanwhile "polite" sends the same sequential calls again.

Prints polite's p50/p99 latency in both phases and the ratios (flood / baseline, same
run), and how many flooder calls were served and refused. The per-key limit
(`--max-inflight-per-key`, default the gateway's) is what keeps the ratio bounded: without
it the flooder's 300 requests queue ahead of every polite one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from researcher.local_gateway import start_local_gateway  # noqa: E402


def chat(content: str, max_tokens: int) -> dict:
    return {
        "model": "tiny",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
    }


async def polite_latencies(url: str, requests: int, errors: list[str]) -> list[float]:
    """Latency of each answered call; what went wrong with the others goes to `errors`."""
    headers = {"Authorization": "Bearer polite"}
    latencies = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600) as http:
        for i in range(requests):
            started = time.perf_counter()
            try:
                response = await http.post("/v1/chat/completions", json=chat(f"hello {i}", 8))
            except httpx.HTTPError as e:
                errors.append(f"{type(e).__name__}: {e}")
                continue
            if response.status_code != 200:
                errors.append(f"{response.status_code}: {response.text[:200]}")
                continue
            latencies.append(time.perf_counter() - started)
    return latencies


async def flood(
    url: str, connections: int, tokens: int, stop: asyncio.Event, counts: dict[int, int]
) -> None:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    headers = {"Authorization": "Bearer flooder"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600, limits=limits) as http:

        async def one(i: int) -> None:
            while not stop.is_set():
                try:
                    response = await http.post(
                        "/v1/chat/completions", json=chat(f"flood {i}", tokens)
                    )
                except httpx.HTTPError:
                    counts[-1] = counts.get(-1, 0) + 1
                    continue
                counts[response.status_code] = counts.get(response.status_code, 0) + 1
                if response.status_code == 429:
                    await asyncio.sleep(response.json()["error"]["retry_after"])

        await asyncio.gather(*(one(i) for i in range(connections)))


def quantiles(latencies: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return statistics.median(latencies), cuts[98]


async def measure(url: str, requests: int, connections: int, tokens: int) -> None:
    errors: list[str] = []
    await polite_latencies(url, 3, errors)  # warm-up
    base = await polite_latencies(url, requests, errors)
    stop = asyncio.Event()
    counts: dict[int, int] = {}
    flooder = asyncio.create_task(flood(url, connections, tokens, stop, counts))
    await asyncio.sleep(5)  # the flood is established
    during = await polite_latencies(url, requests, errors)
    stop.set()
    await flooder
    (b50, b99), (f50, f99) = quantiles(base), quantiles(during)
    print(f"polite baseline   p50 {b50 * 1000:8.1f} ms  p99 {b99 * 1000:8.1f} ms")
    print(f"polite in flood   p50 {f50 * 1000:8.1f} ms  p99 {f99 * 1000:8.1f} ms")
    print(f"ratio (flood/base) p50 {f50 / b50:6.2f}x    p99 {f99 / b99:6.2f}x")
    print(f"flooder answers: {dict(sorted(counts.items()))} (-1: connection errors)")
    print(f"polite calls that failed: {len(errors)} {errors[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20, help="polite calls per phase")
    parser.add_argument("--connections", type=int, default=300, help="flooding connections")
    parser.add_argument("--flood-tokens", type=int, default=16, help="max_tokens per flood call")
    parser.add_argument("--max-inflight-per-key", type=int, default=None)
    args = parser.parse_args()
    extra = ["--dtype", "float32", "--max-batch", "32"]
    if args.max_inflight_per_key is not None:
        extra += ["--max-inflight-per-key", str(args.max_inflight_per_key)]
    with tempfile.TemporaryDirectory() as tmp:
        gateway = start_local_gateway(
            model="tiny",
            state_dir=Path(tmp) / "state",
            log_path=Path(tmp) / "gateway.log",
            extra_args=extra,
        )
        try:
            print(
                f"gateway: tiny model, {' '.join(extra)}; {args.connections} flooding connections"
            )
            asyncio.run(measure(gateway.url, args.requests, args.connections, args.flood_tokens))
        finally:
            gateway.stop()
            tail = gateway.log_tail()
            if "Traceback" in tail or "ERROR" in tail:
                print("gateway log tail:\n" + tail)


if __name__ == "__main__":
    main()
