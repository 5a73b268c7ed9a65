"""Sentences of setup around the question: "Baseline: GRPO, group size 4, lr 2e-5 on letter
counting. Question: does RLOO do better?", "We keep the lr at 1e-5. Does RLOO help?", "Is
group size 16 better? Our current group size is 8." The asking sentence (the one with "?")
is the question; every other sentence that names a run setting (or PARAM) and no direction
word is setup, rewritten as the leading clause it means ("with group size 4 and lr 2e-5,
does rloo do better on letter counting?") so that `held.py` holds each of its settings. A
setting the question itself varies is the question's: its setup level is what the
question's one level is set against ("We use a KL of 0.05. Does 0.01 do better?": 0.05 vs
0.01); where the question names no setting at all, the setup's one setting is what it asks
about ("We train at temperature 0.7. Does 1.0 do better?"; "Does removing it help?" names
it). A sentence that reports a result ("We found group size 8 helps chain_sum.", "Our model
scores 0.68.") stays as written, its bare numbers blanked (a result seen is no level).

Must not know what the held settings become, the factor's levels, arms, budgets, the
gateway or the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from researcher.planner.catalogue import DIRECTION_WORDS
from researcher.planner.reading.mentions import Mention, scan
from researcher.planner.reading.numbers import NUMBER
from researcher.planner.reading.params import param_words
from researcher.planner.reading.sentences import sentences

_DIRECTION = re.compile(DIRECTION_WORDS)
_SETTING = ("factor", "value", "param")
# a question that asks against something already
_SET_AGAINST = re.compile(
    r"\b(?:than|vs\.?|versus|compared|instead of|against|relative to|over|from)\b"
)
# a verb that says what is used now: "we currently use 3e-5"
_IN_USE = re.compile(
    r"\b(?:currently|right now|at the moment|these days|current)\b|"
    r"^(?:but |so |and )?(?:we|i) (?:use|run|train (?:with|at)|set it to|went with)\b"  # "we use 4"
)
# a sentence that lists the levels to try: "Levels: 1e-5, 1e-4."
_LEVELS_LISTED = re.compile(
    r"^(?:levels?|values?|try|compare|candidates?|options?)\b|"
    # "staleness 0, 1, 2, 4": a setting's name and three or more levels
    r"^[a-z_ -]{2,30}?\s*[:=]?\s*-?\d[\d.e-]*(?:\s*,\s*-?\d[\d.e-]*){2,}"
    r"(?:,?\s*(?:and|or)\s*-?\d[\d.e-]*)?\s*[.?]?$"
)
# a sentence that reports what someone found or argues: motivation, not setup
_CLAIM = re.compile(
    r"\b(?:argu\w*|claim\w*|show\w*|found|finds?|suggest\w*|report\w*|says?|said|"
    r"recommend\w*|propos\w*|paper|tried|diverged?)\b"
)
# a level that failed is a result, never the control: "we tried lr 1e-4 and it diverged"
_FAILED = re.compile(
    r"\b(?:diverg\w*|collaps\w*|blew up|blows? up|explod\w*|nans?\b|made (?:things|it) worse|"
    r"was (?:unstable|worse)|(?:did ?n[o']?t|did not|does ?n[o']?t) (?:work|learn|help))"
)
# a score after a level in setup: "our baseline is GRPO with group size 8 at 0.62"
_SCORED_AT = re.compile(
    r"(?<=\d) (?:at|scoring|reaching|hitting) (?:about |around |roughly )?(?:0?\.\d+|\d+%)"
)
# an outcome and the values it took: "the held-out accuracy climbs from 0.27 to about 0.68",
# "reward plateaus at 0.4", "accuracy is 62%"
_ABOUT = r"(?:about |around |roughly |~\s*)?"
_OUTCOME_SEEN = re.compile(
    r"\b(?:accuracy|rewards?|scores?|success(?: rate)?|pass@\d+)\b[^.;,?]{0,40}?"
    rf"(?:\bfrom\s+)?{_ABOUT}(?:0?\.\d+|\d+(?:\.\d+)?%)"
    rf"(?:\s+(?:to|->|→)\s+{_ABOUT}(?:0?\.\d+|\d+(?:\.\d+)?%))?"
)
# levels each with its score: "staleness 4 gave 0.5, 1 gave 0.6", "lr 1e-5 -> 0.42"
_LEVEL_SCORED = re.compile(
    r"(?<![\w.])(\d[\d.]*(?:e-?\d+)?)\s+(?:(?:and\s+)?(?:it|which|that)\s+)?\(?"
    r"(?:gave|gives|got|gets|scored|scores|yielded|reached|"
    r"hit|->|→)(?: us| me)?\s+(?:about |around |roughly )?(0?\.\d+|\d+(?:\.\d+)?%)"
)


# "kl 0.1 (0.3 acc)", "group size 2 = 0.3": a level with its score after it
_LEVEL_SCORE_AFTER = re.compile(
    r"(?<![\w.])(\d[\d.]*(?:e-?\d+)?)\s*(?:\(\s*|=\s*)(0?\.\d+|\d+(?:\.\d+)?%)"
    r"(?:\s*(?:acc\w*|reward|score|held[\s-]?out(?: acc\w*)?))?\s*\)?"
)


def _levels_scored(body: str) -> list[re.Match[str]]:
    """Each level written with its score in `body`, in order (group 1 the level, 2 the
    score)."""
    found = sorted(
        [*_LEVEL_SCORED.finditer(body), *_LEVEL_SCORE_AFTER.finditer(body)],
        key=lambda m: m.start(),
    )
    kept: list[re.Match[str]] = []
    for m in found:
        if not kept or m.start() >= kept[-1].end():
            kept.append(m)
    return kept


def _scores_joined(parts: list[str]) -> list[str]:
    """Sentences of setup joined where ";" splits levels given each with a score ("kl 0.05
    gave 0.55; kl 0 gave 0.6."): one list of results, read together."""
    joined: list[str] = []
    for part in parts:
        if (
            joined
            and joined[-1].endswith(";")
            and "?" not in part
            and _levels_scored(joined[-1].rstrip(";"))
            and _levels_scored(part.rstrip(".;!:"))
        ):
            joined[-1] = f"{joined[-1][:-1]}, {part}"
        else:
            joined.append(part)
    return joined


def _score(written: str) -> float:
    """A score as written ("0.6", "62%") as a number on one scale."""
    return float(written[:-1]) / 100 if written.endswith("%") else float(written)


# "… diverged, so we switched to 1.0": the failed level is where the move started
_SWITCHED = re.compile(r"\b(?:switch\w*|mov(?:e|ed|ing) to|chang\w* to|went to|going to)\b")
_OUTCOME_NOUN = re.compile(r"\b(?:accuracy|rewards?|scores?|success|loss|pass)\b")
_SCALING_ASIDES = ("times", "times_word", "factor_of", "divided_by", "added_to", "fraction_of")
_PRONOUN = re.compile(r"\b(?:it|them|this|that)\b")
# "we can't change the group size (4)": a setting fixed, said with a verb of change
_CANNOT_CHANGE = re.compile(
    r"\b(?:can'?t|cannot|can not|won'?t|will not|must not|mustn'?t|shouldn'?t|don'?t want to|"
    r"are not allowed to|aren'?t allowed to)\s+(?:change|touch|vary|move|alter)\b"
)


# "Is it?", "Is that true?", "Does it, on countdown?": a question about a claim before it
_ABOUT_THE_CLAIM = re.compile(
    r"(?:is|does|would|will|can|could) (?:it|that|this)(?: (?:true|right|so|correct|really))?"
    r"(\s*,?\s*(?:on|for|with)\b[^?]*)?\s*\??\s*$"
)
_CLAIMED = re.compile(
    r"\b(?:says?|said|argues?|argued|claims?|claimed|suggests?|suggested|thinks?|believes?)\s+"
    r"(?:that\s+)?(.+?)[.;!]?$"
)


def _claim_asked(
    parts: list[str], asking: int, question: str, params: dict[str, Any] | None
) -> tuple[int, str] | None:
    """(index of the claim, the question it makes) when the asking sentence only asks whether
    the claim before it holds and names no setting itself; None otherwise."""
    about = _ABOUT_THE_CLAIM.fullmatch(question.strip())
    if about is None or any(m.kind in _SETTING for m in scan(question, params)):
        return None
    for at in range(asking - 1, -1, -1):
        claim = _CLAIMED.search(parts[at])
        if claim and _DIRECTION.search(claim.group(1)):
            return at, f"{claim.group(1)}{about.group(1) or ''}?"
    return None


def read_setup(text: str, params: dict[str, Any] | None) -> tuple[str, list[str]]:
    """`text` with its sentences of setup folded into the asking sentence, and what was
    read so (said in the assumptions); `text` as it was when it is one sentence."""
    parts = _scores_joined(sentences(text))
    asking = next((i for i, part in enumerate(parts) if "?" in part), None)
    if asking is None:  # "Please test whether lr 5e-5 beats 2e-5. Keep group size at 8."
        asking = next((i for i, part in enumerate(parts) if _DIRECTION.search(part)), None)
    if asking and parts[asking - 1].endswith(":"):
        # "gs=16, lr=1e-5: better than defaults?", "On countdown: does RLOO help?": part of
        # the question, not setup
        parts[asking - 1 : asking + 1] = [f"{parts[asking - 1]} {parts[asking]}"]
        asking -= 1
    if len(parts) < 2 or asking is None:
        return text, []
    question = re.sub(r"^question\s*:\s*", "", parts[asking])
    if (claimed := _claim_asked(parts, asking, question, params)) is not None:
        # "A colleague says 0.8 is better for small models. Is it, on basic arithmetic?":
        # the claim is the question
        claim_at, question = claimed
        parts[claim_at] = ""
    in_question = scan(question, params)
    setup_keys = {m.key for i, part in enumerate(parts) if i != asking for m in scan(part, params)}
    bare_clip = next((m for m in in_question if m.key == "clip_eps"
                      and re.fullmatch(r"clip(?:ping|ped)?", question[m.start : m.end])), None)  # fmt: skip
    if bare_clip and "max_grad_norm" in setup_keys and "clip_eps" not in setup_keys:
        # "The default gradient clip is 1.0. … Would clipping at 0.3 help?": that clip
        question = question[: bare_clip.start] + "gradient clipping" + question[bare_clip.end :]
        in_question = scan(question, params)
    # a model the question names is what it varies: "would the 360M model do better?"
    asked = {m.key for m in in_question if m.kind in (*_SETTING, "model")}
    numeric = _one_numeric_setting(question, in_question)
    if numeric is None and not asked:
        # "The paper uses a group size of 64. … we use 4. Would 16 help?": the one setting
        # the setup names is what a bare number in use is a level of
        named_around = [
            (part, found)
            for part in parts
            if (found := _one_numeric_setting(part, scan(part, params)))
        ]
        if len({found for _, found in named_around}) == 1:
            numeric = named_around[0][1]
    mixing = _is_mixing(question, in_question) or (
        not asked and any(_is_mixing(part, scan(part, params)) for part in parts)
    )
    held: list[str] = []
    against: list[str] = []
    tasks: list[str] = []
    before: list[str] = []
    after: list[str] = []
    notes: list[str] = []
    for i, part in enumerate(parts):
        if i == asking or (re.fullmatch(r"[\w\s-]{1,30}:", part) and not _named(part, params)):
            continue  # "Baseline:" is a label
        if "?" in part or _LEVELS_LISTED.match(part):  # "What about 0.1?", "Levels: 1e-5, 1e-4."
            (before if i < asking else after).append(part)
            continue
        body = part.rstrip(".;!:").strip()
        if len(scored := _levels_scored(body)) >= 2:
            # "staleness 4 gave 0.5, 1 gave 0.6. Is fully on-policy even better?": the best
            # level seen is what a new one must beat; the others are results
            best = max(scored, key=lambda m: _score(m.group(2)))
            others = ", ".join(f"{m.group(1)} ({m.group(2)})" for m in scored if m is not best)
            notes.append(
                f"{best.group(1)} ({best.group(2)}), the best result seen, is the control; "
                f"{others} read as results already seen, not levels"
            )
            kept = body[: scored[0].start()] + best.group(1) + body[scored[-1].end() :]
            # a task named among the results ("… gave 0.55 on countdown; kl 0 gave 0.6") stays
            between = body[scored[0].start() : scored[-1].end()]
            kept += "".join(
                f" {m.group(0)}"
                for m in re.finditer(r"\b(?:on|for)\s+[\w-]+", between)
                if any(t.kind == "task" for t in scan(m.group(0), params))
            )
            part, body = kept + part[len(body) :], kept
        mentions = scan(body, params)
        if mixing and any(m.kind == "task" or m.key == "task_mix" for m in mentions):
            # "30% of the batch is countdown. Does that help chain_sum?": the mix is read
            # from every sentence that names its tasks or shares, as written
            (before if i < asking else after).append(part)
            continue
        named = [m for m in mentions if m.kind in _SETTING]
        if named and (fixed := _CANNOT_CHANGE.search(body)):
            # "we can't change the group size (4)": the setting is held, the verb no direction
            body = body[: fixed.start()] + "use" + body[fixed.end() :]
            body = re.sub(r"\(\s*([\d.]+(?:e-?\d+)?)\s*\)", r"\1", body)
            part = body + "."
            mentions = scan(body, params)
            named = [m for m in mentions if m.kind in _SETTING]
        if (
            _DIRECTION.search(_blank(body, mentions))
            or _CLAIM.search(body)
            or not (named or _bare_numbers(body, mentions))
        ):
            # a result, motivation, an aside
            failed = bool(_FAILED.search(body)) and not _SWITCHED.search(body)
            kept, said = _results_blanked(body, mentions, failed=failed)
            notes += said
            (before if i < asking else after).append(kept + part[len(body) :])
            continue
        if not named:  # "For reference, we currently use 3e-5.": the asked setting's level
            if numeric and _IN_USE.search(body) and not _OUTCOME_NOUN.search(body):
                against += [f"{numeric} {number}" for number in _bare_numbers(body, mentions)]
                continue
            kept, said = _results_blanked(body, mentions)
            notes += said
            (before if i < asking else after).append(kept + part[len(body) :])
            continue
        notes += [
            f"{body[m.start : m.end]!r}, named in the setup, is nothing this trainer has: the "
            "study runs without it"
            for m in mentions
            if m.kind == "unsupported"
        ]
        if any(m.kind == "task" for m in in_question):
            # "For chain_sum we use lr 2e-5. For countdown, is 5e-5 better?": the asking
            # sentence's task is judged; the setup's is about other runs
            for m in reversed([m for m in mentions if m.kind == "task"]):
                lead = re.search(r"(?:\b(?:for|on|in)\s+)?(?:the\s+)?$", body[: m.start])
                body = body[: lead.start() if lead else m.start] + body[m.end :]
            mentions = scan(body, params)
            named = [m for m in mentions if m.kind in _SETTING]
            if not named:
                continue
        # "GRPO with group size 8 at 0.62", "… and the accuracy climbs from 0.27 to 0.68":
        # results seen
        while seen := (_SCORED_AT.search(body) or _OUTCOME_SEEN.search(body)):
            notes.append(f"{seen.group(0).strip()!r} read as a result already seen, not a level")
            body = body[: seen.start()] + body[seen.end() :]
            mentions = scan(body, params)
            named = [m for m in mentions if m.kind in _SETTING]
        _fold(body, mentions, named, params, asked, _Folded(held, against, tasks, after))
    if not asked and len(held) == 1:
        # "We train at temperature 0.7. Does 1.0 do better?", "Does removing it help?"
        against, held = held, []
    question = question.rstrip().rstrip("?.").rstrip()
    if against and not asked and (it := _PRONOUN.search(question)):
        # "can we cut it to 32?" with "max_tokens is 64": "cut the max_tokens from 64 to 32"
        moved = re.match(r"\s+(?:down |up )?to\s+\.?\d", question[it.end() :])
        name, _, value = against[0].rpartition(" ")
        said = f"the {name} from {value}" if moved and name else "the " + against[0]
        question = question[: it.start()] + said + question[it.end() :]
    elif (
        against
        and not _SET_AGAINST.search(question)
        # "temp 0.5 did badly. does temperature 1.2 beat 1.0?": the question names its own two
        and not (numeric and len(_bare_numbers(question, in_question)) >= 2)
    ):
        # "than" after a comparative ("would the calculator tool do better than the search
        # tool?"), else "relative to" ("does adding a KL of 0.02 hurt relative to no KL?")
        joined = " and ".join(against)
        comparative = re.search(r"\b(?:better|worse)\b", question)
        question += f" than {joined}" if comparative else f" relative to {joined}"
    if tasks and not any(m.kind == "task" for m in in_question):
        question += " " + " ".join(tasks)
    question += "?"
    if held:  # a text PARAM's value before its name ("search tool") as "tool=search"
        question = f"with {' and '.join(_word_value_as_key(i, params) for i in held)}, {question}"
    return " ".join([*before, question, *after]), notes


def _is_mixing(text: str, mentions: list[Mention]) -> bool:
    """Whether a sentence is about the task mix (names it, a ratio, or parts of tasks)."""
    return any(m.key in ("task_mix", "ratio") for m in mentions) or bool(_PARTS.search(text))


_PARTS = re.compile(r"\b(?:\d+|one|two|three|four|five)\s+parts?\b")


@dataclass
class _Folded:
    """Where the items of setup go: held for every arm, set against the question's level,
    the task, or left after the question (a run length)."""

    held: list[str]
    against: list[str]
    tasks: list[str]
    after: list[str]


def _fold(
    body: str,
    mentions: list[Mention],
    named: list[Mention],
    params: dict[str, Any] | None,
    asked: set[str],
    into: _Folded,
) -> None:
    """One sentence of setup cut into its items ("GRPO, group size 4, lr 2e-5 on letter
    counting"), each put where it belongs in `into`."""
    tasks_named = [m for m in mentions if m.kind == "task"]
    sized = [
        m
        for m in mentions
        if (m.kind == "model" and "" in asked) or (m.kind == "aside" and m.key == "task_size")
    ]
    starts = [m.start for m in named + tasks_named + sized + _number_mentions(body, mentions)]
    if not starts:  # "Accuracy with GRPO was 0.51.": a result seen, nothing to fold
        return
    start = min(starts)
    start = _with_word_value(body, start, named, params)
    # "we train without gradient clipping": the setting taken away, as "no gradient clipping"
    if removal := re.search(r"\b(?:without|no)\s+(?:any\s+|the\s+|a\s+)?$", body[:start]):
        body = body[: removal.start()] + "no " + body[start:]
        start = removal.start()
    for item in re.split(
        # "at 1e-5" belongs to the setting before it; "with 2 retries" starts an item
        r",|;|\s+(?:and|using|under|plus)\s+|\s+(?:at|with)\s+(?!\d|\.\d)|\s+with\s+(?=\d+\s+[a-z])",
        body[start:],
    ):
        item = re.sub(r"^\s*(?:with|using|at|under|then)\s+", "", item).strip()
        # "for bfcl we use max_tokens 256": the task, then what is used on it
        # (or "countdown runs use lr 1e-5": the task's runs, then what they use)
        lead = re.match(
            r"(\S+)\s+(?:(?:we|i)\s+(?:use|run|train with|set|keep)|(?:runs?|training)\s+"
            r"(?:use|uses|used|run (?:at|with)|train (?:at|with)))\s+",
            item,
        )
        if lead and any(m.kind == "task" for m in scan(lead.group(1), params)):
            into.tasks.append(f"on {lead.group(1)}")
            item = item[lead.end() :]
        # "lr 1e-5 keep collapsing": what the runs at that level did, no part of it
        item = re.sub(
            r"(?<=\d)\s+(?:keeps?|kept|still|always|often|tends?|seems?|starts?|began|"
            r"collaps|diverg|plateau|stall|crash|blow|blew|explod|fail|struggl)\w*\b.*$",
            "",
            item,
        )
        # "a group size of 8" as "group size 8": close enough to a "than" before it
        item = re.sub(r"\s*(?:\s(?:is|are|=|of|set to)\s|:\s*)(?=[\d.])", " ", item)
        item = re.sub(r"^(?:an?|the|our|my|its)\s+", "", item)
        # "the KL coef is 0.05 in our runs": where it is set, no part of the level
        item = re.sub(
            r"\s+(?:in (?:our|my|the) (?:runs?|setup|config\w*|experiments?)|by default|"
            r"currently|right now|these days|at the moment|as (?:the|our|my|its) [a-z_ ]+)$",
            "",
            item,
        )  # and "keep RLOO as the algorithm": RLOO
        on_task = re.search(r"(?:^|\s+)((?:on|for)\s+.+)$", item)
        if on_task:
            into.tasks.append(on_task.group(1))
            item = item[: on_task.start()].strip()
        item_mentions = scan(item, params)
        keys = {m.key for m in item_mentions if m.kind in _SETTING}
        if not keys:
            if "" in asked and any(m.kind == "model" for m in item_mentions):
                into.against.append(item)  # "SmolLM2-135M. Would the 360M model do better?"
            elif any(m.kind == "task" for m in item_mentions):
                into.tasks.append(f"on {item}")
            elif any(m.kind == "aside" for m in item_mentions):
                into.after.append(f"{item}.")  # "40 steps": read after the question
            continue
        if not keys & asked:
            into.held.append(item)
            continue
        first = min(m.start for m in item_mentions if m.kind in _SETTING)
        first = min([first, *(n.start for n in _number_mentions(item, item_mentions))])
        if any(m.kind == "task" and m.start < first for m in item_mentions):
            into.tasks.append(f"on {item[:first].strip()}")  # "guessing game we allow 7 …"
            item = item[first:]
        into.against.append(item)


def _with_word_value(
    body: str, start: int, named: list[Mention], params: dict[str, Any] | None
) -> int:
    """Where setup starts when it opens on a text PARAM written after its value ("we use
    the coach persona": at "coach")."""
    first = min(named, key=lambda m: m.start)
    key = first.key.removeprefix("workflow:")
    if first.start != start or not isinstance((params or {}).get(key), str):
        return start
    word = re.search(r"([a-z][\w.+-]*)\s+$", body[:start])
    if word and word.group(1) not in ("the", "a", "an", "our", "my", "its", "use", "uses", "using"):
        return word.start(1)
    return start


def _word_value_as_key(item: str, params: dict[str, Any] | None) -> str:
    """A text PARAM's value written before its name ("the search tool") as "tool=search",
    the form a held PARAM is read in."""
    for key, default in (params or {}).items():
        found = re.fullmatch(rf"(?:the\s+)?([a-z][\w.+-]*)\s+{param_words(key.lower())}", item)
        if isinstance(default, str) and found:
            return f"{key}={found.group(1)}"
    return item


def _named(text: str, params: dict[str, Any] | None) -> bool:
    return any(m.kind in _SETTING for m in scan(text, params))


def _blank(text: str, mentions: list[Mention]) -> str:
    """`text` with its setting and task names blanked (their words are no direction)."""
    chars = list(text)
    for m in mentions:
        if m.kind in (*_SETTING, "task", "unsupported", "aside"):
            chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


def _number_mentions(text: str, mentions: list[Mention]) -> list[Mention]:
    """The bare numbers of `text` as mentions (for where setup starts: "8 completions")."""
    taken = [(m.start, m.end) for m in mentions if m.kind == "aside"]
    return [
        Mention(n.start(), n.end(), "number", "")
        for n in NUMBER.finditer(text)
        if not any(a <= n.start() < b for a, b in taken)
    ]


def _bare_numbers(text: str, mentions: list[Mention]) -> list[str]:
    return [text[m.start : m.end] for m in _number_mentions(text, mentions)]


def _results_blanked(
    text: str, mentions: list[Mention], *, failed: bool = False
) -> tuple[str, list[str]]:
    """A sentence that is no setup, its bare numbers (no aside, no setting's) blanked: a
    result seen ("our model scores 0.68") is no level. One that names a setting keeps its
    levels ("we found group size 8 helps chain_sum"), unless the level failed ("we tried
    lr 1e-4 and it diverged": no baseline to compare against)."""
    if any(m.kind in _SETTING for m in mentions) and not failed:
        return text, []
    for m in reversed(mentions):
        if m.kind == "aside" and m.key in _SCALING_ASIDES:
            text = text[: m.start] + " " * (m.end - m.start) + text[m.end :]
    numbers = _number_mentions(text, mentions)
    said = [f"{text[n.start : n.end]!r} in {text!r} read as a result already seen, not a level"
            for n in numbers]  # fmt: skip
    for n in reversed(numbers):
        text = text[: n.start] + " " * (n.end - n.start) + text[n.end :]
    return text, said


def _one_numeric_setting(question: str, mentions: list[Mention]) -> str | None:
    """The words of the one setting a question names by name ("does lr 1e-4 help?" →
    "lr"), which a bare setup number is a level of."""
    named = [m for m in mentions if m.kind in ("factor", "param")]
    if len({m.key for m in named}) != 1:
        return None
    return question[named[0].start : named[0].end]
