"""An episode trace (`GET /swarm/episodes/{id}`, `swarm.protocol.EpisodeTrace` as JSON)
turned into what the trace viewer draws: per policy, each timeline's tokens with their loss
mask (trained or context), logprob, text, and the call each belongs to.

Token text comes from the trace's text pieces: a completion token's own `token_texts`
entry; a prompt token's text when the same id was generated somewhere in the episode;
otherwise its id, shown as ⟨id⟩."""

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
        for token_id, text in zip(
            call.get("completion_token_ids", []), call.get("token_texts", []), strict=False
        ):
            known.setdefault(token_id, text)
    return known


def timeline_views(trace: dict) -> list[TimelineView]:
    calls = trace.get("calls", [])
    by_index = {call["index"]: call for call in calls}
    known = _texts(calls)
    views = []
    for policy, timelines in trace.get("timelines", {}).items():
        for number, timeline in enumerate(timelines):
            ids, mask, logprobs = timeline["token_ids"], timeline["loss_mask"], timeline["logprobs"]
            segments = []
            spans = timeline.get("calls") or [{"call_index": -1, "prompt_start": 0,
                                                "completion_start": len(ids),
                                                "completion_end": len(ids), "version": 0}]  # fmt: skip
            for span in spans:
                call = by_index.get(span["call_index"], {})
                pieces = call.get("token_texts", [])
                segment = Segment(span["call_index"], span.get("version", 0), call.get("drift"))
                for position in range(span["prompt_start"], span["completion_end"]):
                    token_id = ids[position]
                    offset = position - span["completion_start"]
                    if 0 <= offset < len(pieces):
                        text = pieces[offset]
                    else:
                        text = known.get(token_id, f"⟨{token_id}⟩")
                    trained = bool(mask[position])
                    title = f"id {token_id} · " + (
                        f"logprob {logprobs[position]:.4f}" if trained else "context (not trained)"
                    )
                    segment.tokens.append(Token(text, trained, title))
                segments.append(segment)
            views.append(TimelineView(policy, number, len(ids), sum(mask), segments))
    return views
