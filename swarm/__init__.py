"""The swarm client SDK: run agent code anywhere and train it over HTTP.

    from swarm import SwarmClient, Episode

`swarm.protocol` holds the wire types shared with the gateway; `swarm.web_guards` the
Host/Origin checks the gateway and the researcher UI share (standard library only);
`swarm.client` the HTTP client; `swarm.episode` what a rollout sees; `swarm.runner` and
`swarm.cli` the `swarm run workflow.py` command; `swarm.tasks` the shipped task environments. This package
never imports torch, nor anything of ours outside `swarm`; it needs only httpx, openai,
pydantic, rich, typer and tenacity. The names below load on first use, so importing
`swarm.protocol` (as the gateway does) pulls in no HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarm.client import SwarmClient
    from swarm.episode import Episode
    from swarm.errors import SwarmError

__all__ = ["Episode", "SwarmClient", "SwarmError"]

_HOMES = {"SwarmClient": "swarm.client", "Episode": "swarm.episode", "SwarmError": "swarm.errors"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'swarm' has no attribute {name!r}")
