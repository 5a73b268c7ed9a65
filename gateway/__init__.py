"""The swarmrl gateway: a persistent FastAPI service in front of the trainers.

OpenAI-compatible endpoints, episodes and their recorded calls, the swarm API (clients,
episodes), run control and the training loop, Prometheus metrics. The app is built by
`gateway.http.app.make_app` from torch-free interfaces (`trainer.types`, `PolicyFactory`); only
the composition root (`gateway/__main__.py`) knows which engine serves and trains.
"""
