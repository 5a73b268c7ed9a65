"""From a validated OpenAI request to engine `SamplingParams`, with the context checks.

Owns: which OpenAI sampling semantics we support (unsupported ones are a 400, not a
silent no-op), the per-request limits (`check_limits`: choices, messages, stop strings), the
context-length check, and clipping `max_tokens` to what fits.
Harmless unknown request fields are accepted and logged once. Knows nothing about HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from gateway.errors import ContextLengthExceeded, InvalidRequest
from gateway.openai.wire import (
    SEED_MAX,
    SEED_MIN,
    ChatCompletionRequest,
    CompletionRequest,
    _SamplingFields,
)
from gateway.settings import RequestLimits
from trainer.types import Grammar, SamplingParams

log = logging.getLogger(__name__)
_unknown_fields_seen: set[tuple[str, str]] = set()


def log_unknown_fields(request: _SamplingFields) -> None:
    """Debug-log each unknown top-level field name once per request type."""
    if not request.model_extra:
        return
    kind = type(request).__name__
    for name in request.model_extra:
        if (kind, name) not in _unknown_fields_seen:
            _unknown_fields_seen.add((kind, name))
            log.debug("ignoring unknown field %r in %s", name, kind)


def reject_unsupported(request: _SamplingFields) -> None:
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(request, name):
            raise InvalidRequest(f"{name}: only 0 is supported by this server.", param=name)
    if request.logit_bias:
        raise InvalidRequest("logit_bias: not supported by this server.", param="logit_bias")


def check_limits(request: ChatCompletionRequest | CompletionRequest, limits: RequestLimits) -> None:
    """400 naming the field when the request asks for more than one request may."""
    most = limits.max_choices_per_request
    if isinstance(request, CompletionRequest):
        prompts = request.prompt_count()
        if prompts > most:
            raise InvalidRequest(
                f"prompt: {prompts} prompts in one request; at most {most} "
                "(max_choices_per_request).",
                param="prompt",
            )
        if request.choice_count() > most:
            raise InvalidRequest(
                f"n: {prompts} prompts × n={request.n} is {request.choice_count()} choices; "
                f"at most {most} per request (max_choices_per_request).",
                param="n",
            )
    else:
        if request.n > most:
            raise InvalidRequest(
                f"n: at most {most} choices per request (max_choices_per_request).", param="n"
            )
        if len(request.messages) > limits.max_messages_per_request:
            raise InvalidRequest(
                f"messages: {len(request.messages)} messages; at most "
                f"{limits.max_messages_per_request} (max_messages_per_request).",
                param="messages",
            )
    longest = max((len(s) for s in stop_strings(request.stop)), default=0)
    if longest > limits.max_stop_chars:
        raise InvalidRequest(
            f"stop: a stop string of {longest} characters; at most {limits.max_stop_chars} "
            "(max_stop_chars).",
            param="stop",
        )


def stop_strings(stop: str | list[str] | None) -> tuple[str, ...]:
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    return tuple(s for s in stop if s)


def completion_budget(
    *, prompt_len: int, max_context: int, requested: int | None, param: str
) -> int:
    """How many tokens the completion may have; 400 when the prompt leaves no room."""
    room = max_context - prompt_len
    if room <= 0:
        raise ContextLengthExceeded(
            f"This model's maximum context length is {max_context} tokens, but your "
            f"{param} came to {prompt_len} tokens. Shorten the {param}.",
            param=param,
        )
    return room if requested is None else min(requested, room)


def sampling_params_per_choice(
    request: _SamplingFields,
    *,
    max_tokens: int,
    top_logprobs: int,
    choice_indices: Iterable[int],
    grammar: Grammar | None = None,
) -> list[SamplingParams]:
    """One `SamplingParams` per choice; with a seed, choice i samples with seed + i
    (wrapping around within the 64-bit signed range the wire type allows)."""
    top_k = request.top_k if request.top_k and request.top_k > 0 else 0
    base = dict(
        max_tokens=max_tokens,
        temperature=1.0 if request.temperature is None else request.temperature,
        top_p=1.0 if request.top_p is None else request.top_p,
        top_k=top_k,
        stop=stop_strings(request.stop),
        top_logprobs=top_logprobs,
        ignore_eos=request.ignore_eos,
        grammar=grammar,
    )
    seed = request.seed
    return [
        SamplingParams(seed=None if seed is None else _choice_seed(seed, i), **base)
        for i in choice_indices
    ]


def _choice_seed(seed: int, index: int) -> int:
    span = SEED_MAX - SEED_MIN + 1
    return (seed + index - SEED_MIN) % span + SEED_MIN
