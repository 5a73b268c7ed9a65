"""Where the researcher keeps things, and how a study is configured.

Owns: `$SWARMRL_HOME` (default `~/.swarmrl`) and the layout under it — `researcher.db`
(the study database, unless `--db URL` / `$SWARMRL_DB_URL` names another), `studies/<id>/`
(one folder per study: its LangGraph checkpoint, generated workflows, client logs, report),
`gateway/` (the embedded gateway's state) and `secrets/` (0700: each study's embedded
gateway admin key, 0600, outside every folder a client works in) — plus `parse_budget` and
`parse_parallel_runs` and
`StudySettings`, the typed configuration a study is started with (saved without its
`api_key`: a key given on the command line stays in memory and in `$SWARMRL_API_KEY`).
Knows nothing of LangGraph or HTTP.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from researcher.errors import ResearcherError

DEFAULT_MODEL = "smollm2-135m"
BUDGET_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip
DEFAULT_DISK_BUDGET = 2 * 10**9  # bytes: the study folder (gateway state, checkpoints, logs)
MAX_BUDGET_S = 30 * 86400


class BadBudget(ResearcherError):
    """A budget that is not a positive duration like 20m, 6h or 3d."""


def swarmrl_home() -> Path:
    return Path(os.environ.get("SWARMRL_HOME") or "~/.swarmrl").expanduser()


def database_url(explicit: str | None = None) -> str:
    """`--db URL`, else `$SWARMRL_DB_URL`, else SQLite at `$SWARMRL_HOME/researcher.db`."""
    url = explicit or os.environ.get("SWARMRL_DB_URL")
    return url or f"sqlite:///{swarmrl_home() / 'researcher.db'}"


def studies_dir() -> Path:
    return swarmrl_home() / "studies"


def gateway_key_path(study_id: str) -> Path:
    """Where the admin key of `study_id`'s embedded gateway is kept (0600 in a 0700 folder)."""
    return swarmrl_home() / "secrets" / f"{study_id}.gateway-key"


def write_gateway_key(study_id: str, key: str) -> None:
    path = gateway_key_path(study_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(key)


def read_gateway_key(study_id: str) -> str | None:
    """The embedded gateway's admin key of `study_id`, if one was kept."""
    try:
        return gateway_key_path(study_id).read_text().strip() or None
    except OSError:
        return None


def parse_budget(text: str) -> float:
    """'20m' → 1200.0. Units s, m, h, d; a bare number is minutes. At most 30 days."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text).lower())
    if match is None:
        raise BadBudget(
            f"budget {text!r} is not a duration: use a number with a unit, e.g. 90s, 20m, 6h or 3d"
        )
    seconds = float(match.group(1)) * BUDGET_UNITS[match.group(2) or "m"]
    if seconds <= 0:
        raise BadBudget(f"budget {text!r} is zero: give the study some time, e.g. 20m")
    if seconds > MAX_BUDGET_S:
        raise BadBudget(f"budget {text!r} is over 30 days; split the question into studies")
    return seconds


class BadParallelRuns(ResearcherError):
    """A --parallel-runs that is neither a positive whole number nor "auto"."""


def parse_parallel_runs(text: str) -> int | Literal["auto"]:
    """'auto' → 'auto' (the gateway's suggestion, resolved at start); '2' → 2."""
    value = str(text).strip().lower()
    if value == "auto":
        return "auto"
    if not value.isdigit() or int(value) < 1:
        raise BadParallelRuns(
            f"--parallel-runs {text!r}: give a number of runs to train at once (1, 2, …) or "
            "auto (ask the gateway: GET /capacity)"
        )
    return int(value)


class BadSize(ResearcherError):
    """A disk budget that is not a size like 2GB, 500MB or 10GiB."""


def parse_size(text: str) -> int:
    """'2GB' → 2_000_000_000; units B, KB, MB, GB, TB (powers of 1000) and KiB … TiB."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(text).lower())
    if match is None or match.group(2) not in SIZE_UNITS:
        raise BadSize(f"disk budget {text!r} is not a size: use e.g. 500MB, 2GB or 10GiB")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def directory_size(path: Path) -> int:
    """Bytes of the files under `path` (what it holds on disk, near enough; files that go
    while it is walked are skipped)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def format_size(size: float) -> str:
    return f"{size / 10**9:.2f} GB" if size >= 10**8 else f"{size / 10**6:.0f} MB"


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class StudySettings(BaseModel):
    """What `researcher start` was asked; saved with the study (its directory's settings.json)."""

    question: str
    budget_s: float = Field(gt=0)
    gateway: str | None = None  # None: an embedded `gateway serve` for this study
    planner: str = "template"  # "template" or an OpenAI-compatible base URL
    planner_model: str | None = None
    model: str | None = None  # the gateway model to train; None: the planner picks a served one
    # the user's own workflow file (absolute path), studied instead of a shipped task; a copy
    # is kept in the study folder for the record, the runs import this one through a wrapper
    workflow: str | None = None
    embedded_model: str = DEFAULT_MODEL  # what the embedded gateway serves
    seeds: int = Field(default=2, ge=1, le=10)
    ask: bool = False  # wait for a human to approve each design
    # train the control's first seeds before the comparison: check the task is learnable,
    # measure a run's cost and the seeds' variation (`researcher.pilot`)
    pilot: bool = True
    api_key: str | None = None  # the --gateway's admin key; never written to settings.json
    # runs training at once: a number, or "auto" — the gateway's suggestion (GET /capacity),
    # resolved to a number when the study connects to it (researcher/concurrency.py)
    parallel_runs: Annotated[int, Field(ge=1)] | Literal["auto"] = "auto"
    clients_per_run: int = Field(default=1, ge=1)
    client_concurrency: int = Field(default=8, ge=1)
    episode_timeout_s: float = Field(default=120.0, gt=0)
    validate_timeout_s: float = Field(default=300.0, gt=0)
    max_repairs: int = Field(default=2, ge=0)
    max_client_restarts: int = Field(default=3, ge=0)
    stall_s: float = Field(default=600.0, gt=0)  # no training step for this long: stalled
    launcher: Literal["local", "ray"] = "local"  # how clients run: processes here, or Ray jobs
    ray_address: str | None = None  # the Ray job server (resolved at start; `resume` keeps it)
    # what contains a client process (a local one; see researcher/launcher/local.py)
    client_cpu_s: int | None = Field(default=24 * 3600, ge=1)  # RLIMIT_CPU; None: no limit
    client_memory_mb: int | None = Field(default=4096, ge=64)  # RLIMIT_DATA
    client_processes: int | None = Field(default=512, ge=8)  # tasks beyond the user's own
    client_env_allow: list[str] = Field(default_factory=list)  # more variables clients inherit

    def public_json(self) -> str:
        """settings.json: everything but the admin key."""
        return self.model_dump_json(indent=2, exclude={"api_key"})

    # the study folder's disk budget (its gateway's checkpoints above all): runs keep one
    # checkpoint, checkpoint periodically only when it is large, monitor measures, report says
    disk_budget_bytes: int = Field(default=DEFAULT_DISK_BUDGET, ge=0)
