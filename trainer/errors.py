"""Errors the trainer raises. Torch-free, so the gateway can map them to HTTP."""


class TrainerError(Exception):
    """Root of every error the trainer raises on purpose."""


class ModelNotAvailable(TrainerError):
    """A model name or path that cannot be loaded here (unknown name, missing files)."""


class EngineStopped(TrainerError):
    """The engine was shut down while a request was waiting or running."""


class EngineFailure(TrainerError):
    """The engine's forward pass failed; the request cannot finish."""


class PromptTooLong(TrainerError):
    """The prompt leaves no room for a completion in the model's context window."""


class ChatFormatError(TrainerError):
    """The model's chat template rejected the messages (e.g. roles in an order it forbids)."""


class InvalidPrompt(TrainerError):
    """The prompt holds token ids the model does not have."""


class PolicyHostLost(TrainerError):
    """The process hosting a policy (a Ray actor) died; the run restores from its checkpoint."""


class InsufficientDisk(TrainerError):
    """A checkpoint would not fit on its filesystem (with margin); nothing was written."""

    def __init__(self, message: str, *, needed: int = 0, free: int = 0):
        super().__init__(message)
        self.needed = needed
        self.free = free


class CheckpointPathError(TrainerError):
    """A checkpoint path that leads out of the directory it names; nothing was written."""


class InvalidGrammar(TrainerError):
    """A constraint (a JSON schema, a tool's parameters) the grammar library rejects: not a
    valid schema, or a feature it does not implement; the message is the library's."""


class GrammarUnavailable(TrainerError):
    """Constrained decoding was asked for, but the grammar library (llguidance) is not
    installed where the model is served."""
