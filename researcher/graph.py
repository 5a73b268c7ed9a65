"""The study graph's wiring — and nothing else (nodes: `researcher.nodes.*`).

    frame → hypothesize → design → approve ─(rejected)──────────────────────────────┐
                            ↑         └→ write_code ⇄ validate (repair, bounded)     │
                            │                          └→ launch ⇄ monitor ⇄ act     │
                            │                                        └→ evaluate     │
                            └──(refine)── decide ← analyse ←────────────┘            │
                                            └─(conclude)→ report ←───────────────────┘

Checkpointed by the caller (`researcher.study`), which runs it with `durability="sync"`
so a finished node is never run again after kill -9.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from researcher.context import StudyContext
from researcher.nodes.act import act
from researcher.nodes.analyse import analyse
from researcher.nodes.approve import approve
from researcher.nodes.decide import decide
from researcher.nodes.design import design
from researcher.nodes.evaluate import evaluate
from researcher.nodes.frame import frame
from researcher.nodes.hypothesize import hypothesize
from researcher.nodes.launch import launch
from researcher.nodes.monitor import monitor
from researcher.nodes.report import report
from researcher.nodes.validate import validate
from researcher.nodes.write_code import write_code
from researcher.routes import after_approve, after_decide, after_monitor, after_validate
from researcher.state import StudyState


def build_graph() -> StateGraph:
    graph = StateGraph(StudyState, context_schema=StudyContext)
    for name, node in [
        ("frame", frame), ("hypothesize", hypothesize), ("design", design), ("approve", approve),
        ("write_code", write_code), ("validate", validate), ("launch", launch),
        ("monitor", monitor), ("act", act), ("evaluate", evaluate), ("analyse", analyse),
        ("decide", decide), ("report", report),
    ]:  # fmt: skip
        graph.add_node(name, node)
    graph.add_edge(START, "frame")
    graph.add_edge("frame", "hypothesize")
    graph.add_edge("hypothesize", "design")
    graph.add_edge("design", "approve")
    graph.add_conditional_edges("approve", after_approve, ["write_code", "report"])
    graph.add_edge("write_code", "validate")
    graph.add_conditional_edges("validate", after_validate, ["write_code", "launch", "report"])
    graph.add_edge("launch", "monitor")
    graph.add_conditional_edges("monitor", after_monitor, ["act", "launch", "monitor", "evaluate"])
    graph.add_edge("act", "monitor")
    graph.add_edge("evaluate", "analyse")
    graph.add_edge("analyse", "decide")
    graph.add_conditional_edges("decide", after_decide, ["design", "report"])
    graph.add_edge("report", END)
    return graph
