"""An episode trace (`GET /swarm/episodes/{id}`, `swarm.protocol.EpisodeTrace` as JSON)
turned into what the trace viewer draws: per policy, each timeline's tokens with their loss
mask (trained or context), logprob, text, and the call each belongs to; and the timelines of
an episode's GRPO group as a prefix tree — what tree packing computes once (the shared
prefix) and what per branch.

Token text comes from the trace's text pieces: a timeline's `token_texts` (one per id);
for traces without them, a completion token's own `token_texts` entry, a prompt token's
`prompt_token_texts` entry or the text of the same id elsewhere in the episode; otherwise
its id, shown as ⟨id⟩. Plain Python: no HTTP, no trainer (the tree is a local trie)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Token:
    text: str
    trained: bool
    title: str


@dataclass
class Segment:
    """One call's part of a timeline: its new prompt tokens, then its completion."""

    call_index: int
    version: int
    drift: str | None
    tokens: list[Token] = field(default_factory=list)


@dataclass
class TimelineView:
    policy: str
    number: int
    length: int
    trained: int
    segments: list[Segment]


def _texts(calls: list[dict]) -> dict[int, str]:
    known: dict[int, str] = {}
    for call in calls:
        for ids, pieces in (
            (call.get("completion_token_ids", []), call.get("token_texts") or []),
            (call.get("prompt_token_ids", []), call.get("prompt_token_texts") or []),
        ):
            for token_id, text in zip(ids, pieces, strict=False):
                known.setdefault(token_id, text)
    return known


def _spans(timeline: dict) -> list[dict]:
    n = len(timeline["token_ids"])
    return timeline.get("calls") or [{"call_index": -1, "prompt_start": 0, "completion_start": n,
                                      "completion_end": n, "version": 0}]  # fmt: skip


def timeline_texts(timeline: dict, by_index: dict[int, dict], known: dict[int, str]) -> list[str]:
    """One text per token of `timeline`: its own `token_texts`, else pieced together."""
    ids = timeline["token_ids"]
    texts = timeline.get("token_texts")
    if texts is not None and len(texts) == len(ids):
        return list(texts)
    texts = [known.get(token_id, f"⟨{token_id}⟩") for token_id in ids]
    for span in _spans(timeline):
        call = by_index.get(span["call_index"], {})
        start = span["completion_start"]
        for offset, piece in enumerate(call.get("token_texts") or []):
            if start + offset < min(span["completion_end"], len(ids)):
                texts[start + offset] = piece
    return texts


def _token(token_id: int, text: str, trained: bool, logprob: float) -> Token:
    title = f"id {token_id} · " + (f"logprob {logprob:.4f}" if trained else "context (not trained)")
    return Token(text, trained, title)


def timeline_views(trace: dict) -> list[TimelineView]:
    calls = trace.get("calls", [])
    by_index = {call["index"]: call for call in calls}
    known = _texts(calls)
    views = []
    for policy, timelines in trace.get("timelines", {}).items():
        for number, timeline in enumerate(timelines):
            ids, mask, logprobs = timeline["token_ids"], timeline["loss_mask"], timeline["logprobs"]
            texts = timeline_texts(timeline, by_index, known)
            segments = []
            for span in _spans(timeline):
                call = by_index.get(span["call_index"], {})
                segment = Segment(span["call_index"], span.get("version", 0), call.get("drift"))
                for position in range(span["prompt_start"], span["completion_end"]):
                    token = _token(ids[position], texts[position], bool(mask[position]),
                                   logprobs[position])  # fmt: skip
                    segment.tokens.append(token)
                segments.append(segment)
            views.append(TimelineView(policy, number, len(ids), sum(mask), segments))
    return views


# -- the group's prefix tree -----------------------------------------------------------------


@dataclass
class PrefixNode:
    """Tokens `[start, end)` shared by the sequences `members` (indices), then `children`,
    which diverge at `end`; a member that ends at `end` has no child."""

    start: int
    end: int
    members: list[int]
    children: list[PrefixNode] = field(default_factory=list)


def _shared_end(sequences: list[list[int]], group: list[int], start: int) -> int:
    """Where the sequences `group` (all at least `start` long) first differ, or the
    shortest one ends."""
    first = sequences[group[0]]
    for i in range(start, min(len(sequences[m]) for m in group)):
        if any(sequences[m][i] != first[i] for m in group[1:]):
            return i
    return min(len(sequences[m]) for m in group)


def prefix_tree(
    sequences: list[list[int]], members: list[int] | None = None, start: int = 0
) -> list[PrefixNode]:
    """The trie over `sequences`, chains collapsed into segments: one root per distinct
    first token (a single root when they all share a prefix)."""
    members = list(range(len(sequences))) if members is None else members
    by_next: dict[int, list[int]] = {}
    for member in members:
        if len(sequences[member]) > start:
            by_next.setdefault(sequences[member][start], []).append(member)
    nodes = []
    for group in by_next.values():
        end = _shared_end(sequences, group, start)
        nodes.append(PrefixNode(start, end, group, prefix_tree(sequences, group, end)))
    return nodes


@dataclass
class TreeNodeView:
    start: int  # the token index where it diverges from its parent (0: a root)
    length: int
    trained: int
    episodes: list[tuple[str, str]]  # (episode id, branch label) of the branches through it
    ends: list[str]  # labels of the branches that end with it
    mine: bool  # the episode on the page runs through it
    preview: str
    tokens: list[Token]
    children: list[TreeNodeView]


@dataclass
class GroupTreeView:
    policy: str
    branches: int
    shared: int  # the prefix every branch shares: computed once
    tree_tokens: int  # tokens as one tree (what tree packing computes)
    total_tokens: int  # tokens as separate sequences
    roots: list[TreeNodeView]


@dataclass
class _Branch:
    episode_id: str
    label: str
    ids: list[int]
    texts: list[str]
    mask: list[int]
    logprobs: list[float]


def _preview(texts: list[str], limit: int = 60) -> str:
    text = "".join(texts).replace("\n", "⏎")
    return text if len(text) <= 2 * limit else f"{text[:limit]} … {text[-limit:]}"


def _node_view(node: PrefixNode, branches: list[_Branch], episode_id: str) -> TreeNodeView:
    tokens = []
    for position in range(node.start, node.end):
        through = [branches[m] for m in node.members]
        trainer = next((b for b in through if b.mask[position]), through[0])
        tokens.append(_token(trainer.ids[position], trainer.texts[position],
                             bool(trainer.mask[position]), trainer.logprobs[position]))  # fmt: skip
    first = branches[node.members[0]]
    return TreeNodeView(
        start=node.start,
        length=node.end - node.start,
        trained=sum(t.trained for t in tokens),
        episodes=[(branches[m].episode_id, branches[m].label) for m in node.members],
        ends=[branches[m].label for m in node.members if len(branches[m].ids) == node.end],
        mine=any(branches[m].episode_id == episode_id for m in node.members),
        preview=_preview(first.texts[node.start : node.end]),
        tokens=tokens,
        children=[_node_view(child, branches, episode_id) for child in node.children],
    )


def _tree_size(nodes: list[PrefixNode]) -> int:
    return sum(node.end - node.start + _tree_size(node.children) for node in nodes)


def group_trees(trace: dict, members: list[dict]) -> list[GroupTreeView]:
    """Per policy, the timelines of the episode `trace` and its group's other episodes
    (`members`: their traces) as a prefix tree; none when fewer than two branches."""
    branches_by_policy: dict[str, list[_Branch]] = {}
    for member in [trace, *(m for m in members if m["episode_id"] != trace["episode_id"])]:
        calls = member.get("calls", [])
        by_index, known = {call["index"]: call for call in calls}, _texts(calls)
        for policy, timelines in member.get("timelines", {}).items():
            for number, timeline in enumerate(timelines):
                label = member["episode_id"] + (
                    f" · timeline {number}" if len(timelines) > 1 else ""
                )
                branches_by_policy.setdefault(policy, []).append(_Branch(
                    member["episode_id"], label, timeline["token_ids"],
                    timeline_texts(timeline, by_index, known), timeline["loss_mask"],
                    timeline["logprobs"]))  # fmt: skip
    views = []
    for policy, branches in branches_by_policy.items():
        if len(branches) < 2:
            continue
        roots = prefix_tree([b.ids for b in branches])
        shared = roots[0].end if len(roots) == 1 and len(roots[0].members) == len(branches) else 0
        views.append(GroupTreeView(
            policy=policy, branches=len(branches), shared=shared, tree_tokens=_tree_size(roots),
            total_tokens=sum(len(b.ids) for b in branches),
            roots=[_node_view(root, branches, trace["episode_id"]) for root in roots]))  # fmt: skip
    return views
