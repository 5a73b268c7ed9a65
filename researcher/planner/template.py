"""`TemplatePlanner`: the deterministic planner used when no LLM endpoint is configured.

It maps a question onto a known experiment family (`families.py`) by its words, sizes the
design from the budget (`budget.py`), fills `prompts/workflows/mix.py.j2` for each arm and
applies the pre-registered decision rule. The same inputs always give the same plan; a
question it cannot map gets `UnmappableQuestion`, never a random experiment. Human notes
are read at every step: "3 seeds", "lr 1e-5", "40 steps" are applied to the next design,
and every note is quoted in the decision rule or the decision so the report shows it.

Must not know about LangGraph, the gateway's HTTP API or the database.
"""

from __future__ import annotations

import re

import prompts
from researcher.errors import EmptyQuestion, ResearcherError, UnmappableQuestion
from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis
from researcher.planner import budget
from researcher.planner.families import (
    FAMILIES,
    FAMILY_EXAMPLES,
    TASKS,
    Context,
    Proposal,
    match_family,
    unmappable_message,
)

WORKFLOW_TEMPLATE = "workflows/mix.py.j2"
MAX_ROUNDS = 3
MIN_ROUND_S = 600.0  # a round's cost when the caller gives none: refine only with this left
MIN_EFFECT = 0.05

_MODEL_NAMES = r"qwen|llama|mistral|mixtral|gemma|phi|smollm|deepseek|gpt|olmo"
_MODEL_REQUEST = re.compile(
    rf"\b(?:(?:{_MODEL_NAMES})[\w.-]*(?:\s+\d+(?:\.\d+)?\s*[bm]\b)?|\d+(?:\.\d+)?\s*[bm]\b)",
    re.IGNORECASE,
)


def requested_models(question: str) -> list[str]:
    """The models or sizes a question names ("7B", "Qwen 32B", "llama"), in order."""
    found = [match.group().strip() for match in _MODEL_REQUEST.finditer(question)]
    return list(dict.fromkeys(found))


def serves(request: str, model: str) -> bool:
    """Whether the served `model` is what `request` asks for: every word and size of the
    request appears in the model's name ("7B" in "Qwen2.5-7B-Instruct")."""
    name = model.lower()
    tokens = re.findall(r"\d+(?:\.\d+)?\s*[bm]|[a-z]+\d*(?:\.\d+)?", request.lower())
    for token in tokens:
        token = token.replace(" ", "")
        if not re.search(rf"(?<![\d.]){re.escape(token)}(?![\d])", name):
            return False
    return bool(tokens)


def check_question(question: str) -> str:
    text = " ".join(question.split())
    if not re.search(r"[^\W\d_]{2}", text):
        raise EmptyQuestion(
            f"the research question is empty ({question!r}); ask e.g. "
            f"{FAMILY_EXAMPLES['task_mixing']!r}"
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
        self, question: str, *, served_models: list[str], model: str | None = None
    ) -> Framing:
        text = check_question(question)
        family = match_family(text)
        if family is None:
            raise UnmappableQuestion(unmappable_message(text))
        if not served_models:
            raise ResearcherError("the gateway serves no models: nothing to train")
        requests = requested_models(text)
        if model is not None and model not in served_models:
            requests.append(model)
            model = None
        if model is None:
            wanted = [m for m in served_models if any(serves(r, m) for r in requests)]
            model = wanted[0] if wanted else served_models[0]
        missing = [r for r in requests if not any(serves(r, m) for m in served_models)]
        requested = ", ".join(requests) or None
        substitution = None
        if missing:
            asked = ", ".join(missing)
            substitution = (
                f"Substitution: the question asks about {asked}, which this gateway does not "
                f"serve (it serves {', '.join(served_models)}). Every run trains {model} "
                f"instead, so the results speak for {model}, not for {asked}."
            )
        context = Context(text, list(served_models), model)
        proposal = family.propose(context)
        if family.key == "model_size":
            model = proposal.arms[0].run["base_model"]
        return Framing(
            question=text,
            family=family.key,
            summary=proposal.summary,
            model_requested=requested,
            model=model,
            substitution=substitution,
            planner=self.name,
            served_models=list(served_models),
        )

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]:
        proposal = self._proposal(framing)
        return [
            Hypothesis(
                key="H1",
                statement=proposal.statement,
                prediction=proposal.prediction,
                refuted_if=proposal.refuted_if,
            )
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
        proposal = self._proposal(framing)
        asked = _note_settings(notes)
        applied = []
        n_seeds = max(1, seeds)
        if "seeds" in asked:
            n_seeds = int(asked["seeds"])
            applied.append(f"seeds={n_seeds}")
        if hypothesis.parent is not None:
            n_seeds += 1  # a follow-up of an inconclusive round: one more seed per arm
        runs = len(proposal.arms) * n_seeds
        steps = budget.steps_for(budget_s, runs, step_seconds)
        if "steps" in asked:
            steps = budget.clamp(int(asked["steps"]), budget.MIN_STEPS, budget.MAX_STEPS)
            applied.append(f"steps={steps}")
        control = proposal.arms[0].run
        eval_episodes = budget.eval_episodes_for(
            budget_s, runs, step_seconds, control["group_size"] * control["batch_groups"]
        )
        lr = asked.get("lr") if framing.family != "learning_rate" else None
        if lr is not None:
            applied.append(f"lr={lr:g} for every arm")
        arms = [self._sized(arm, steps, lr) for arm in proposal.arms]
        return Design(
            hypothesis=hypothesis.key,
            arms=arms,
            seeds=list(range(n_seeds)),
            steps=steps,
            eval_family=proposal.eval_family,
            eval_episodes=eval_episodes,
            decision_rule=self._decision_rule(
                hypothesis,
                arms,
                n_seeds,
                steps,
                proposal.eval_family,
                eval_episodes,
                notes,
                applied,
            ),
            min_effect=MIN_EFFECT,
            budget_split=dict(budget.BUDGET_SPLIT),
        )

    def write_workflow(
        self, framing: Framing, design: Design, arm: Arm, *, seed: int, feedback: str | None = None
    ) -> str:
        weights = {family: weight for family, weight in arm.tasks.items() if weight > 0}
        unknown = sorted(set(weights) - set(TASKS))
        if unknown or not weights:
            raise ResearcherError(
                f"arm {arm.name!r} serves {sorted(arm.tasks) or 'no tasks'}; the template "
                f"writes workflows for the shipped task families only: {', '.join(TASKS)}"
            )
        return prompts.render(
            WORKFLOW_TEMPLATE,
            planner=self.name,
            question=framing.question,
            family=framing.family,
            hypothesis=design.hypothesis,
            arm=arm,
            seed=seed,
            weights=weights,
            max_turns=arm.workflow_params.get("max_turns"),
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
    ) -> Decision:
        """Apply the decision rule: conclude on a verdict; on "inconclusive", refine (one
        more seed per arm) while rounds remain and the budget left pays for another round
        (`round_cost_s`, e.g. `budget.round_cost_s(...)`; without it, MIN_ROUND_S)."""
        effect = _effect_sentence(analysis)
        read = f" Notes read: {_quote_notes(notes)}." if notes else ""
        wants_stop = any(re.search(r"\b(conclude|stop|enough|wrap up)\b", n.lower()) for n in notes)
        if analysis.verdict != "inconclusive":
            outcome = "supported" if analysis.verdict == "supported" else "refuted"
            return Decision(
                action="conclude",
                reason=f"the decision rule gives a verdict: {hypothesis.key} is {outcome}.{read}",
                conclusion=f"{hypothesis.key} ({hypothesis.statement}) is {outcome}: {effect}",
            )
        cost = MIN_ROUND_S if round_cost_s is None else round_cost_s
        if round >= MAX_ROUNDS or budget_left_s < cost or wants_stop:
            why = (
                f"round {round} is the last allowed ({MAX_ROUNDS})"
                if round >= MAX_ROUNDS
                else "a note asks to conclude"
                if wants_stop
                else f"{budget_left_s:.0f} s of budget left, a round needs about {cost:.0f} s"
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
            + " (retested with one more seed per arm after an inconclusive round)",
            parent=hypothesis.key,
        )
        return Decision(
            action="refine",
            reason=f"inconclusive after round {round} and {budget_left_s:.0f} s left (a round "
            f"needs about {cost:.0f} s): retest with one more seed per arm. {effect}{read}",
            follow_up=follow_up,
        )

    # -- helpers ------------------------------------------------------------------------------

    def _proposal(self, framing: Framing) -> Proposal:
        family = next((f for f in FAMILIES if f.key == framing.family), None)
        if family is None:
            raise UnmappableQuestion(unmappable_message(framing.question))
        served = framing.served_models or [framing.model]
        return family.propose(Context(framing.question, served, framing.model))

    @staticmethod
    def _sized(arm: Arm, steps: int, lr: float | None) -> Arm:
        run = {**arm.run, "max_steps": steps, "task_mix": dict(arm.tasks)}
        if lr is not None:
            run["lr"] = lr
        return arm.model_copy(update={"run": run})

    @staticmethod
    def _decision_rule(
        hypothesis: Hypothesis,
        arms: list[Arm],
        n_seeds: int,
        steps: int,
        eval_family: str,
        eval_episodes: int,
        notes: list[str],
        applied: list[str],
    ) -> str:
        control = next(arm.name for arm in arms if arm.role == "control")
        treatments = ", ".join(arm.name for arm in arms if arm.role == "treatment")
        rule = (
            f"After {steps} training steps per run, each run's policy answers {eval_episodes} "
            f"held-out {eval_family} tasks (test split); the metric is accuracy (reward ≥ 1.0). "
            f"{hypothesis.key} is supported if mean accuracy over {n_seeds} seed(s) of "
            f"{treatments} minus {control} is at least {MIN_EFFECT:.2f} and the 95% bootstrap "
            f"interval of that difference lies above 0; refuted if the interval's upper end is "
            f"below {MIN_EFFECT:.2f}; inconclusive otherwise."
        )
        if notes:
            rule += f" Human notes read before this design: {_quote_notes(notes)}"
            rule += f" (applied: {', '.join(applied)})." if applied else " (recorded)."
        return rule


def _effect_sentence(analysis: Analysis) -> str:
    if not analysis.comparisons:
        return "No comparison could be made (no arm finished with held-out results)."
    parts = [
        f"{c.treatment} − {c.control} = {c.difference:+.3f} held-out accuracy "
        f"(95% CI {c.ci_low:+.3f} to {c.ci_high:+.3f}, Cohen's h {c.effect_size:+.2f}, "
        f"{c.n_seeds} seed(s) per arm)"
        for c in analysis.comparisons
    ]
    return "; ".join(parts) + "."


def _next_key(key: str) -> str:
    match = re.search(r"(\d+)$", key)
    return f"{key[: match.start()]}{int(match.group()) + 1}" if match else f"{key}-2"
