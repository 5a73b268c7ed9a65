"""Reading numbers out of a model's reply, the same way for every task.

Owns: `integers_in` (every integer written in a text: "-3", "1,200", "12.0" count; "2.5"
does not), `last_integer`, `first_integer`. Must not know about any task.
"""

from __future__ import annotations

import re

# a number: optional minus, digits with optional thousands commas, optional decimals
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")


def integers_in(text: str | None) -> list[int]:
    """The integers written in `text`, in order; a decimal counts only when it is whole."""
    found = []
    for match in _NUMBER.finditer(text or ""):
        number = match.group().replace(",", "")
        if "." in number:
            whole, fraction = number.split(".")
            if fraction.strip("0"):
                continue
            number = whole
        found.append(int(number))
    return found


def last_integer(text: str | None) -> int | None:
    found = integers_in(text)
    return found[-1] if found else None


def first_integer(text: str | None) -> int | None:
    found = integers_in(text)
    return found[0] if found else None
