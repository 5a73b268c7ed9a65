"""Trainable policies on torch: `TorchPolicyFactory` builds them, `TorchPolicyTrainer`
updates them (see `trainer.types.PolicyFactory` / `PolicyTrainer` for the contracts)."""

from trainer.policy.factory import TorchPolicyFactory
from trainer.policy.trainer import TorchPolicyTrainer

__all__ = ["TorchPolicyFactory", "TorchPolicyTrainer"]
