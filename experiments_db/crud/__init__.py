"""Keyword-only CRUD functions over the swarmrl tables, one module per table family.

Owns: the queries. Callers own the session (and so the transaction); nothing here knows
who is calling or why. Import them from here: `crud.insert_episode(session, episode=...)`.
"""

from experiments_db.crud.clients import get_client, insert_client, mark_client_gone
from experiments_db.crud.episodes import (
    count_calls,
    count_open_episodes_by_client,
    find_episode_by_key_hash,
    get_episode,
    insert_calls,
    insert_episode,
    list_calls,
    list_open_episode_ids,
    list_unconsumed_episodes,
    mark_episodes_consumed,
    unconsume_episodes_after,
)
from experiments_db.crud.runs import (
    RUN_COUNTERS,
    bump_run_counters,
    delete_metrics_after,
    get_checkpoint,
    get_run,
    insert_checkpoint,
    insert_metrics,
    insert_run,
    list_checkpoints,
    list_metrics,
    list_policies,
    list_runs,
    set_policy_versions,
    update_run,
)
from experiments_db.crud.samples import (
    insert_samples,
    list_samples,
    mark_samples,
    rebuffer_samples_after,
)

__all__ = [
    "RUN_COUNTERS",
    "bump_run_counters",
    "delete_metrics_after",
    "count_calls",
    "count_open_episodes_by_client",
    "find_episode_by_key_hash",
    "get_checkpoint",
    "get_client",
    "get_episode",
    "get_run",
    "insert_calls",
    "insert_checkpoint",
    "insert_client",
    "insert_episode",
    "insert_metrics",
    "insert_run",
    "insert_samples",
    "list_calls",
    "list_checkpoints",
    "list_metrics",
    "list_open_episode_ids",
    "list_unconsumed_episodes",
    "list_policies",
    "list_runs",
    "list_samples",
    "mark_client_gone",
    "mark_episodes_consumed",
    "mark_samples",
    "rebuffer_samples_after",
    "set_policy_versions",
    "unconsume_episodes_after",
    "update_run",
]
