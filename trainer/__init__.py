"""swarmrl's ML core: model loading, rollout engines, and (next) context tracking, losses,
optimizers and checkpoints.

It knows nothing of HTTP, databases or the swarm. Its torch-free face — the records and
interfaces the gateway uses — is `trainer.types`, `trainer.chat_format` and
`trainer.errors`; everything else here may import torch.
"""
