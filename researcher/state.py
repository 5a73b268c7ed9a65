"""The study graph's state: what the LangGraph checkpoint carries from node to node.

Plain JSON values only (plan records as `model_dump()` dicts), so the SQLite checkpoint
round-trips them exactly. What lives outside processes and restarts — experiments, client
processes, metric snapshots, interventions, events — is in the study database, and the
nodes read it from there; the state holds the plan and the per-round bookkeeping.
"""

from __future__ import annotations

from typing import Any, TypedDict


class StudyState(TypedDict, total=False):
    study_id: str
    framing: dict[str, Any]  # plan.Framing
    hypotheses: list[dict[str, Any]]  # plan.Hypothesis, every round's
    hypothesis: str  # the key under test this round
    round: int  # 1, 2, ...
    design: dict[str, Any]  # plan.Design of this round
    designs: list[dict[str, Any]]  # every round's, in order
    experiments: list[str]  # this round's experiment ids (arm × seed)
    feedback: dict[str, str]  # arm -> the dry-run failure its code must fix
    repairs: dict[str, int]  # arm -> repairs so far
    validated: list[str]  # arms whose code passed the dry-run this round
    actions: list[dict[str, Any]]  # what monitor asks act to do
    progress: dict[
        str, list[float]
    ]  # experiment -> [last step, when it moved, started, its time share]
    health: dict[str, list[int]]  # experiment -> [finished, aborted] at its last code edit
    notes: list[str]  # human notes read so far (the planner sees them all)
    results: list[list[dict[str, Any]]]  # per round: plan.RunResult
    analyses: list[dict[str, Any]]  # per round: plan.Analysis
    decision: dict[str, Any]  # plan.Decision of the last round
    rejected: bool  # a human rejected the design (--ask)
    planned: dict[str, Any]  # plan.Design the pilot round checks before it runs
    pilot: dict[str, Any]  # plan.Pilot: what the pilot found
    pilot_used_s: float  # the study's budget used when the pilot started
    outcome: str  # "concluded" | "rejected" | "no valid workflow" | "budget"
