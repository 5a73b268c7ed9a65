"""Context tracking: recorded calls → timelines → prefix trees, and token-drift repair.

- `timelines`: an episode's calls to one policy merged into as few sequences as possible.
- `trees`: sequences sharing a prefix packed into one row with a tree attention layout.
- `drift`: replies the gateway generated go back into prompts as their sampled token ids.

Torch-free (the gateway imports it); the tensors are built in `trainer.policy.batching`.
"""

from trainer.context.drift import PriorCall, Splice, splice_prompt
from trainer.context.timelines import CallSpan, MergeResult, Timeline, merge_timelines
from trainer.context.trees import PackedRow, pack_trees

__all__ = [
    "CallSpan",
    "MergeResult",
    "PackedRow",
    "PriorCall",
    "Splice",
    "Timeline",
    "merge_timelines",
    "pack_trees",
    "splice_prompt",
]
