"""The browser harness works end to end: a FastAPI page served on loopback, opened in
headless Chromium, a click that changes the page through fetch(), and a screenshot.

Run: `.venv/bin/python -m pytest -q tests/e2e/test_browser_smoke.py` (a few seconds).
"""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

pytestmark = pytest.mark.timeout(60)

PAGE = """<!doctype html>
<html><head><title>e2e smoke</title></head>
<body>
  <h1>Smoke</h1>
  <p id="status">waiting</p>
  <button id="ping">Ping</button>
  <script>
    document.getElementById("ping").addEventListener("click", async () => {
      const response = await fetch("/api/ping", {method: "POST"});
      const body = await response.json();
      document.getElementById("status").textContent = body.message;
    });
  </script>
</body></html>
"""


def make_smoke_app() -> tuple[FastAPI, list[int]]:
    app = FastAPI()
    pings: list[int] = []

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return PAGE

    @app.post("/api/ping")
    def ping() -> dict:
        pings.append(len(pings) + 1)
        return {"message": f"pong {len(pings)}"}

    return app, pings


def test_a_click_changes_the_page_through_fetch(page, live_server, screenshot):
    from playwright.sync_api import expect

    app, pings = make_smoke_app()
    page.goto(live_server(app))
    expect(page).to_have_title("e2e smoke")
    expect(page.locator("#status")).to_have_text("waiting")

    page.click("#ping")
    expect(page.locator("#status")).to_have_text("pong 1")
    page.get_by_role("button", name="Ping").click()
    expect(page.locator("#status")).to_have_text("pong 2")
    assert pings == [1, 2]

    path = screenshot(page, "browser-smoke")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
