"""Numbers in a question: written plainly first ("1 x 10^-5", "1×10⁻⁵" and "10^-5" are 1e-5,
"zero point one" is 0.1), then every number that is not part of a mention (a sign kept:
"a KL penalty of -1"), whole numbers in words ("groups of eight"), what a question scales its
setting by ("twice", "a 4x larger", "tenfold lower", "by a factor of 10", "dividing the lr by
10") or adds to it ("increasing the group size by 4"), and a number as a factor's type (8.0
is 8 for an int factor).

Must not know which numbers are levels, held settings or effects (the modules that read
them decide), nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.plan import Level
from researcher.planner.catalogue import Factor
from researcher.planner.reading.mentions import NUMBER_WORDS, SCALING_VERB, Mention

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e[-+]?\d+)?|\.\d+)(?!\w)(?!\.\d)(%?)")


def written_numbers(text: str, mentions: list[Mention]) -> list[tuple[int, float, bool]]:
    """(position, value, is_percent) of every number that is not part of a mention."""
    taken = [(m.start, m.end) for m in mentions]
    found = []
    for match in NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        value = float(f"{float(match.group(1)):.12g}")
        start = match.start()
        if start and text[start - 1] == "-" and (start == 1 or text[start - 2] in " (=:,"):
            value, start = -value, start - 1  # "a KL penalty of -1": a sign, not a dash
        found.append((start, value, bool(match.group(2))))
    return found


_WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
    if value != 1  # "one" is too common a word ("one task", "one-step") to be a level
} | {"thirty-two": 32, "sixty-four": 64}

_WORD_NUMBER = re.compile(
    rf"(?<![\w-])({'|'.join(sorted(_WORD_NUMBERS, key=len, reverse=True))})(?![\w-])"
    r"(?! (?:seeds?|tasks?|models?|times|fold|arms?|runs?|of (?:them|these|those)))"
)


# "one" names a level only right before the setting it counts: "one attempt instead of
# three", "a single turn" ("one task", "one-step" are no levels)
_ONE_BEFORE = re.compile(r"\b(?:a single|single|just one|only one|one)\s+(?=\S)")


def word_numbers(text: str, mentions: list[Mention]) -> list[tuple[int, Level]]:
    """Levels written as words ("groups of eight vs two"), for whole-number factors."""
    taken = [(m.start, m.end) for m in mentions]
    found = [
        (match.start(), float(_WORD_NUMBERS[match.group(1)]))
        for match in _WORD_NUMBER.finditer(text)
        if not any(start <= match.start() < end for start, end in taken)
    ]
    counted = [m for m in mentions if m.kind in ("param", "factor")]
    found += [
        (match.start(), 1.0)
        for match in _ONE_BEFORE.finditer(text)
        if any(m.start == match.end() or m.start == match.start() for m in counted)
    ]
    # "do three attempts beat one?": "one" after the word that sets it against a level
    found += [(m.start(1), 1.0) for m in _ONE_AGAINST.finditer(text)]
    return sorted(set(found + bound_word_numbers(text, mentions)))


def bound_word_numbers(text: str, mentions: list[Mention]) -> list[tuple[int, Level]]:
    """Levels written as words right after the setting they set ("a group size of one",
    "group_size=eight"): read even beside levels in digits ("of one compared to 4"), where
    a free-standing number word may count something else ("three sizes: 2, 4, 8")."""
    counted = [m for m in mentions if m.kind in ("param", "factor")]
    return [
        (match.start(1), float(_WORD_NUMBERS.get(match.group(1).lower(), 1)))
        for match in _BOUND_WORD.finditer(text)
        if any(match.start() - 1 <= m.end <= match.start() for m in counted)
    ]


_BOUND_WORD = re.compile(
    rf"(?:\bof|=|:|\bat) ?(one|{'|'.join(sorted(_WORD_NUMBERS, key=len, reverse=True))})(?![\w-])"
    r"(?![\s-](?:of|another|per|each|every)\b)"
)


_ONE_AGAINST = re.compile(
    r"\b(?:than|beats?|vs\.?|versus|over|against|instead of|rather than) (one)\b"
    r"(?![\s-](?:of|another))(?!\s+(?:every|each|per)\b)"  # "beat one every 4 turns": a pronoun
)


def _times_count(count: str) -> float:
    """ "ten", "10", "a hundred" as a number."""
    return NUMBER_WORDS.get(count, None) or (100.0 if "hundred" in count else float(count))


# a multiplying verb whose object is the outcome, not the setting
_OUTCOME_WORDS = (
    r"(?:time|cost|costs|tokens|accuracy|rewards?|speed|throughput|steps|compute|latency|"
    r"memory|scores?|performance)"
)
_MOVES_OUTCOME = re.compile(
    r"\s+(?:the\s+|its\s+|our\s+|my\s+)?(?:training\s+|learning\s+|held[\s-]?out\s+|"
    rf"wall[\s-]?(?:clock\s+)?)?{_OUTCOME_WORDS}\b"
)
# "cut wall time by half", "reduce the cost by a third": the outcome moves, not the setting
_OUTCOME_BY = re.compile(rf"\b{_OUTCOME_WORDS}\s+by\s+(?:an?\s+)?$")


# a verb that scales a setting down: "cutting the lr by 10x", "dropping it by an order of
# magnitude" (the multiplier divides)
_CUT_BY = re.compile(
    r"\b(?:cut|drop|slash|shrink|reduc|decreas|lower)\w*\b[^,;.?!]{0,40}\bby\s+(?:an?\s+)?$"
)


# a multiplier set beside a level it describes: "lr 1e-4 (5x the default)", "lr 1e-5, half
# the default,"
_OF_DEFAULT_BESIDE = re.compile(
    r"\d\S*\s*(?:[(,—–]|\s-)\s*(?:(?:i\.?e\.?|which is|that is|or|about|roughly),?\s*)?$"
)
_RAISED_BY = re.compile(r"\b(?:rais|increas|boost|grow|lift)\w*\b[^,;.?!]{0,40}\bby\s+(?:a\s+)?$")


# a verb scaling a setting (not the outcome) right before "by N%"
_SCALED_BEFORE = re.compile(
    r"\b(?:(increas|rais|boost|grow|lift)|reduc|lower|cut|decreas|shrink|drop)\w*\s+"
    r"(?:the\s+|our\s+|my\s+|its\s+)?(?:(?!accuracy|rewards?|scores?|performance|pass|success|"
    r"time|wall|costs?|steps|tokens|speed|throughput|compute|latency|memory)"
    r"[\w-]+\s+){1,3}$"
)


def percent_change(text: str, mention: Mention) -> float | None:
    """The share a setting is moved by in "increasing the lr by 50%" (+0.5) or "cutting the
    group size by 50%" (-0.5) — the "by N%" that is an effect after an outcome ("improve
    accuracy by 5%"); None when `mention` is no such change."""
    if mention.key != "effect":
        return None
    written = re.fullmatch(r"by (\d+(?:\.\d+)?) ?%", text[mention.start : mention.end])
    verb = _SCALED_BEFORE.search(text[: mention.start])
    if written is None or verb is None:
        return None
    share = float(written.group(1)) / 100
    return share if verb.group(1) else -share


def multiplier_named(text: str, mentions: list[Mention]) -> float | None:
    """The factor the question scales its setting by: "twice", "a 4x larger", "tenfold
    lower", "by a factor of 10", "dividing the lr by 10" (0.1); None when it names none."""
    for m in mentions:
        if m.key in ("times", "times_word", "fraction_of") and _OF_DEFAULT_BESIDE.search(
            text[: m.start]
        ):
            continue  # "lr 1e-4 (5x the default)": the level named, said against the default
        if m.key == "fraction_of":  # "a tenth of the lr"
            return {"te": 0.1, "fi": 0.2, "qu": 0.25, "th": 1 / 3}[m.groups[0][:2]]
        if (share := percent_change(text, m)) is not None:  # "increasing the lr by 50%"
            return 1 + share
        if m.key == "times":
            count, comparative = m.groups[0], m.groups[1] or ""
            k = _times_count(count)
            if comparative in ("smaller", "lower", "less", "fewer", "shorter"):
                return 1 / k
            return 1 / k if not comparative and _CUT_BY.search(text[: m.start]) else k
        if m.key == "factor_of":
            return _times_count(m.groups[0])
        if m.key == "divided_by":
            k = _times_count(m.groups[0])
            verb = SCALING_VERB.search(text[: m.start])
            if verb and verb.group(0).startswith(("divid", "multipl")):
                return 1 / k if verb.group(0).startswith("divid") else k
        if m.key == "times_word":
            if _MOVES_OUTCOME.match(text, m.end) or _OUTCOME_BY.search(text[: m.start]):
                continue  # "does group size 8 double the training time?": the outcome moves
            word, magnitude = m.groups
            if word is None:  # "an order of magnitude" (lower, or after a cutting verb)
                down = magnitude in ("smaller", "lower", "less") or (
                    not magnitude and _CUT_BY.search(text[: m.start])
                )
                return 0.1 if down else 10.0
            if word == "half" and _RAISED_BY.search(text[: m.start]):
                return 1.5  # "raising the lr by half"
            return {"tw": 2.0, "do": 2.0, "ha": 0.5, "tr": 3.0, "qu": 4.0}[word[:2]]
    return None


def shift_named(text: str, mentions: list[Mention]) -> float | None:
    """The amount an "increasing X by 4" or "adding 4 to X" adds or a "reducing X by 0.1"
    takes away; None when
    the question scales (multiplies, divides) or names no such amount."""
    for m in mentions:
        if m.key == "added_to":  # "adding 2 to top_k", "2 more turns"
            return _times_count(m.groups[0])
        if m.key == "divided_by":
            verb = SCALING_VERB.search(text[: m.start])
            if verb and not verb.group(0).startswith(("divid", "multipl")):
                amount = _times_count(m.groups[0])
                down = verb.group(0).startswith(("reduc", "decreas", "lower", "cut"))
                return -amount if down else amount
    return None


def with_verb(multiplier: float | None, way: str | None) -> float | None:
    """A multiplier read with the question's verb: "lowering the lr by 10x" divides by 10."""
    if multiplier is not None and multiplier > 1 and way == "lower":
        return 1 / multiplier
    return multiplier


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺−", "0123456789--" + "-")

# "1 x 10^-5", "1×10^-5", "1·10⁻⁵", "10^-5": written as 1e-5
_TIMES_POWER = re.compile(
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*(?:[x×*·]|times)\s*)?10\s*(?:\^|\*\*)\s*([-+]?\d+)(?![\w.])"
)

_SUPERSCRIPT_POWER = re.compile(
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*(?:[x×*·]|times)\s*)?10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)"
)

# written loosely, but only one way to read: "1 e-4" (a space before e), "3x10-5" (the
# caret left out), "0,00005" (a decimal comma: no thousands separator follows a lone 0)
_SPACED_E = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) [eE] ?([-+]\d{1,2})(?![\w.])")
_CARETLESS_POWER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?[x×*·] ?10-(\d{1,2})(?![\w.])")
_DECIMAL_COMMA = re.compile(r"(?<![\w.,])0,(\d+)(?![\w.,])")

_DIGIT_WORDS = "zero one two three four five six seven eight nine".split()

# "zero point one": 0.1
_POINT_NUMBER = re.compile(
    rf"\b({'|'.join(_DIGIT_WORDS)}) point((?: (?:{'|'.join(_DIGIT_WORDS)}))+)\b", re.IGNORECASE
)


_POWERS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000}

# "one in ten thousand", "1 in 10,000", "one in a million", "a ten-thousandth": a fraction
_ONE_IN = re.compile(
    r"\b(?:(?:one|a|1) in (?:a |one )?(?:(ten|a hundred|one hundred|hundred) )?"
    r"(hundred|thousand|million)|(?:one|1) in (1(?:\d{0,2}(?:,000)+|00+))|"
    r"(?:one|a) (?:(ten|hundred)[- ])?(hundred|thousand|million)th)\b",
    re.IGNORECASE,
)


def _one_in(match: re.Match[str]) -> str:
    """The fraction an `_ONE_IN` match names, written plainly ("0.0001")."""
    if match.group(3):
        return f"{1 / int(match.group(3).replace(',', '')):g}"
    times, power = (match.group(1), match.group(2)) if match.group(2) else match.group(4, 5)
    scale = {None: 1, "ten": 10}.get(times.lower() if times else None, 100)
    return f"{1 / (scale * _POWERS[power.lower()]):g}"


_SMALL_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_SMALL = rf"\d+(?:\.\d+)?|{'|'.join(sorted(_SMALL_WORDS, key=len, reverse=True))}"

# "10 to the minus 5", "two times ten to the minus five", "ten to the power of -4": 2e-5
_TO_THE = re.compile(
    rf"\b(?:({_SMALL})\s*(?:times|x|×)\s+)?(?:10|ten) to the (?:power of )?"
    rf"(?:(?:minus|negative)\s+|-\s*)({_SMALL})\b",
    re.IGNORECASE,
)

# a count of points or percent written in words: "within two points", "by five percent"
_WORD_POINTS = re.compile(
    rf"\b({'|'.join(sorted(_SMALL_WORDS, key=len, reverse=True))})"
    r"(?= (?:percentage )?points?\b| percent\b| pp\b)",
    re.IGNORECASE,
)


def _small(word: str) -> str:
    """A small number as written, in digits ("five" → "5")."""
    lower = word.lower()
    return str(_SMALL_WORDS.index(lower)) if lower in _SMALL_WORDS else word


def plain_numbers(text: str) -> str:
    """`text` with powers of ten written as 1e-5 ("1 x 10^-5", "1×10⁻⁵", "10^-4"), a unicode
    minus in an exponent ("1e−5") as a hyphen, decimals in words ("zero point one") and
    fractions in words ("one in ten thousand", "a ten-thousandth"), powers of ten in words
    ("two times ten to the minus five") and points in words ("within two points") as
    digits; "1 e-4", "3x10-5" and a decimal comma ("0,00005") as plain numbers; a LoRA rank glued to its r ("lora r8") as "r=8"."""
    text = _POINT_NUMBER.sub(
        lambda m: (
            str(_DIGIT_WORDS.index(m.group(1).lower()))
            + "."
            + "".join(str(_DIGIT_WORDS.index(w.lower())) for w in m.group(2).split())
        ),
        text,
    )
    text = _ONE_IN.sub(_one_in, text)
    text = _TO_THE.sub(lambda m: f"{_small(m.group(1) or '1')}e-{_small(m.group(2))}", text)
    text = _WORD_POINTS.sub(lambda m: _small(m.group(1)), text)
    text = re.sub(r"(?<=\de)−(?=\d)", "-", text)
    text = _SUPERSCRIPT_POWER.sub(
        lambda m: f"{m.group(1) or '1'}e{m.group(2).translate(_SUPERSCRIPTS)}", text
    )
    text = _TIMES_POWER.sub(lambda m: f"{m.group(1) or '1'}e{m.group(2)}", text)
    text = _SPACED_E.sub(r"\1e\2", text)
    text = _CARETLESS_POWER.sub(r"\1e-\2", text)
    text = _DECIMAL_COMMA.sub(r"0.\1", text)
    # "2^4" is 16; ".01" is 0.01; "5 percent" is 5%
    text = _POWER.sub(lambda m: str(int(m.group(1)) ** int(m.group(2))), text)
    text = re.sub(r"(?<![\w.])\.(?=\d)", "0.", text)
    text = re.sub(r"(?<=\d)\s+per\s*cent\b", "%", text, flags=re.I)
    if _LORA_NAMED.search(text):  # "lora r8": the rank 8, as "r=8" reads
        text = _RANK_GLUED.sub(lambda m: f"r={m.group(1)}", text)
    return text


_POWER = re.compile(r"(?<![\w.])(\d{1,3})\s*(?:\^|\*\*)\s*(\d{1,2})(?![\w.])")
_LORA_NAMED = re.compile(r"(?i)\b(?:q?lora|ranks?|adapters?|peft)\b")
_RANK_GLUED = re.compile(r"(?<![\w.=-])[rR](\d{1,4})(?![\w.-])")


def as_factor_type(spec: Factor, value: Level) -> Level:
    """A written number as the factor's type: 8.0 → 8 for an int factor; 2e-05 × 0.1 is
    2e-06, not 2.0000000000000003e-06."""
    if isinstance(value, float):
        value = float(f"{value:.12g}")
    if isinstance(value, float) and spec.kind in ("int", "lora") and value.is_integer():
        return int(value)
    if isinstance(value, float) and spec.kind in ("int", "lora"):
        return value  # check_reading says it is not a whole number
    if isinstance(value, int) and not isinstance(value, bool) and spec.kind == "real":
        return float(value)
    return value
