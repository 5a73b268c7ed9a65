"""The template planner's reading of a research question: words → a `Reading` (factor,
levels, control, task, outcome, direction, margin, threshold, smallest effect, held
settings), deterministically, with a small grammar over the catalogue's synonym tables
(`catalogue.py`). No LLM; the same question always reads the same. docs/reading.md gives
every rule with examples.

One module per part of a reading, each saying in its docstring what it owns:

- `read.py`: `read_question`, the order the parts are read in, and the final check;
- `question.py`: the question being read (its text, mentions, assumptions so far);
- `mentions.py`: synonyms of tasks, factors, level words and PARAMS matched in the text;
- `numbers.py`: numbers as written, in words, scaled ("tenfold") or shifted ("by 4");
- `spelling.py`: setting and task names written slightly wrong;
- `held.py`: settings fixed for every arm ("at lr 1e-5", "at few_shot=3");
- `batch.py`: the episodes per step a question fixes ("a batch of 64", "4 groups of 16");
- `factor.py`: the setting varied;
- `tasks.py`: the judged task, the others named, and their difficulty levels;
- `outcome.py`: the outcome and the direction;
- `effects.py`: the smallest effect and the equivalence margin;
- `moves.py`: how the question moves its setting (larger, taken away, the default, a sweep);
- `levels.py`: a run setting's levels; `params.py` a workflow PARAM's; `mixes.py` a task
  mix's and the base models'; `control.py` the control among written levels;
- `models.py`: model names and sizes a question asks for (also the template planner's);
- `summary.py`: the reading in one sentence.

Must not know about arms, budgets, the gateway or the database.
"""

from researcher.planner.reading.effects import COST_MARGIN, DEFAULT_MARGIN
from researcher.planner.reading.models import model_scale, requested_models, serves
from researcher.planner.reading.question import EXAMPLE_QUESTIONS
from researcher.planner.reading.read import read_question
from researcher.planner.reading.summary import summarise

__all__ = [
    "COST_MARGIN",
    "DEFAULT_MARGIN",
    "EXAMPLE_QUESTIONS",
    "model_scale",
    "read_question",
    "requested_models",
    "serves",
    "summarise",
]
