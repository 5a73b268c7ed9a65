"""The study graph's nodes, one file each; `researcher.graph` wires them.

Every node takes `(state, runtime)` and returns the state keys it changes. Nodes reach the
outside world only through `runtime.context` (a `researcher.context.StudyContext`).
"""
