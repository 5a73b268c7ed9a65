"""A workflow that fails at import: `swarm run` must exit non-zero with the error."""

raise RuntimeError("this workflow is broken on purpose")
