"""The researcher's errors: one root, `ResearcherError`, and the user mistakes it names.

Every error here is something a user (or a planner endpoint) did and gets an actionable
message; invariants are asserts. Must not know about HTTP, the CLI or the database: the CLI
decides how an error is shown and the graph records it as a study event.
"""

from __future__ import annotations


class ResearcherError(Exception):
    """Root of the researcher's errors."""


class ClientEnvRefused(ResearcherError):
    """A variable given to pass to a study's clients (`--client-env`, the start form) that is
    not a variable's name, or one a client is never handed."""


class EmptyQuestion(ResearcherError):
    """The research question is empty or only whitespace/punctuation."""


class UnmappableQuestion(ResearcherError):
    """The template planner cannot map the question onto an experiment family it knows.

    The message lists the families and example questions, so the user can rephrase (or
    point `--planner` at an LLM endpoint)."""


class PlannerOutputError(ResearcherError):
    """An LLM planner kept answering with something unusable (invalid JSON, a record that
    fails validation, code that does not parse or imports something missing)."""


class UnreadableQuestion(UnmappableQuestion):
    """A question about training that does not say enough to read one factor, its levels and
    a task from it; the message says exactly what is missing and how to ask."""


class NotAboutTraining(UnmappableQuestion):
    """A question that is not about training a model at all ("what is the capital of
    France?"): refused as such, never turned into an experiment."""
