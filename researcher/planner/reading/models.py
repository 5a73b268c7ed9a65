"""Model requests in a question: the models or sizes it names ("7B", "Qwen 32B", "llama"),
whether a served model is what a request asks for, and a model's size from its name. Also
used by the template planner to pick the served model a study trains.

Must not know about the rest of the reading (factors, levels, tasks) or the gateway.
"""

from __future__ import annotations

import re

_MODEL_NAMES = r"qwen|llama|mistral|mixtral|gemma|phi|smollm|deepseek|gpt|olmo"

MODEL_REQUEST = re.compile(
    rf"\b(?:(?:{_MODEL_NAMES})[\w.-]*(?:\s+\d+(?:\.\d+)?\s*[bm]\b)?|\d+(?:\.\d+)?\s*[bm]\b)",
    re.IGNORECASE,
)


def requested_models(question: str) -> list[str]:
    """The models or sizes a question names ("7B", "Qwen 32B", "llama"), in order."""
    found = [match.group().strip() for match in MODEL_REQUEST.finditer(question)]
    return list(dict.fromkeys(found))


def serves(request: str, model: str) -> bool:
    """Whether the served `model` is what `request` asks for: every word and size of the
    request appears in the model's name ("7B" in "Qwen2.5-7B-Instruct")."""
    name = model.lower()
    tokens = re.findall(r"\d+(?:\.\d+)?\s*[bm]|[a-z]+\d*(?:\.\d+)?", request.lower())
    for token in tokens:
        token = token.replace(" ", "")
        # a size must not run on ("7b" is not "70b"); a family's version may ("smollm": SmolLM2)
        after = "" if token.isalpha() else r"(?![\d])"
        if not re.search(rf"(?<![\d.]){re.escape(token)}{after}", name):
            return False
    return bool(tokens)


def model_scale(name: str) -> float | None:
    """Parameters in millions as a model's name says ("SmolLM2-135M" → 135), else None."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", name.lower())
    if not match:
        return None
    return float(match.group(1)) * (1000 if match.group(2) == "b" else 1)
