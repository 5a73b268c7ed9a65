"""`TemplatePlanner`: the deterministic planner used when no LLM endpoint is configured.

It reads the question into a `Reading` (`reading/`: one factor over levels, on a task,
judged by an outcome in a direction), turns the reading into arms (`design_space.py`) and a
hypothesis and pre-registered decision rule (`wording.py`), sizes the design from the budget
(`budget.py`), fills `prompts/workflows/mix.py.j2` for each arm of a shipped task (or wraps
the user's own workflow) and applies the decision rule. The same inputs always give the same
plan; a question it cannot read gets `UnmappableQuestion` saying what is missing, never a
random experiment. Human notes are read at every step: "3 seeds", "lr 1e-5", "40 steps" are
applied to the next design, and every note is quoted in the decision rule or the decision
so the report shows it.

Must not know about LangGraph, the gateway's HTTP API or the database.
"""

from __future__ import annotations

import re
from typing import Any

import prompts
from researcher.errors import EmptyQuestion, ResearcherError
from researcher.evaluate import held_out_available
from researcher.intervals import ONE_SEED_INTERVAL
from researcher.learning import not_testable_words
from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis, Reading
from researcher.planner import budget, design_space, wording
from researcher.planner.catalogue import (
    WORKFLOW_TASK,
    is_task,
    reading_task_params,
    tasks_in_words,
)
from researcher.planner.learnability import with_prior
from researcher.planner.reader import read_question, requested_models, serves
from swarm.tasks import CATALOGUE

WORKFLOW_TEMPLATE = "workflows/mix.py.j2"
MAX_ROUNDS = 3
MIN_ROUND_S = 600.0  # a round's cost when the caller gives none: refine only with this left
MIN_EFFECT = design_space.MIN_EFFECT
EXAMPLE_QUESTION = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"


def check_question(question: str) -> str:
    text = " ".join(question.split())
    if not re.search(r"[^\W\d_]{2}", text):
        raise EmptyQuestion(
            f"the research question is empty ({question!r}); ask e.g. {EXAMPLE_QUESTION!r}"
        )
    return text


# -- notes ------------------------------------------------------------------------------------


def _note_settings(notes: list[str]) -> dict[str, float | int]:
    """What the notes ask for that a design can honour: seeds, steps, lr (later notes win)."""
    settings: dict[str, float | int] = {}
    for note in notes:
        text = note.lower()
        if match := re.search(r"\b(\d{1,2})\s+seeds?\b|\bseeds?\s*[:=]?\s*(\d{1,2})\b", text):
            settings["seeds"] = max(1, int(match.group(1) or match.group(2)))
        if match := re.search(
            r"\b(\d{1,3})\s+(?:training\s+)?steps\b|\bsteps?\s*[:=]?\s*(\d{1,3})\b", text
        ):
            settings["steps"] = int(match.group(1) or match.group(2))
        if match := re.search(
            r"\b(?:lr|learning[- ]rate)\s*(?:[:=]|of|to)?\s*(\d+(?:\.\d+)?e-?\d+|0?\.\d+)", text
        ):
            settings["lr"] = float(match.group(1))
    return settings


def _quote_notes(notes: list[str]) -> str:
    return "; ".join(f"“{' '.join(note.split())}”" for note in notes)


# -- the planner ------------------------------------------------------------------------------


class TemplatePlanner:
    name = "template"

    def frame(
        self,
        question: str,
        *,
        served_models: list[str],
        model: str | None = None,
        workflow: str | None = None,
        workflow_params: dict[str, Any] | None = None,
        workflow_has_test: bool = True,
        workflow_test_size: int | None = None,
    ) -> Framing:
        """Read the question (refusing what it cannot read) and pick the model to train: the
        one asked for when served, else a served one with the substitution said in words.
        `workflow` is the user's own workflow file, `workflow_params` its PARAMS."""
        text = check_question(question)
        if not served_models:
            raise ResearcherError("the gateway serves no models: nothing to train")
        reading = read_question(
            text,
            served_models=list(served_models),
            workflow_params=workflow_params if workflow else None,
            workflow_has_test=workflow_has_test,
        )
        requests = requested_models(text)
        if model is not None and model not in served_models:
            requests.append(model)
            model = None
        if model is None:
            wanted = [m for m in served_models if any(serves(r, m) for r in requests)]
            model = wanted[0] if wanted else served_models[0]
        missing = [r for r in requests if not any(serves(r, m) for m in served_models)]
        substitution = None
        if missing:
            asked = ", ".join(missing)
            substitution = (
                f"Substitution: the question asks about {asked}, which this gateway does not "
                f"serve (it serves {', '.join(served_models)}). Every run trains {model} "
                f"instead, so the results speak for {model}, not for {asked}."
            )
        if reading.factor == "base_model" and isinstance(reading.control, str):
            model = reading.control  # the control arm's model; each arm names its own
        reading = with_prior(reading, model)
        if workflow and workflow_test_size is not None:
            reading = wording.with_small_test_split(reading, workflow_test_size)
        if workflow:
            from researcher.user_workflow import with_sampling_reach

            reading = with_sampling_reach(reading, workflow, workflow_params or {})
        return Framing(
            question=text,
            family=reading.factor,  # report templates of before readings show `family`
            summary=wording.summary_text(reading),
            model_requested=", ".join(requests) or None,
            model=model,
            substitution=substitution,
            planner=self.name,
            served_models=list(served_models),
            reading=reading,
            workflow=workflow,
            workflow_params=dict(workflow_params or {}) if workflow else {},
            workflow_test_size=workflow_test_size if workflow else None,
        )

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]:
        statement, prediction, refuted_if = wording.hypothesis_text(self._reading(framing))
        return [
            Hypothesis(key="H1", statement=statement, prediction=prediction, refuted_if=refuted_if)
        ]

    def design(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        *,
        budget_s: float,
        seeds: int,
        step_seconds: float,
        notes: list[str],
    ) -> Design:
        if budget_s <= 0 or step_seconds <= 0:
            raise ResearcherError(
                f"budget_s and step_seconds must be positive (got {budget_s}, {step_seconds})"
            )
        reading = self._reading(framing)
        arms = design_space.build_arms(reading)
        if reading.episodes_per_step:  # the estimate is of the base run's batch: rescaled
            base = design_space.base_run(reading.task)
            step_seconds *= reading.episodes_per_step / (base["group_size"] * base["batch_groups"])
        asked = _note_settings(notes)
        applied = []
        n_seeds = max(1, seeds)
        if "seeds" in asked:
            n_seeds = int(asked["seeds"])
            applied.append(f"seeds={n_seeds}")
        look = look_of(hypothesis)
        n_seeds += look - 1  # each follow-up of an inconclusive round: one more seed per arm
        runs = len(arms) * n_seeds
        # room for one more look (its seeds added to these, `researcher.pilot`): a study that
        # can look again is one that can still decide when the first look cannot
        steps = budget.steps_for(budget_s, runs + len(arms) * (look == 1), step_seconds)
        if reading.steps is not None:
            steps = budget.clamp(reading.steps, budget.MIN_STEPS, budget.MAX_STEPS)
            applied.append(f"steps={steps} as the question asks")
        if "steps" in asked:
            steps = budget.clamp(int(asked["steps"]), budget.MIN_STEPS, budget.MAX_STEPS)
            applied.append(f"steps={steps}")
        if reading.factor == "max_steps":  # each arm trains its own level; the design the longest
            steps = max(arm.run.get("max_steps") or steps for arm in arms)
        control = arms[0].run
        eval_episodes = budget.eval_episodes_for(
            budget_s, runs, step_seconds, control["group_size"] * control["batch_groups"]
        )
        if reading.task != WORKFLOW_TASK:  # never more items than the held-out split has
            eval_episodes = held_out_available(
                reading.task, eval_episodes, reading_task_params(reading).get(reading.task)
            )
        elif framing.workflow_test_size:
            eval_episodes = min(eval_episodes, framing.workflow_test_size)
        lr = asked.get("lr") if reading.factor != "lr" else None
        if lr is not None:
            applied.append(f"lr={lr:g} for every arm")
        arms = [
            self._sized(arm, steps, lr, keep_steps=reading.factor == "max_steps") for arm in arms
        ]
        # cost is read as a share of the control's cost; the analysis works in seconds, so
        # the share is priced at the planned training time of one run
        scale = steps * step_seconds if reading.outcome == "cost" else 1.0
        min_effect = wording.min_effect_for(reading, steps) * scale
        margin = reading.margin * scale if reading.margin is not None else None
        design = Design(
            hypothesis=hypothesis.key,
            arms=arms,
            seeds=list(range(n_seeds)),
            steps=steps,
            eval_family=reading.task,
            eval_episodes=eval_episodes,
            task_params=reading_task_params(reading),
            decision_rule="",
            metric="mean reward" if reading.task == WORKFLOW_TASK else "accuracy",
            min_effect=min_effect,
            min_effect_named=reading.min_effect is not None,
            effect_units=reading.effect_units if reading.outcome != "cost" else None,
            outcome=reading.outcome,
            direction=reading.direction,
            margin=margin,
            margin_named=reading.margin_named,
            threshold=reading.threshold,
            budget_split=dict(budget.BUDGET_SPLIT),
            look=look,
            max_looks=MAX_ROUNDS,
        )
        # the rule in words comes from the analysis that applies it: one place decides it
        rule = wording.decision_rule(reading, design)
        if notes:
            rule += f" Human notes read before this design: {_quote_notes(notes)}"
            rule += f" (applied: {', '.join(applied)})." if applied else " (recorded)."
        elif applied:
            rule += f" (Applied: {', '.join(applied)}.)"
        return design.model_copy(update={"decision_rule": rule})

    def write_workflow(
        self, framing: Framing, design: Design, arm: Arm, *, seed: int, feedback: str | None = None
    ) -> str:
        if framing.workflow:
            from researcher.user_workflow import render_wrapper

            return render_wrapper(framing, arm, seed=seed)
        weights = {family: weight for family, weight in arm.tasks.items() if weight > 0}
        unknown = sorted(family for family in weights if not is_task(family))
        if unknown or not weights:
            raise ResearcherError(
                f"arm {arm.name!r} serves {sorted(arm.tasks) or 'no tasks'}; the template "
                f"writes workflows for the shipped task families only: {tasks_in_words()}"
            )
        params = arm.workflow_params
        return prompts.render(
            WORKFLOW_TEMPLATE,
            planner=self.name,
            question=framing.question,
            family=framing.family,
            hypothesis=design.hypothesis,
            arm=arm,
            seed=seed,
            weights=weights,
            modules=[family for family in weights if family in CATALOGUE],
            max_turns=params.get("max_turns"),
            sampling={k: params[k] for k in design_space.SAMPLING if params.get(k) is not None},
            task_params={f: p for f, p in design.task_params.items() if f in weights},
            feedback=feedback,
        )

    def decide(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        analysis: Analysis,
        *,
        notes: list[str],
        budget_left_s: float,
        round: int,
        round_cost_s: float | None = None,
        design: Design | None = None,
    ) -> Decision:
        """Apply the decision rule: conclude on a verdict; on "inconclusive", refine (more
        seeds per arm: the next look) while looks remain (`design.look` < `design.max_looks`;
        without a design, rounds < MAX_ROUNDS) and the budget left pays for the next look
        (`round_cost_s`, which the decide node passes; without it, MIN_ROUND_S). Refining
        costs no error rate: every look is judged at its alpha-spending level
        (`researcher.sequential`). On "not_testable" (no arm learned) it concludes so,
        saying what a test would need."""
        effect = _effect_sentence(analysis)
        read = f" Notes read: {_quote_notes(notes)}." if notes else ""
        wants_stop = any(re.search(r"\b(conclude|stop|enough|wrap up)\b", n.lower()) for n in notes)
        if analysis.verdict == "not_testable":
            return not_testable_decision(hypothesis, analysis, read)
        if analysis.verdict != "inconclusive":
            outcome = "supported" if analysis.verdict == "supported" else "refuted"
            # a retest (H2, H3: more seeds per arm) tests the question's hypothesis again
            root = re.sub(r"\d+$", "1", hypothesis.key) if hypothesis.parent else hypothesis.key
            at_look = f" at look {design.look} of {design.max_looks}" if design else ""
            retest = f", retested as {hypothesis.key}" if root != hypothesis.key else ""
            return Decision(
                action="conclude",
                reason=f"the decision rule gives a verdict: {root} is {outcome}{at_look}"
                f"{retest}.{read}",
                conclusion=f"{root} ({hypothesis.statement}) is {outcome}{at_look}{retest}: "
                f"{effect}",
            )
        cost = MIN_ROUND_S if round_cost_s is None else round_cost_s
        look, looks = (design.look, design.max_looks) if design else (round, MAX_ROUNDS)
        adds = design.seeds_per_look if design else 1
        more = "one more seed" if adds == 1 else f"{adds} more seeds"
        if look >= looks or budget_left_s < cost or wants_stop:
            why = (
                f"look {look} is the last the design allows ({looks})"
                if look >= looks
                else "a note asks to conclude"
                if wants_stop
                else f"{budget_left_s:.0f} s of budget left, the next look needs about {cost:.0f} s"
            )
            return Decision(
                action="conclude",
                reason=f"inconclusive and {why}.{read}",
                conclusion=f"Inconclusive: the data neither support nor refute "
                f"{hypothesis.key} ({hypothesis.statement}). {effect}",
            )
        follow_up = Hypothesis(
            key=_next_key(hypothesis.key),
            statement=hypothesis.statement,
            prediction=hypothesis.prediction,
            refuted_if=hypothesis.refuted_if
            + f" (retested with {more} per arm after an inconclusive look)",
            parent=hypothesis.key,
        )
        return Decision(
            action="refine",
            reason=f"inconclusive at look {look} of {looks} and {budget_left_s:.0f} s left (the "
            f"next look needs about {cost:.0f} s): retest with {more} per arm. {effect}{read}",
            follow_up=follow_up,
        )

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _reading(framing: Framing) -> Reading:
        """The framing's reading; a study framed before readings existed is read again."""
        if framing.reading is not None:
            return framing.reading
        return read_question(
            framing.question, served_models=framing.served_models or [framing.model]
        )

    @staticmethod
    def _sized(arm: Arm, steps: int, lr: float | None, *, keep_steps: bool) -> Arm:
        run = dict(arm.run)
        if not keep_steps or run.get("max_steps") is None:
            run["max_steps"] = steps
        if lr is not None:
            run["lr"] = lr
        return arm.model_copy(update={"run": run})


def not_testable_decision(hypothesis: Hypothesis, analysis: Analysis, read: str = "") -> Decision:
    """Conclude a round in which no arm learned: the comparison cannot test the hypothesis
    (more seeds would not help), so the conclusion says so — never "inconclusive" — with
    the untrained baseline and what a test would need."""
    if analysis.failed_runs:
        return Decision(
            action="conclude",
            reason=f"every run failed, so the comparison cannot test {hypothesis.key}.{read}",
            conclusion=f"{hypothesis.key} ({hypothesis.statement}) is not testable: "
            f"{analysis.failed_runs}.",
        )
    words = not_testable_words(analysis.learned)
    return Decision(
        action="conclude",
        reason=f"no arm learned, so the comparison cannot test {hypothesis.key}.{read}",
        conclusion=f"{hypothesis.key} ({hypothesis.statement}) is {words}. "
        f"{_effect_sentence(analysis)}",
    )


def _effect_sentence(analysis: Analysis) -> str:
    if not analysis.comparisons:
        return "No comparison could be made (no arm finished with held-out results)."
    parts = [
        f"{c.treatment} − {c.control} = {c.difference:+.3f} {analysis.outcome_label} "
        f"(95% CI {c.ci_low:+.3f} to {c.ci_high:+.3f}, {c.effect_measure} "
        f"{c.effect_size:+.2f}, {c.n_seeds} seed(s) per arm)"
        + (ONE_SEED_INTERVAL if c.n_seeds == 1 else "")
        for c in analysis.comparisons
    ]
    return "; ".join(parts) + "."


def look_of(hypothesis: Hypothesis) -> int:
    """Which look at the question a hypothesis's design is: 1 for a first hypothesis; a
    follow-up (key H2, H3, ... from `_next_key`) is look 2, 3, ... up to MAX_ROUNDS."""
    if hypothesis.parent is None:
        return 1
    match = re.search(r"(\d+)$", hypothesis.key)
    return min(MAX_ROUNDS, max(2, int(match.group()) if match else 2))


def _next_key(key: str) -> str:
    match = re.search(r"(\d+)$", key)
    return f"{key[: match.start()]}{int(match.group()) + 1}" if match else f"{key}-2"
