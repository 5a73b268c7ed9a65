"""Keeping a study folder within its disk budget once its runs are evaluated.

Every ended run leaves its final weights with the gateway (a 0.27 GB bf16 export for the
bundled model), so a study of 8+ runs on an embedded gateway — whose state lies in the
study folder — would pass a 2 GB budget on exports alone. Once a round's runs are scored,
their weights are needed by nothing the study does next (a later look reuses a run's
result, not its policy). So after each evaluation the oldest evaluated runs' checkpoints
are deleted through the gateway (`DELETE /runs/{name}/checkpoints/{step}`) until the folder
holds at most `KEEP_SHARE` of the budget, leaving room for the next look's exports.

Only what the folder holds counts: a remote gateway's checkpoints are its own business and
are never deleted. Knows the gateway's HTTP client and the study's rows, not the graph.
"""

from __future__ import annotations

from researcher.context import StudyContext
from researcher.errors import ResearcherError
from researcher.settings import directory_size, format_size

KEEP_SHARE = 0.5  # of the disk budget, after an evaluation: room for a look's exports
DELETED = "deleted to keep the study within its disk budget"
EVENT_PREFIX = "weights of "


def keep_within_disk_budget(ctx: StudyContext, evaluated: list[str]) -> list[str]:
    """Delete the checkpoints of `evaluated` runs (gateway run names, oldest first) until the
    study folder holds at most KEEP_SHARE of its disk budget; the runs whose weights went."""
    budget = ctx.settings.disk_budget_bytes
    used = directory_size(ctx.directory)
    deleted: list[str] = []
    for run in evaluated:
        if used <= KEEP_SHARE * budget:
            break
        try:
            points = ctx.gateway.checkpoints(run)
            for point in points:
                ctx.gateway.delete_checkpoint(run, point["step"])
        except ResearcherError as error:  # an older gateway, or the run is gone
            ctx.event("evaluate", "problem", f"{run}: its weights could not be deleted: {error}")
            continue
        if not points:
            continue
        before, used = used, directory_size(ctx.directory)
        deleted.append(run)
        ctx.event(
            "evaluate", "action",
            f"{EVENT_PREFIX}{run} {DELETED} (evaluated; its result is kept)",
            reason=f"the study folder held {format_size(before)} of its "
                   f"{format_size(budget)} disk budget; now {format_size(used)}",
            data={"deleted_weights": run},
        )  # fmt: skip
    return deleted
