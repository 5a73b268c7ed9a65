"""What is left of the eight experiment families: names for the LLM planner's prompts.

The template planner no longer matches questions against families: it reads them into a
`Reading` (`reader.py`) over the design space (`design_space.py`). This module keeps what
`llm.py` still imports until it asks for a reading too: `TASKS` (re-exported from
`catalogue.py`),
`FAMILIES` / `FAMILY_EXAMPLES` (kinds of study, each with an example question) and
`unmappable_message`. Delete it once nothing imports it.

Must not know about the gateway, LangGraph or the database.
"""

from __future__ import annotations

from dataclasses import dataclass

from researcher.planner.catalogue import TASKS

__all__ = ["FAMILIES", "FAMILY_EXAMPLES", "TASKS", "unmappable_message"]


@dataclass(frozen=True)
class Family:
    key: str
    examples: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family("task_mixing", ("does multi-task mixing help?",)),
    Family("num_turns", ("does a max_turns of 3 vs 8 help on the guessing game?",)),
    Family("lora_vs_full", ("is LoRA as good as full fine-tuning on the easy task?",)),
    Family("kl", ("does a KL penalty of 0.5 slow learning on the easy single-turn task?",)),
    Family("group_size", ("does a larger GRPO group size (8 vs 2) help on arithmetic?",)),
    Family("learning_rate", ("lr 1e-4 vs 2e-5 on arithmetic?",)),
    Family("algorithm", ("is RLOO better than GRPO on arithmetic?",)),
    Family("model_size", ("do bigger models learn arithmetic faster?",)),
)
FAMILY_EXAMPLES = {family.key: family.examples[0] for family in FAMILIES}


def unmappable_message(question: str, *, planner: str = "The template planner") -> str:
    known = "\n".join(
        f"  - {family.key}: " + " / ".join(repr(example) for example in family.examples)
        for family in FAMILIES
    )
    return (
        f"{planner} cannot map {question!r} onto an experiment it knows, and it will not run "
        f"a random experiment. Questions it can read look like:\n{known}\n"
        f"Rephrase the question along one of these lines, or plan with an LLM: "
        f"--planner https://your-openai-compatible-endpoint/v1."
    )
