"""The swarm client SDK: run agent code anywhere and train it over HTTP.

`swarm.protocol` holds the wire types shared with the gateway. The client (episodes,
`swarm run workflow.py`) lands next. This package never imports torch, nor anything of
ours outside `swarm`; it needs only pydantic, httpx and openai.
"""
