"""The autonomous researcher: plans RL experiments, writes workflows, runs them against the
gateway (over HTTP only), watches them, and reports.

Today it holds what the researcher stands on — starting a local gateway process and the
training demo behind `make demo`. The LangGraph planner, launcher, monitor, analysis,
report writer, the `researcher` CLI and the web UI land here next.
"""
