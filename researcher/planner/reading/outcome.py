"""The outcome and the direction. Outcome: cost for "cheaper", "wall time", "tokens",
"faster to train"; learning speed (area under the training-reward curve) for "learn
faster", "slow learning", "sample efficiency", "within N steps" (also fixes steps = N), and
steps to reach a training reward of 0.8 (or the one named: "reach 0.9 sooner", "the time
needed to hit 0.7") for "how many steps ... to learn"; final training reward for "training
reward"; held-out accuracy otherwise (an outcome no study measures, "stability", is said).
When the steps themselves are the factor ("how many training steps does it need?"),
held-out accuracy after each number of steps, direction greater. Direction: equivalence
(its margin is `effects.py`'s); greater for help/improve/better/faster; less for
hurt/slow/worse/cheaper/cut; two-sided for matter/differ/affect/"what does", for both ways
at once or "A or B", and when no way is said; "need more", "harder to learn", and ">"/"<"
between two names are directions too. A negated direction word ("does RLOO not beat
GRPO?") keeps the positive test and is said (`Reading.negated`); "not hurt" is an
equivalence. A threshold above 1 on the user's workflow is in its own units.

Must not know the levels or the task, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.planner.catalogue import (
    DIRECTION_WORDS,
    GREATER_WORDS,
    LESS_WORDS,
    OUTCOME_WORDS,
    TWO_SIDED_WORDS,
)
from researcher.planner.reading.effects import equivalence_margin
from researcher.planner.reading.mentions import Mention
from researcher.planner.reading.question import Question
from researcher.planner.reading.sentences import asking_span, outside_asking

DEFAULT_THRESHOLD = 0.8  # "how many steps to learn": steps to a training reward of 0.8

_MOVES_FACTOR = re.compile(
    r"\b(?:cut(?:s|ting)?|reduc\w*|lower(?:s|ed|ing)?|rais\w*|increas\w*|decreas\w*|"
    r"halv\w*|doubl\w*|boost\w*|slash\w*|stronger|weaker|looser|tighter|wider|narrower)"
    r"\s+(?:the\s+|a\s+|its\s+)?(?=#)"
)

# "double accuracy", "halve the reward": a multiple of the outcome, up (group 1) or down
_MULTIPLIES_OUTCOME = re.compile(
    r"\b(?:(doubl|tripl|quadrupl)|halv)\w*\s+(?:the\s+|its\s+|our\s+|my\s+)?"
    r"(?:training\s+|learning\s+|held[\s-]?out\s+|test\s+)?"
    r"(?:accuracy|rewards?|scores?|performance|speed|success rate)\b"
)

# a budget the comparison is held to is no outcome: "at equal compute"
_AT_EQUAL_COST = re.compile(
    r"\b(?:at|with|under|for) (?:an? )?(?:equal|the same|matched|fixed|same) "
    r"(?:compute|budget|cost|flops|wall[\s-]?time|time|tokens)\b"
)

# the time or steps it takes to reach a threshold is learning speed, not cost: "reduce the
# training time needed to hit 0.7"; group 1: the verb that moves it, if any
_TIME_TO_REACH = re.compile(
    r"(?:\b(reduc\w*|cut\w*|shorten\w*|lower\w*|decreas\w*|sav\w*|fewer|less|increas\w*|"
    r"rais\w*|lengthen\w*|doubl\w*|more|longer)\s+(?:the\s+)?(?:number\s+of\s+)?)?"
    r"\b(?:(?:training|wall[\s-]?clock)\s+)?(?:time|steps|updates|iterations)\s+"
    r"(?:(?:it\s+)?(?:needed|required|needs|takes|it\s+takes|necessary)\s+)?"
    r"(?:than\s+[^?.,;]{1,30}?\s+)?(?:to|until|before)\s+(?:reach|hit|get|achiev|converge|learn|"
    r"(?=\.?\d))"  # "cut steps to 0.8"
)

# "does my agent need more than 4 turns?", "does chain_sum need a larger group?", "does it
# need a lower lr?": does the treatment, the level it needs, raise the outcome
_NEEDS_MORE = re.compile(
    r"\bneeds? (?:more|fewer|less|an? (?:larger|higher|longer|bigger|greater|smaller|lower|"
    r"shorter)|to be (?:larger|higher|longer|bigger|greater|smaller|lower|shorter))\b"
    # "do we need a max_tokens above 150?"
    r"|\bneeds? (?:an? |the )?[\w -]{1,30}? (?:above|over|below|under|beyond)\b"
    # "should the temperature be lower?", "should we use a larger group size?"
    r"|\bshould\b[^?.;]{0,40}? (?:be|use|try|go|get|have) (?:an? |the )?(?:much |a bit )?"
    r"(?:larger|higher|longer|bigger|greater|smaller|lower|shorter|more|fewer|less)\b"
)

_REWARD_AFTER = re.compile(
    r"\s*(?:of\s+)?(?:the\s+)?(?:training\s+|train\s+)?(?:rewards?|accuracy|scores?)\b"
)

_FEWER_STEPS = re.compile(
    r"\bfewer (?:training )?(?:steps|updates|iterations)\b|"
    r"\bsav(?:e|es|ed|ing) (?:\w+ )?(?:training )?(?:steps|updates|iterations)\b"  # "save steps"
)

# "does the KL penalty increase the steps needed?": the steps to learn, moved one way;
# group 1: the verb that moves them
_STEPS_NEEDED = re.compile(
    r"\b(reduc\w*|cut\w*|shorten\w*|lower\w*|decreas\w*|sav\w*|increas\w*|rais\w*|"
    r"lengthen\w*|doubl\w*|halv\w*)\s+(?:the\s+)?(?:number\s+of\s+)?(?:training\s+)?"
    r"(?:steps|updates|iterations)\s+(?:it\s+)?(?:needed|required|needs|takes|necessary)\b"
)

# outcomes people ask about that no study measures: said, then judged by held-out accuracy
_UNMEASURED = re.compile(
    r"\b(?:(?:more |less )?stab(?:le|ility|ili[sz]\w*)|unstable|instabilit\w*|collaps\w*|"
    r"diverg\w*|reward hacking|entropy|diversity|calibrat\w*|robust\w*|"
    r"(?:gpu |peak |cpu )?memory|vram|(?:gpu |peak )?ram\b|"
    r"overfit\w*|forget\w*|verbos\w*|response length|(?:gradient )?variance|creativ\w*|"
    r"smooth\w*|(?:std|spread|standard deviation|variability)(?: of [\w -]{1,30}?)? across seeds|"
    r"seed[\s-]to[\s-]seed \w+|"
    r"(?:responses?|answers?|outputs?|completions?) (?:get )?(?:longer|shorter)|"
    r"(?:longer|shorter) (?:responses?|answers?|outputs?|completions?))\b"
)

# a direction word and the unmeasured outcome it is about, a few words on: "reduce reward
# collapse", "less prone to overfitting", "help stability", "hurt robustness"
_FIXES = re.compile(r"\b(?:fix|solve|cure)s? (?:it|this|that|the \w+)\b")
_DIRECTED_UNMEASURED = re.compile(
    rf"\b(?:{GREATER_WORDS}|{LESS_WORDS}|prevent\w*|avoid\w*|mitigat\w*|reduc\w*|lower\w*|"
    r"less|fewer|more|increas\w*|caus\w*)(?:\s+[\w'’-]+){0,3}?\s+"
    + _UNMEASURED.pattern.removeprefix(r"\b")
)


# a comparison written as a symbol between two names: "does rloo > grpo on chain_sum?"; a
# number on the right ("lr > 1e-4") is a bound (`_BOUND_SYMBOL`); a symbol inside a quoted
# prompt is left alone
_SYMBOL = re.compile(
    r"(?<=[^\W\d])\s+(>=|≥|>|<)\s+(?=[^\W\d])"
    r"|(?<=\d)\s+(>=|≥|>|<)\s+(?=[\w.])"  # between two levels: "lr 3e-5 > 2e-5"
)
_SYMBOL_WORDS = {">=": "no worse than", "≥": "no worse than", ">": "better than", "<": "worse than"}
_BOUND_SYMBOL = re.compile(r"(?<=[^\W\d])\s*(>=|≥|>|<=|≤|<)\s*(?=\d)")
_REACHED = re.compile(r"\b(?:rewards?|accuracy|scores?|success(?: rate)?|pass rate)$", re.I)
_BOUND_WORDS = {
    ">=": "at least",
    "≥": "at least",
    ">": "above",
    "<=": "at most",
    "≤": "at most",
    "<": "below",
}


def comparisons_in_words(question: str) -> str:
    """`question` with a comparison symbol between two names in words: ">" is "better
    than", "<" "worse than", ">=" and "≥" "no worse than" (read as "no worse than" is);
    between a name and a number, ">" is "above" and "<" "below" ("lr > 1e-4")."""
    if '"' in question:  # a quoted prompt may hold any symbol
        return question
    question = _SYMBOL.sub(lambda m: f" {_SYMBOL_WORDS[m.group(1) or m.group(2)]} ", question)

    def bound(m: re.Match[str]) -> str:
        if _REACHED.search(question[: m.start()]) and m.group(1) in (">", ">=", "≥"):
            return " of "  # "reach a training reward > 0.9": the threshold to reach
        return f" {_BOUND_WORDS[m.group(1)]} "

    return _BOUND_SYMBOL.sub(bound, question)


# a negation of the direction word that follows: "does RLOO not beat GRPO?"; not "not only",
# "or not", "whether or not", nor a factor taken away ("not using LoRA")
_NOT = r"not|never|doesn't|don't|didn't|does ?n[o']?t"

# "not worse" rather than "the same": a one-sided margin (non-inferiority) on an outcome
# where higher is better; "as good as", "match", "comparable" stay equivalence
_NONINFERIOR = re.compile(
    rf"\b(?:no|not|never) worse\b|\b(?:{_NOT})\s+(?:{LESS_WORDS})|\bwithout (?:hurting|harming|"
    r"losing|degrading|sacrificing|costing)\b|\bat least as (?:good|well|accurate|effective|high)\b|"
    r"\blos(?:e|es|ing) (?:nothing|no (?:accuracy|reward|performance)|no more than|not more "
    r"than|at most|less than)\b|\bget away with\b|"
    r"\bsafe to (?:use|cut|drop|lower|reduce|shrink)\b|\b(?:is|are|be) (?:[\w#.-]+ ){0,2}?safe\b|"
    r"\benough\b|\bsuffic\w*|"  # "is group size 2 enough?": it may do better, not worse
    r"\bnon[\s-]?inferior\w*|\bharmless\b|\bdoes ?n[o']?t cost (?:any )?(?:accuracy|points?)"
)


# "at least as fast as", "no slower than", "no later than": non-inferiority on learning speed
# (other non-inferiority words on speed stay an equivalence test)
_NO_SLOWER = re.compile(
    r"\bat least as (?:fast|quick\w*|(?:sample[\s-])?efficient)\b|\b(?:no|not|never) "
    r"(?:slower|later)\b|"
    # "take no more than 3 extra steps to reach 0.7"
    r"\b(?:no|not) more than \d+ (?:extra|more|additional) (?:training )?steps\b"
)


def _without_unmeasured_direction(text: str) -> tuple[str, str | None]:
    """`text` without the direction words that are about an outcome no study measures
    ("reduce reward collapse", "more stable"), and the first such phrase: that direction says
    nothing about held-out accuracy, which judges the study, so it must not set the side."""
    spans = [
        (m.start(), m.end())
        for m in _DIRECTED_UNMEASURED.finditer(text)
        if _UNMEASURED.search(m.group(0))
    ]
    first = text[spans[0][0] : spans[0][1]].strip() if spans else None
    for start, end in reversed(spans):
        text = text[:start] + " " * (end - start) + text[end:]
    return text, first


# a step where something happened (context), not where the comparison is made
_HAPPENED_AT = re.compile(
    r"\b(?:collaps|diverg|plateau|stall|crash|blow|spik|dip|fall|fell|explod|nan|drop|peak|"
    r"break|broke|start|begin|began|die|dies|died)\w*\b[^,;.?!]*$"
)


# what happened some steps in ("stall after 10 steps", "collapse within 30 steps")
_HAPPENED_AFTER = re.compile(
    r"\b(?:collaps|diverg|plateau|stall|crash|spik|dip|explod|peak|saturat|flatten|stuck|"
    r"blow|blew|level)\w*\b(?: \w+)?(?: up| off| out)? (?:after|within|in|for|by|around)"
    r"(?: the first| about| roughly)? $"
)


# a score seen: "0.41", "30%", "0.35 -> 0.62", "(0.00 -> 0.01)"
_SCORE = re.compile(r"(?<![\w.e-])(?:0?\.\d+|1\.0+|\d{1,3}(?:\.\d+)?%)(?![\w.])")


def _result_at(text: str, at: int) -> bool:
    """Whether the step count at `at` is where a result was seen: "after 40 steps", "in 20
    steps" in a sentence of setup that reports a score ("We got 0.5 after 40 steps.",
    "Baseline accuracy is 0.31 after 20 steps."), not the asking sentence's run length."""
    span = asking_span(text)
    if span is not None and not outside_asking(text, at):
        return False
    if span is not None and re.search(
        r"\b(?:beat|match|exceed|improve on|top|do better than)\s+(?:that|this|it)\b",
        text[span[0] : span[1]],
    ):
        return False  # "… 0.68 after 20 steps. Does lr 5e-5 beat that?": at the same steps
    ends = [m.end() for m in re.finditer(r"[.?!;](?=\s)", text[:at])]
    before = text[ends[-1] if ends else 0 : at]
    if asking_span(text) is None and "?" in text[at:]:
        return False  # one sentence: the question itself
    seen = _SCORE.search(before) or re.search(
        r"\b(?:got|gets|scor\w*|reach\w*|solv\w*|crack\w*|hit\w*|achiev\w*|was|were|sits?|"
        r"stays?|climb\w*|rose|rises|went|goes)\b",
        before,
    )
    return bool(seen) and bool(
        re.search(r"\b(?:after|in|by|at|around|over)\s+(?:the\s+first\s+|about\s+)?$", before)
    )


def read_outcome(q: Question, factor: str) -> tuple[str, float | None]:
    """The outcome and, for steps to a reward, its threshold; sets `q.steps` when the
    question fixes them ("within 20 steps")."""
    within = [m for m in q.of("aside", "within_steps")
              if not _HAPPENED_AFTER.search(q.text[max(0, m.start - 40) : m.start + 7])
              and not _result_at(q.text, m.start)]  # fmt: skip
    if within:
        q.steps = int(within[0].groups[0])
    for m in q.of("aside", "at_step"):  # "the training reward at step 20": the run's length
        before = q.text[: m.start]
        if re.search(r"(?:reward|accuracy|score|success)\w*\s*$", before) or (
            # "does 5e-5 beat 2e-5 at step 30?", "measured at step 40": where the asked
            # comparison is made, unless it says what happened there ("collapses at step 30")
            not outside_asking(q.text, m.start) and not _HAPPENED_AT.search(before[-40:])
        ):
            q.steps = q.steps or int(m.groups[0])
    for m in q.of("aside", "steps_n"):
        if factor != "max_steps" and q.steps is None:
            if _HAPPENED_AFTER.search(q.text[max(0, m.start - 40) : m.start]) or _result_at(
                q.text, m.start
            ):
                continue  # "our runs stall after 10 steps": what happened, not the length
            q.steps = int(m.groups[0])
    outcome = "heldout_accuracy"
    measured = _AT_EQUAL_COST.sub(" ", q.masked)
    for reach in q.of("aside", "threshold"):
        # "reach a training reward of 0.9", "hit 90% training reward": the reward is the
        # threshold's, not the outcome (steps to it are learning speed)
        tail = _REWARD_AFTER.match(measured, reach.end)
        end = tail.end() if tail else reach.end
        measured = measured[: reach.start] + " " * (end - reach.start) + measured[end:]
    # the asking sentence's own outcome decides: "… want to cut costs. … Would group size 4
    # be just as accurate?" is judged by accuracy
    span = asking_span(q.text)
    asking = measured[span[0] : span[1]] if span else measured
    named_in_asking = _ACCURACY_WORD.search(asking) or any(
        re.search(rf"\b(?:{words})", asking) for _, words in OUTCOME_WORDS
    )
    for name, words in OUTCOME_WORDS:
        if re.search(rf"\b(?:{words})", asking if named_in_asking else measured):
            outcome = name
            break
    kept = _KEEPS_ACCURACY.search(q.text)
    if outcome == "cost" and kept:
        # "does capping at 128 tokens cut cost without hurting accuracy?": the saving is what
        # the treatment is for; whether it costs accuracy is the question (non-inferiority)
        outcome = "heldout_accuracy"
        measured = measured.replace(kept.group(0), " " * len(kept.group(0)))
        q.assumptions.append(
            f"{kept.group(0)!r} read as the question: judged by held-out accuracy, the "
            "treatment no worse than the control (its cost, each run's wall time and "
            "tokens, is in the report)"
        )
    how_many = re.search(  # not "raising max_steps to 10", a PARAM named *_steps
        r"how (?:many|much) (?:training )?steps|(?<![\w-])(?<!max )steps to |"
        r"(?:steps|updates|iterations) (?:it )?(?:needed|required|it takes)\b",
        q.text,
    )
    if how_many and factor != "max_steps" and outcome == "heldout_accuracy":
        outcome = "learning_speed"
    if factor == "max_steps" and outcome == "learning_speed" and how_many:
        outcome = "heldout_accuracy"  # the steps are the factor: accuracy after each
    # "within 3 steps of GRPO": a margin in steps is on the steps to a training reward
    if (
        (within or q.of("aside", "margin_steps"))
        and outcome == "heldout_accuracy"
        # "does a KL of 0.1 hurt accuracy within 30 steps?": accuracy named, after 30 steps
        and (q.of("aside", "margin_steps") or not _ACCURACY_WORD.search(q.masked))
    ):
        outcome = "learning_speed"
    fewer = _FEWER_STEPS.search(q.text)
    if fewer and factor != "max_steps" and outcome == "heldout_accuracy":
        outcome = "learning_speed"  # "learns chain_sum in fewer steps"
    reach = q.of("aside", "threshold")
    if reach and (
        fewer
        or re.match(r"(?:steps|updates|iterations|time)\b", q.text[reach[0].start :])
        or re.search(
            r"\b(?:sooner|faster|quicker|first|earlier|later|longer|shorter|delay\w*|under)\b",
            q.masked,
        )
        or re.search(r"\bhow (?:fast|quickly|soon|long)\b", q.text)
        or _TIME_TO_REACH.search(q.text)
    ):
        # "reach a training reward of 0.9 sooner", "the training time needed to hit 0.7"
        outcome = "learning_speed"
    threshold = None
    if outcome == "learning_speed":
        if reach:
            threshold = _threshold(q, reach[0])
        elif how_many and factor != "max_steps":
            threshold = DEFAULT_THRESHOLD
            q.assumptions.append(
                f"learning speed as the steps to reach a training reward of "
                f"{DEFAULT_THRESHOLD} (none named)"
            )
        else:
            q.assumptions.append(
                "learning speed as the area under the training-reward curve"
                + (f" over the first {q.steps} steps" if q.steps else "")
            )
    elif outcome == "heldout_accuracy":
        unmeasured = _UNMEASURED.search(q.masked)
        pass_at = q.of("aside", "pass_at_k")
        if pass_at and int(pass_at[0].groups[0]) == 1:
            q.assumptions.append(
                "pass@1 read as held-out accuracy (one greedy answer per held-out task)"
            )
        elif pass_at:
            q.assumptions.append(
                f"pass@{pass_at[0].groups[0]} is not measured (each held-out task gets one "
                "greedy answer): judged by held-out accuracy, i.e. pass@1"
            )
        elif unmeasured:
            q.assumptions.append(
                f"{unmeasured.group(0)!r} is no outcome this researcher measures (it "
                "measures held-out accuracy, learning speed, final training reward and "
                "cost): judged by held-out accuracy; the report's per-seed curves show "
                "how the runs behaved"
            )
        elif q.params is not None:
            q.assumptions.append(
                "judged by the held-out mean reward of your workflow's tasks('test') (no "
                "other outcome named)"
            )
        else:
            q.assumptions.append("judged by held-out accuracy (no other outcome named)")
    if outcome == "cost" and not _RATE.search(q.text) and re.search(r"\btokens?\b", measured):
        q.assumptions.append(
            "tokens named as the cost: each run is judged on its training wall time, which "
            "moves with the tokens it generates at a fixed number of steps (its tokens are "
            "judged only when no wall time was recorded)"
        )
    if outcome == "cost" and (rate := _RATE.search(q.text)):
        q.assumptions.append(
            f"{rate.group(0)!r} read as cost: each run's training wall time over the same "
            "number of steps (a rate is not measured: a setting that does more per step, a "
            "larger batch, costs more per run even when its rate is higher)"
        )
    _second_outcome(q, outcome, measured)
    return outcome, threshold


_RATE = re.compile(
    r"\bthroughput\b|\b(?:steps|tokens|episodes|samples) (?:per|a|/) ?(?:second|sec|s|minute|min|hour)\b"
)


_OUTCOME_IN_WORDS = {
    "heldout_accuracy": "held-out accuracy",
    "learning_speed": "learning speed",
    "final_train_reward": "final training reward",
    "cost": "cost",
}
# a saving named with what it must not cost: "cut cost without hurting accuracy"
# "… without hurting accuracy", "… without hurting chain_sum?": the accuracy kept
_KEEPS_ACCURACY = re.compile(
    r"\bwithout (?:hurting|harming|losing|degrading|sacrificing|costing|giving up)\b(?:[^?;]{0,30}?"
    r"\b(?:accuracy|performance|rewards?|scores?|points?)\b|[^?;.]{0,30}(?=[?;.]|$))"
)
_ACCURACY_WORD = re.compile(r"\baccura(?:cy|te)\b|\bpass ?@ ?1\b")
_ACCURACY_NAMED = re.compile(r"\b(?:held[\s-]?out |test )?accuracy\b|\bpass ?@ ?1\b")


def _second_outcome(q: Question, outcome: str, measured: str) -> None:
    """Says a second outcome the question names ("improve both accuracy and learning
    speed"): a study judges one; the other is not passed over in silence."""
    others = [
        _OUTCOME_IN_WORDS[name]
        for name, words in OUTCOME_WORDS
        if name != outcome and re.search(rf"\b(?:{words})", measured)
    ]
    if outcome != "heldout_accuracy" and _ACCURACY_NAMED.search(measured):
        others.append("held-out accuracy")
    if others and outcome != "cost":  # cost words also name constraints ("at equal cost")
        q.assumptions.append(
            f"{' and '.join(others)} also named: a study judges one outcome, here "
            f"{_OUTCOME_IN_WORDS[outcome]} (the report shows the others' curves and scores); "
            "ask again with the other as the outcome to judge it"
        )


def _threshold(q: Question, reach: Mention) -> float:
    """The training reward to reach: "80%" is 0.8; a bare number above 1 is a percent on a
    shipped task (accuracy runs 0 to 1: "reach 80" is 0.8) but on the user's workflow is
    in its own units as written ("a score of 7" on a rubric of 0-10: a reward of 0 to 1
    could never reach 7)."""
    value, percent = reach.groups
    number = float(value)
    if percent:
        if q.params is not None:  # the reward's range is unknown before a run
            q.assumptions.append(
                f"the training reward to reach, {number:g}%, read as {number / 100:g} (a share "
                "of a reward of 0 to 1); when your workflow's rewards run beyond 0-1, name the "
                f"threshold in its own units ('reach a score of ...')"
            )
        return number / 100
    if number > 1 and q.params is not None:
        q.assumptions.append(
            f"the training reward to reach, {number:g}, is in your workflow's own units, as "
            "written (a reward of 0 to 1 could not reach it; write a percent, "
            f"'{number:g}%', for a share of 0-1)"
        )
        return number
    return number / 100 if number > 1 else number


# a penalty moved: "cut the penalty", "reduce my agent's penalty" (group 1: the verb); "less
# negative" (group 2: the reward up), "more negative" (down)
_PENALTY_UP = r"increas|rais|doubl|grow|inflat"
_PENALTY_MOVED = re.compile(
    r"\b(cut\w*|reduc\w*|lower\w*|decreas\w*|shrink\w*|minimi[sz]\w*|halv\w*|increas\w*|"
    r"rais\w*|doubl\w*|grow\w*|inflat\w*)\s+(?:the\s+|my\s+|our\s+|its\s+)?(?:agent'?s\s+)?"
    r"(?:[\w-]+\s+)?penalt(?:y|ies)\b|\b(less negative)\b|\bmore negative\b"
)


# "which" that asks ("which is better?"), not one that opens a relative clause ("a KL of 0.1,
# which we use now", "16, which is 4x the default")
_WHICH_ASKS = (
    r"\bwhich\b(?! (?:we|i|you|they|our|my)\b)(?! (?:is|are|was|were|means)\b(?! (?:better|"
    r"worse|best|faster|slower|higher|lower|more|less)\b))"
)


def _question_sentence(text: str) -> str:
    """The sentence that asks, when a sentence of context before or after it has its own
    direction words ("Our runs are slow. Would doubling the lr speed up learning?", "Does
    weight decay 0.05 help? Last time 0.1 made things worse.": the context's "slow" and
    "worse" are no direction) and the asking sentence has some; else `text`."""
    span = asking_span(text)
    if span is None:
        return text
    start, end = span
    asking = text[start:end]
    context = text[:start] + " " + text[end:]
    if re.search(DIRECTION_WORDS, asking) and re.search(DIRECTION_WORDS, context):
        return " " * start + asking + " " * (len(text) - end)
    return text


def _without_or_between_tasks(q: Question, text: str) -> str:
    """`text` without an "or" that joins two task names ("does kl 0.05 help chain_sum or
    countdown?": a second task named, not a choice between directions)."""
    tasks = q.of("task")
    for m in re.finditer(r"\bor\b", text):
        joins = any(
            re.fullmatch(r"[\s,]*", q.text[a.end : m.start()])
            and re.fullmatch(r"\s*(?:the\s+)?", q.text[m.end() : b.start])
            for a in tasks
            for b in tasks
            if a.end <= m.start() and b.start >= m.end()
        )
        if joins:
            text = text[: m.start()] + "  " + text[m.end() :]
    return text


def read_direction(q: Question, outcome: str, factor: str) -> tuple[str, float | None]:
    """The direction and, for an equivalence question, its margin."""
    text = q.masked
    if (
        factor == "max_steps"
        and re.search(r"how (?:many|much|long)", text)
        and not re.search(r"\b(?:optimal|best|which|ideal)\b", text)
    ):
        q.assumptions.append("direction: more steps raise held-out accuracy (greater)")
        return "greater", None
    margin = equivalence_margin(q, outcome)
    if margin is not None:
        worse = _NONINFERIOR.search(text)
        if outcome == "learning_speed":
            worse = _NO_SLOWER.search(text) or worse
        if worse and (
            outcome in ("heldout_accuracy", "final_train_reward") or worse.re is _NO_SLOWER
        ):
            q.assumptions = [
                a.replace("equivalence margin", "non-inferiority margin") for a in q.assumptions
            ]
            q.assumptions.append(
                f"{worse.group(0).strip()!r} read as a non-inferiority test: the treatment is "
                f"no worse than the control by more than {margin:g} (one-sided; a treatment "
                "that is better passes too)"
            )
            return "noninferior", margin
        if worse:
            q.assumptions.append(
                f"{worse.group(0).strip()!r} on {outcome.replace('_', ' ')} read as an "
                f"equivalence test: the treatment keeps it within ±{margin:g} of the control"
            )
        return "equivalent", margin
    if penalty := _PENALTY_MOVED.search(text):
        # "does a word budget of 20 cut the penalty?": a penalty is a negative reward, so
        # cutting it raises the reward
        up = bool(penalty.group(2)) or (
            bool(penalty.group(1)) and not re.match(_PENALTY_UP, penalty.group(1))
        )
        q.assumptions.append(
            f"{penalty.group(0)!r} read as {'raising' if up else 'lowering'} the reward (a "
            f"penalty is a negative reward): one-sided, {'greater' if up else 'less'}"
        )
        return ("greater" if up else "less"), None
    # a verb that moves the factor is no direction: "does cutting the lr in half help?"
    text = re.sub(_MOVES_FACTOR, " ", text)
    text = _question_sentence(text)
    undirected = None  # a direction word about an outcome no study measures
    if outcome == "heldout_accuracy":
        text, undirected = _without_unmeasured_direction(text)
        if (fix := _FIXES.search(text)) and _UNMEASURED.search(q.text):
            # "I'm seeing reward collapse … Would a KL of 0.05 fix it?": the trouble fixed is
            # no outcome a study measures, so "fix" says nothing about held-out accuracy
            undirected = undirected or fix.group(0)
            text = text[: fix.start()] + " " * (fix.end() - fix.start()) + text[fix.end() :]
    to_reach = (
        _TIME_TO_REACH.search(q.text) or _STEPS_NEEDED.search(q.text)
        if outcome == "learning_speed"
        else None
    )
    if outcome == "learning_speed" and re.search(
        r"\bsav(?:e|es|ed|ing)\b[^.?;]{0,20}?\b(?:to|in) (?:reach|hit|get|learn)", text
    ):  # "how many steps does group size 8 save to reach 0.8?": fewer steps, faster
        return "greater", None
    if to_reach and to_reach.group(1):
        # "reduce the time needed to hit 0.7": fewer steps to it is faster (greater)
        faster = not re.match(r"increas|rais|lengthen|doubl|more|longer", to_reach.group(1))
        return ("greater" if faster else "less"), None
    greater = re.search(rf"\b(?:{GREATER_WORDS})", text)
    if not greater and (times := _MULTIPLIES_OUTCOME.search(text)) and outcome != "cost":
        # "does lr 1e-4 double accuracy?": a multiple of the outcome says which way it moves
        return ("greater" if times.group(1) else "less"), None
    if outcome == "learning_speed" and not greater:
        # fewer steps to learn is faster; "reach 0.9 earlier"
        greater = _FEWER_STEPS.search(q.text) or re.search(r"\b(?:earlier|shorter)\b", text)
    less = re.search(rf"\b(?:{LESS_WORDS})", text)
    if (
        outcome == "learning_speed"
        and less
        and less.group(0).startswith("sav")
        and _FEWER_STEPS.search(q.text)
    ):
        less = None  # "does lr 1e-4 save training steps?": saving steps is faster, one way
    if outcome == "cost":  # costing less is the improvement: "faster" is less wall time
        greater, less = (
            re.search(
                r"\b(?:more expensive|costl\w*|costs? more|slower|more tokens|(?:takes?|took|"
                r"taking|needs?) (?:longer|more time)|"
                r"slow(?:s|ed|ing)? (?:\w+ )?down|increas\w*|rais\w*|doubl\w*|tripl\w*|"
                r"quadrupl\w*|inflat\w*)",
                text,
            ),
            re.search(
                r"\b(?:cheap\w*|cuts?|cutting|sav\w*|reduc\w*|decreas\w*|faster|quicker|fewer|less|"
                r"lower|halv\w*)",
                text,
            )
            or (greater if not re.search(r"\bslow", text) else None),
        )
    chooses = re.sub(r"\bor (?:more|higher|above|better|greater|so|beyond)\b", " ", text)
    chooses = _without_or_between_tasks(q, chooses)
    # "Is 0.05 KL better? Or 0.1?": a follow-up adds a level, it asks no two-sided question
    chooses = re.sub(r"\?\s*or\b[^?]{0,40}\?", "?", chooses)
    # "does lr 3e-5 or 5e-5 beat 2e-5?": two treatments, each asked about one way against
    # the control named after the verb (not "is 1e-5 or 1e-4 better?": a choice)
    chooses = re.sub(
        rf"\d[\w.+-]*\s+or\s+\d[\w.+-]*(?=[^?]{{0,30}}?\b(?:{GREATER_WORDS})\w*(?:\s+(?:on|than|"
        r"over))?\s+(?:the\s+(?:default|baseline|current)|(?:lr\s+|kl\s+)?\d))",
        " ",
        chooses,
    )
    listed = re.search(r"^[^?]*?\bor\b[^?:;]*[:;—]\s+(?=[^?]*\?)", chooses)
    if listed and (greater or less) and (greater or less).start() > listed.end():
        # "staleness 1 or 0: does going fully on-policy help?": the levels listed, then a
        # one-sided question about one of them
        chooses = chooses[listed.end() :]
    if (greater and less) or (
        # not a relative clause: "a KL of 0.1, which we use now, …"
        (greater or less) and re.search(_WHICH_ASKS + r"|\bor\b", chooses)
    ):  # "help or hurt", "RLOO or GRPO: which learns faster?"
        return "two_sided", None
    negated = re.search(
        rf"\b(?:{_NOT})\s+(?:[a-z]+\s+)?(?:{GREATER_WORDS})|\bfail(?:s|ed)? to\s+(?:{GREATER_WORDS})|"
        r"\bno (?:better|faster|quicker|more accurate|stronger|higher)\b",
        text,
    )
    if greater and negated:
        # "does RLOO not beat GRPO?": the test of "does RLOO beat GRPO?", answered negated
        q.negated = True
        q.assumptions.append(
            f"the question is negated ({negated.group(0)!r}): tested as whether the treatment "
            "raises the outcome; 'supported' answers it no, 'refuted' yes"
        )
    if greater:
        return "greater", None
    if less:
        if outcome == "heldout_accuracy" and re.match(r"destabili", less.group(0)):
            q.assumptions.append(
                f"{less.group(0)!r} read as: lowers held-out accuracy (one-sided, less); "
                "stability itself is not measured — the report's per-seed curves show how "
                "the runs behaved"
            )
        return "less", None
    two_sided = re.search(rf"\b(?:{TWO_SIDED_WORDS})", text)
    needs = _NEEDS_MORE.search(q.text)  # in the text as written: "larger group" is a mention
    if needs and not two_sided and not re.match(r"[^?.;]{0,30}?\bor\b", q.text[needs.end() :]):
        # "does my agent need more than 4 turns?": does more (than the control) help
        q.assumptions.append(
            f"{needs.group(0)!r} read as: does the level it needs raise the outcome "
            "(one-sided, greater)"
        )
        return "greater", None
    reaches = outcome == "learning_speed" and q.of("aside", "threshold")
    # "does lr 5e-5 reach 0.7 within 10 steps, compared to 2e-5?": "compared to" names the
    # control, it asks no two-sided question
    contrast_only = two_sided and not re.search(
        rf"\b(?:{TWO_SIDED_WORDS})", re.sub(r"\bcompared (?:to|with)\b", " ", text)
    )
    if reaches and (not two_sided or contrast_only) and not re.search(r"\bhow\b", q.text):
        # "does my agent reach a score of 7 within 20 steps with lr 5e-5?": does it get
        # there (sooner) with the treatment
        q.assumptions.append(
            "reaching the training reward named read as: does the treatment reach it in "
            "fewer steps (one-sided, greater)"
        )
        return "greater", None
    if undirected:
        q.assumptions.append(
            f"the direction named ({undirected!r}) is about an outcome not measured here, "
            "not held-out accuracy: a two-sided test"
        )
    elif not two_sided:
        q.assumptions.append("no direction named: a two-sided test (any difference)")
    return "two_sided", None
