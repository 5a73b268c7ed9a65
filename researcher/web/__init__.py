"""The experiment web UI (`researcher ui`): studies, runs, live curves, token-level traces,
and the interventions a person steers a study with.

`make_app(engine, token=..., gateway_factory=...)` builds it; the pages read the same
study database as the researcher and write interventions and events into it, and talk to
a study's gateway over HTTP only. Knows nothing of LangGraph or the gateway's internals.
"""
