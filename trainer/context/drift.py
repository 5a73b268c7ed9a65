"""Token-drift repair: a reply the gateway generated goes back into the next prompt as the
exact token ids that were sampled, not as re-tokenized text.

An agent sends its history back as text. Text does not always tokenize back to the ids
the model sampled (" Paris" sampled as [" Par", "is"] re-tokenizes as [" Paris"]; tool
arguments come back as re-serialised JSON), and then the next call's prompt no longer
starts with the earlier timeline, and the logprobs of that turn would belong to tokens
that were never sampled. So when a chat's messages continue an earlier call of the same
episode — the earlier call's messages, then an assistant message equal to what that call
generated — the new prompt is built as

    earlier prompt ids + earlier completion ids + encode(the rest of the rendered chat)

where "the rest" starts after the assistant turn's content (the template's end-of-turn,
minus the end-of-turn token the model itself generated, then the following messages).

The returned turn is compared piece by piece, not as rendered text: the same content (or
none: clients that stream or drop the narration around a call send `content: null`) and
the same calls, arguments compared as parsed JSON (clients re-serialise them). So a turn
the template renders in another order than the model wrote it (text after `</tool_call>`
comes back as `content`, which the template writes before the calls) still splices to
the ids that were generated; only what the template writes around the turn must agree
(the earlier prompt is the template's rendering of the earlier messages plus the
generation header, and any forced tool-call opening is the start of the generated turn).

Outcomes, one per call: `fresh` (continues no earlier call), `exact` (re-tokenizing would
have given the same ids), `repaired` (the ids were spliced and differ from re-tokenizing),
`unrepaired` (it continues an earlier call but the chat template rewrote that turn or the
text around it, so no splice is possible: the prompt is plain re-tokenized text, and the
call will open a new timeline — a "snap" when merged).

`PriorCall` (an earlier call, as drift repair sees it) lives in `trainer.types` with the
other records; it is importable from here too. Torch-free; the template, tokenizer and
reply parser come in as callables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from trainer.chat_format import content_text
from trainer.types import ParsedAssistant, PriorCall

DriftStatus = Literal["fresh", "exact", "repaired", "unrepaired"]
SENTINEL = "\x00swarmrl-turn-end\x00"


@dataclass
class Splice:
    token_ids: list[int]
    status: DriftStatus
    continues: int | None  # the earlier call this one continues


RenderText = Callable[[list[dict[str, Any]], bool], str]  # (messages, add_generation_prompt)


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


def same_reply(message: dict[str, Any], reply: ParsedAssistant) -> bool:
    """Is this assistant message what the gateway answered (content and tool calls)?

    A turn with calls may come back without its content (a streaming client that kept only
    the calls, or one that drops the narration): the calls are what the agent acted on."""
    calls = message.get("tool_calls") or []
    content = (content_text(message.get("content")) or "").strip()
    if content != (reply.content or "").strip() and not (content == "" and calls):
        return False
    if len(calls) != len(reply.tool_calls):
        return False
    for sent, made in zip(calls, reply.tool_calls, strict=True):
        function = sent.get("function") or {}
        if function.get("name") != made.name:
            return False
        if _arguments(function.get("arguments", "")) != _arguments(made.arguments):
            return False
    return True


def turn_end_text(render: RenderText) -> str:
    """What the template writes after an assistant message's content (e.g. `<|im_end|>\\n`)."""
    text = render(
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": SENTINEL}], False
    )
    return text.split(SENTINEL, 1)[1] if SENTINEL in text else ""


def continued_calls(
    messages: Sequence[dict[str, Any]], model: str, history: Sequence[PriorCall]
) -> list[PriorCall]:
    """Earlier calls (latest first) whose messages this chat repeats and then answers."""
    found = []
    for prior in reversed(history):
        k = len(prior.messages)
        if (
            prior.model == model
            and len(messages) > k
            and messages[k].get("role") == "assistant"
            and list(messages[:k]) == prior.messages
        ):
            found.append(prior)
    return found


def splice_prompt(
    *,
    messages: list[dict[str, Any]],
    model: str,
    prompt_text: str,
    history: Sequence[PriorCall],
    render: RenderText,
    encode: Callable[[str], list[int]],
    eos_texts: Sequence[str],
    eos_token_ids: frozenset[int],
    turn_end: str,
) -> Splice:
    """The prompt ids for `prompt_text` (the rendered `messages`), reusing generated ids."""
    naive = encode(prompt_text)
    candidates = continued_calls(messages, model, history)
    if not candidates:
        return Splice(naive, "fresh", None)
    for prior in candidates:
        k = len(prior.messages)
        if not same_reply(messages[k], prior.reply):
            continue
        head = render(list(messages[: k + 1]), False)  # through the answered turn
        # what the template writes before the turn's content; the earlier prompt is that
        # plus, at most, a forced tool-call opening (the start of what was generated)
        opening = render(list(messages[:k]), True)
        if not (
            prompt_text.startswith(head)
            and prior.prompt_text.startswith(opening)
            and head.startswith(opening)
            and head.endswith(turn_end)
        ):
            continue
        after = turn_end
        generated_eos = (
            prior.completion_token_ids and prior.completion_token_ids[-1] in eos_token_ids
        )
        if generated_eos:
            eos = next((e for e in eos_texts if e and turn_end.startswith(e)), None)
            if eos is None:
                continue
            after = turn_end[len(eos) :]
        ids = (
            list(prior.prompt_token_ids)
            + list(prior.completion_token_ids)
            + encode(after + prompt_text[len(head) :])
        )
        return Splice(ids, "exact" if ids == naive else "repaired", prior.index)
    return Splice(naive, "unrepaired", candidates[0].index)
