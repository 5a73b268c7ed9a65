"""Training runs: `manager` (`RunManager`, run control's one entry point: lifecycle),
with its reads (`queries`), checkpoints and retention (`checkpoints`), ended runs' release
(`release`) and policies served from disk (`ended_policies`), restore and recovery
(`restore`); one run's record and settings (`run`), its persistence (`store`), the
training loop (`training`), the group buffer (`buffer`), task mixing (`task_mix`),
episodes to samples (`samples`) and a step's metrics (`step_metrics`).

Owns what a run is and when it trains. Decides nothing about what a step trained: the
trainer reports that and this package records it. Must not know HTTP.
"""
