"""Browser-test harness: real headless Chromium (Debian's `/usr/bin/chromium`) driven by
Playwright's sync API, and an ASGI app served by uvicorn on a free loopback port.

Fixtures:
- `browser` (session): a headless Chromium. Skips the test, with the reason, when
  `/usr/bin/chromium` or the `playwright` package is missing (`make install` adds both
  where it can; never run `playwright install`: its browser download is not used).
- `page`: a fresh browser context and page (no shared cookies or storage), 10 s default
  timeout. A failing test that used it leaves `artifacts/<test>-failed.png`.
- `screenshot(page, name)` → the PNG's path under `tests/e2e/artifacts/` (gitignored).
- `live_server(app)` → the base URL of `app` served in a thread; stopped after the test.

Tests that use `browser` (or `page`) get the `browser` marker: `pytest -m "not browser"`
leaves them out. Run them: `.venv/bin/python -m pytest -q tests/e2e`.
"""

from __future__ import annotations

import importlib.util
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Debian's chromium runs headless as root, in containers, without a GPU, with these; the
# user-data-dir is a fresh temporary one that Playwright makes per launch.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
DEFAULT_TIMEOUT_MS = 10_000
SERVER_START_TIMEOUT_S = 10.0


def browser_missing() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return (
            f"{CHROMIUM} is missing: `make install` installs Debian's chromium as root or "
            "with passwordless sudo (or run `sudo apt-get install chromium`)"
        )
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing: `.venv/bin/pip install -e '.[dev]'`"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives real headless Chromium (tests/e2e)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()) and here in item.path.parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call" and report.failed and "page" in getattr(item, "funcargs", {}):
        try:
            save_screenshot(item.funcargs["page"], f"{item.name}-failed")
        except Exception as error:  # the page may be gone; the test's own failure matters
            report.sections.append(("failure screenshot", f"not saved: {error!r}"))
    return report


@pytest.fixture(scope="module")  # not session: playwright's sync API keeps an event loop
def browser() -> Iterator[object]:  # running in this thread, and later asyncio.run() fails
    reason = browser_missing()
    if reason is not None:
        pytest.skip(f"browser tests skipped: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


def save_screenshot(page, name: str) -> Path:
    """Save the whole page as `tests/e2e/artifacts/<name>.png` and return the path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def screenshot() -> Callable[[object, str], Path]:
    return save_screenshot


def free_loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
def live_server() -> Iterator[Callable[[object], str]]:
    """`live_server(app)` serves the ASGI `app` with uvicorn in a thread on a free
    loopback port (its lifespan runs) and returns `http://127.0.0.1:<port>`."""
    import uvicorn

    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def serve(app) -> str:
        sock = free_loopback_socket()
        config = uvicorn.Config(app, log_level="warning", ws="none")
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="e2e-uvicorn", daemon=True
        )
        thread.start()
        running.append((server, thread, sock))
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start within {SERVER_START_TIMEOUT_S} s")
            time.sleep(0.01)
        host, port = sock.getsockname()
        return f"http://{host}:{port}"

    yield serve
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(timeout=SERVER_START_TIMEOUT_S)
        sock.close()
