"""The swarmrl gateway: a persistent FastAPI service in front of the trainers.

OpenAI-compatible endpoints, episodes and their recorded calls, the swarm API. The app is
built by `gateway.app.make_app` from torch-free interfaces (`trainer.types`); only the
composition root (`gateway/__main__.py`) knows which engine serves the models.
"""
