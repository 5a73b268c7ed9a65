"""A client that goes away mid-stream cancels its generation and breaks nothing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import anyio
import httpx
import pytest
import uvicorn

from gateway.http.app import make_app
from gateway.openai.chat import ChatService
from gateway.openai.wire import ChatCompletionRequest
from gateway.registry import ModelRegistry
from tests.fakes import EchoEngine, fake_served_model
from tests.unit.gateway.conftest import MODEL, chat_body


@pytest.mark.parametrize("n", [1, 2])
def test_closing_the_event_stream_closes_every_engine_stream(recorder, n):
    served = fake_served_model(MODEL, token_delay_s=0.01)
    service = ChatService(ModelRegistry([served]), recorder)

    async def read_a_little_then_leave() -> None:
        chat = await service.prepare(ChatCompletionRequest(**chat_body(stream=True, n=n)))
        events = service.stream(chat, episode_id=None)
        for _ in range(n + 2):
            await events.__anext__()
        await events.aclose()

    anyio.run(read_a_little_then_leave)
    assert served.engine.closed_early == n


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def slow_server(settings, recorder) -> Iterator[tuple[str, EchoEngine]]:
    served = fake_served_model(MODEL, token_delay_s=0.02)
    app = make_app([served], recorder, settings)
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}", served.engine
    server.should_exit = True
    thread.join(timeout=10)


def test_a_client_disconnect_over_real_http_cancels_generation(slow_server):
    base_url, engine = slow_server
    # ~7 s of echo at 0.02 s a token (the fake's context is 512): the disconnect is seen long
    # before the stream would end, however loaded the machine
    body = chat_body("a long enough message to stream for a while " * 8, stream=True)
    with httpx.Client(base_url=base_url, timeout=60) as http:
        with http.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")
        deadline = time.monotonic() + 15
        while engine.closed_early == 0:
            assert time.monotonic() < deadline, "the engine stream was never closed"
            time.sleep(0.02)
        assert http.get("/healthz").status_code == 200
        reply = http.post("/v1/chat/completions", json=chat_body("hi"))
        assert reply.json()["choices"][0]["message"]["content"] == "echo: hi"


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_a_client_leaving_a_non_streamed_call_cancels_its_generation(slow_server, path):
    base_url, engine = slow_server
    text = "a long message that takes the slow engine many seconds to echo back " * 6
    body = (
        chat_body(text, n=2)
        if path.endswith("chat/completions")
        else {
            "model": MODEL,
            "prompt": text,
            "max_tokens": 1000,
            "n": 2,
        }
    )
    with httpx.Client(base_url=base_url, timeout=httpx.Timeout(10, read=0.5)) as http:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and hangs up
            http.post(path, json=body)
        # a generation that went on would finish (~8 s) without counting as closed early, so
        # the count alone tells; the deadline only bounds the wait, also on a loaded CI box
        deadline = time.monotonic() + 30
        while engine.closed_early < 2:
            assert time.monotonic() < deadline, "the abandoned generations went on"
            time.sleep(0.02)
        reply = http.post("/v1/chat/completions", json=chat_body("hi"))
        assert reply.json()["choices"][0]["message"]["content"] == "echo: hi"
