"""The template reader reads each question of a corpus as the question asks: its factor, its
levels (control first), its task, its outcome, its direction and margin — and refuses the
questions it must refuse, saying why. Every question quoted in README.md, docs/ and the old
planner's family examples is in the corpus and reads (is not refused)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from researcher.errors import NotAboutTraining, UnmappableQuestion, UnreadableQuestion
from researcher.plan import Reading
from researcher.planner.reader import read_question

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOL_360 = "HuggingFaceTB/SmolLM2-360M-Instruct"
QWEN_7B = "Qwen/Qwen2.5-7B-Instruct"
ONE = [SMOL]
TWO = [SMOL, SMOL_360]
THREE = [QWEN_7B, SMOL_360, SMOL]
ROOT = Path(__file__).resolve().parents[3]
MIX = {"arithmetic": 0.5, "calculator": 0.5}
ARITH = {"arithmetic": 1.0}
# a mixing question that names no task: two tasks the bundled model learns
CHAIN = {"chain_sum": 1.0}
CHAIN_MIX = {"chain_sum": 0.5, "basic_arithmetic": 0.5}


class Q(NamedTuple):
    question: str
    factor: str
    levels: list[Any]  # control first
    task: str
    outcome: str = "heldout_accuracy"
    direction: str = "greater"
    margin: float | None = None
    extra: dict[str, Any] = {}  # other Reading fields to check: tasks, steps, threshold
    served: list[str] = ONE
    params: dict[str, Any] | None = None  # the PARAMS of the user's workflow, if any


H, LS, TR, COST = "heldout_accuracy", "learning_speed", "final_train_reward", "cost"
# a user's workflow with a tool to choose, a few-shot count and its own temperature
AGENT = {"few_shot": 0, "temperature": 1.0, "tool": "calculator", "retries": 1, "use_hint": False}
# a rubric scored 0 to 10 (/tmp-style rubric.py): its rewards go beyond 0-1
RUBRIC = {"system_prompt": "You are a helpful writing assistant.", "max_tokens": 256}
TOOLS_AGENT = {"system_prompt": "You can call tools.", "tool": "calculator", "max_tool_calls": 3,
               "show_tool_errors": True, "strict_json": False, "format_bonus": 0.1}  # fmt: skip
TOOL_AGENT = {"tool": "search", "max_turns": 4}  # a tool-using agent that searches by default
G, L, TWO_SIDED, EQ, NI = "greater", "less", "two_sided", "equivalent", "noninferior"
# workflows of the workflow probe: retrieval QA, retries, a few-shot count, a penalty, a
# PARAM named like a run length
RAG = {"top_k": 3, "system_prompt": "Answer from the passages."}
RETRY = {"retries": 2, "persona": "paralegal"}
SHOTS = {"n_examples": 2, "max_tokens": 256}
PENALTY = {"style": "terse", "word_budget": 12}
LOOP = {"max_steps": 5, "batch_size": 4}
# probe 13's hint agent and game agent
HINTS = {"hint_every": 2, "max_turns": 6, "use_hint": True, "system_prompt": "Solve it.",
         "temperature": 0.7}  # fmt: skip
GAME = {"opponent": "random", "max_turns": 10, "self_play": False, "board_size": 3}
TOOLS = {"tool": "calculator", "max_turns": 4, "system_prompt": "Use the tool."}

# fmt: off
CORPUS: list[Q] = [
    # -- the issue's examples -----------------------------------------------------------------
    Q(
        "does a KL penalty of 0.5 slow learning on the easy single-turn task?",
        "kl_coef",
        [0.0, 0.5],
        "learnable",
        LS,
        L,
    ),
    Q(
        "does a larger GRPO group size (8 vs 2) help on arithmetic?",
        "group_size",
        [2, 8],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "is LoRA as good as full fine-tuning on the easy task?",
        "lora",
        ["full", 16],
        "learnable",
        H,
        EQ,
        0.05,
    ),
    Q(
        "does mixing in the tool-use task hurt held-out arithmetic?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        L,
        extra={"tasks": ["arithmetic", "calculator"]},
    ),
    Q(
        "does temperature 1.2 during rollouts help exploration on guess_number?",
        "temperature",
        [1.0, 1.2],
        "guess_number",
        H,
        G,
    ),
    Q(
        "does clipping epsilon 0.1 vs 0.3 matter for arithmetic?",
        "clip_eps",
        [0.1, 0.3],
        "arithmetic",
        H,
        TWO_SIDED,
    ),
    Q(
        "how many training steps does SmolLM2 need to learn to say banana?",
        "max_steps",
        [10, 20, 40],
        "learnable",
        H,
        G,
    ),
    Q("does multi-task mixing help 7B?", "task_mix", [CHAIN, CHAIN_MIX], "chain_sum", H, G),
    Q(
        "does RLOO learn arithmetic as well as GRPO within 20 steps?",
        "algorithm",
        ["grpo", "rloo"],
        "arithmetic",
        LS,
        EQ,
        0.05,
        {"steps": 20},
    ),
    # -- README, docs and the old planner's family examples ---------------------------------
    Q("does multi-task mixing help?", "task_mix", [CHAIN, CHAIN_MIX], "chain_sum", H, G),
    Q(  # `make demo`'s question
        "does raising the learning rate from 1e-5 to 4e-5 speed up learning on the easy task?",
        "lr",
        [1e-5, 4e-5],
        "learnable",
        LS,
        G,
    ),
    Q(
        "does mixing calculator into arithmetic training help?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        G,
    ),
    Q("do more turns help in multi-turn training?", "max_turns", [None, 12], "guess_number", H, G),
    Q(
        "does a longer turn budget help guess_number?",
        "max_turns",
        [None, 12],
        "guess_number",
        H,
        G,
    ),
    Q("is LoRA as good as full fine-tuning?", "lora", ["full", 16], "chain_sum", H, EQ, 0.05),
    Q("does a KL penalty help?", "kl_coef", [0.0, 0.05], "chain_sum", H, G),
    # a sweep from its floor (no KL) upward, as other settings sweep down and up
    Q("what does kl_coef do to arithmetic?", "kl_coef", [0.0, 0.05, 0.1], "arithmetic", H, TWO_SIDED),
    Q("does a bigger GRPO group size help?", "group_size", [4, 8], "chain_sum", H, G),
    Q("group size 4 vs 8 on arithmetic?", "group_size", [4, 8], "arithmetic", H, TWO_SIDED),
    Q("does a higher learning rate help?", "lr", [2e-5, 1e-4], "chain_sum", H, G),
    Q("lr 1e-4 vs 2e-5 on arithmetic?", "lr", [2e-5, 1e-4], "arithmetic", H, TWO_SIDED),
    Q("is RLOO better than GRPO?", "algorithm", ["grpo", "rloo"], "chain_sum", H, G),
    Q(
        "do bigger models learn arithmetic faster?",
        "base_model",
        [SMOL, SMOL_360],
        "arithmetic",
        LS,
        G,
        served=TWO,
    ),
    Q(
        "135M vs 360M on arithmetic?",
        "base_model",
        [SMOL, SMOL_360],
        "arithmetic",
        H,
        TWO_SIDED,
        served=TWO,
    ),
    # -- the old planner's test questions ------------------------------------------------------
    Q("Is a cocktail of tasks better than one task?", "task_mix", [CHAIN, CHAIN_MIX], "chain_sum", H, G),
    Q(
        "Should I combine tasks when training?",
        "task_mix",
        [CHAIN, CHAIN_MIX],
        "chain_sum",
        H,
        TWO_SIDED,
    ),
    Q("What group size is best for GRPO?", "group_size", [4, 2, 8], "chain_sum", H, TWO_SIDED),
    Q("Does a KL penalty help on guess_number?", "kl_coef", [0.0, 0.05], "guess_number", H, G),
    Q("Does giving the model more guesses help?", "max_turns", [None, 12], "guess_number", H, G),
    # -- what the old planner misread ---------------------------------------------------------
    Q(
        "does a learning rate of 5e-6 learn the guessing game faster than 0.00002?",
        "lr",
        [2e-5, 5e-6],
        "guess_number",
        LS,
        G,
    ),
    Q(
        "do learning rates 1e-6, 1e-5 and 1e-4 change held-out arithmetic accuracy?",
        "lr",
        [1e-6, 1e-5, 1e-4],
        "arithmetic",
        H,
        TWO_SIDED,
    ),
    Q(
        "is max_staleness 4 as good as 1 on the easy task?",
        "max_staleness",
        [1, 4],
        "learnable",
        H,
        EQ,
        0.05,
    ),
    Q(
        "does training with 8 groups per batch instead of 4 help on arithmetic?",
        "batch_groups",
        [4, 8],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does tree merging cut the wall time of training on the guessing game compared with no merging?",
        "merge",
        ["none", "tree"],
        "guess_number",
        COST,
        L,
    ),
    Q(
        "does RLOO reach a higher training reward than GRPO on the calculator task?",
        "algorithm",
        ["grpo", "rloo"],
        "calculator",
        TR,
        G,
    ),
    # -- numbers as written ---------------------------------------------------------------------
    Q(
        "does a five times larger learning rate help arithmetic?",
        "lr",
        [2e-5, 1e-4],
        "arithmetic",
        H,
        G,
    ),
    Q("does twice the group size help?", "group_size", [4, 8], "chain_sum", H, G),
    Q(
        "does halving the learning rate hurt the guessing game?",
        "lr",
        [2e-5, 1e-5],
        "guess_number",
        H,
        L,
    ),
    Q(
        "does doubling the batch size speed up learning on arithmetic?",
        "batch_groups",
        [4, 8],
        "arithmetic",
        LS,
        G,
    ),
    Q(
        "does LoRA r=4, 16 and 64 matter on the easy task?",
        "lora",
        [4, 16, 64],
        "learnable",
        H,
        TWO_SIDED,
    ),
    Q("does lr 3e-4 help on math?", "lr", [2e-5, 3e-4], "arithmetic", H, G),
    Q("does a learning rate of 0.000005 help?", "lr", [2e-5, 5e-6], "chain_sum", H, G),
    Q("does a learning rate of 5e-6 help?", "lr", [2e-5, 5e-6], "chain_sum", H, G),
    Q("does lr 5e-6 vs 0.000005 differ?", "lr", [2e-5, 5e-6], "chain_sum", H, TWO_SIDED),
    Q(
        "is REINFORCE worse than GRPO on word problems?",
        "algorithm",
        ["grpo", "reinforce"],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does a KL coefficient of 0.1 reduce accuracy on sums?",
        "kl_coef",
        [0.0, 0.1],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does lr 1e-7 and 2e-5 matter for the number game?",
        "lr",
        [2e-5, 1e-7],
        "guess_number",
        H,
        TWO_SIDED,
    ),
    Q("does max tokens 128 vs 64 help arithmetic?", "max_tokens", [64, 128], "arithmetic", H, G),
    Q(
        "does a longer completion length help the calculator task?",
        "max_tokens",
        [96, 192],
        "calculator",
        H,
        G,
    ),
    Q("does weight decay help on arithmetic?", "weight_decay", [0.0, 0.01], "arithmetic", H, G),
    Q("does gradient clipping at 0.5 help?", "max_grad_norm", [1.0, 0.5], "chain_sum", H, G),
    Q(
        "does off-policy lag of 4 hurt learning speed on arithmetic?",
        "max_staleness",
        [1, 4],
        "arithmetic",
        LS,
        L,
    ),
    Q(
        "does keeping zero-variance groups help?",
        "zero_variance_groups",
        ["drop", "keep"],
        "chain_sum",
        H,
        G,
    ),
    Q(
        "does the sampling temperature matter on the easy task?",
        "temperature",
        [1.0, 0.7],
        "learnable",
        H,
        TWO_SIDED,
    ),
    Q(
        "is temperature 0.7 as good as 1.0 within 3 points on arithmetic?",
        "temperature",
        [1.0, 0.7],
        "arithmetic",
        H,
        EQ,
        0.03,
    ),
    Q(
        "how many steps does RLOO need to learn arithmetic compared with GRPO?",
        "algorithm",
        ["grpo", "rloo"],
        "arithmetic",
        LS,
        TWO_SIDED,
        extra={"threshold": 0.8},
    ),
    Q(
        "does a larger group size at the same batch size help?",
        "group_size",
        [4, 8],
        "chain_sum",
        H,
        G,
    ),
    Q(
        "does training on calculator help held-out arithmetic?",
        "task_mix",
        [ARITH, MIX],
        "arithmetic",
        H,
        G,
        extra={"tasks": ["arithmetic", "calculator"]},
    ),
    Q(
        "does mixing 25% calculator into arithmetic hurt?",
        "task_mix",
        [ARITH, {"arithmetic": 0.75, "calculator": 0.25}],
        "arithmetic",
        H,
        L,
    ),
    Q(
        "does a 70/30 mix of arithmetic and calculator help?",
        "task_mix",
        [ARITH, {"arithmetic": 0.7, "calculator": 0.3}],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does training for 100 steps instead of 50 help on arithmetic?",
        "max_steps",
        [50, 100],
        "arithmetic",
        H,
        G,
    ),
    Q(
        "does training longer help on the guessing game?",
        "max_steps",
        [20, 40],
        "guess_number",
        H,
        G,
    ),
    Q("does the learning rate matter?", "lr", [2e-5, 1e-4], "chain_sum", H, TWO_SIDED),
    Q("does lr 2e-5 vs 1e-4 make training cheaper?", "lr", [2e-5, 1e-4], "chain_sum", COST, L),
    Q(
        "does merging timelines make training faster?",
        "merge",
        ["tree", "timeline"],
        "guess_number",
        COST,
        L,
    ),
    Q(
        "does the tool use task benefit from 8 samples per prompt?",
        "group_size",
        [4, 8],
        "calculator",
        H,
        G,
    ),
    Q(
        "does mixing in the guessing game help the calculator task?",
        "task_mix",
        [{"calculator": 1.0}, {"calculator": 0.5, "guess_number": 0.5}],
        "calculator",
        H,
        G,
    ),
    # -- paraphrases, synonyms, numbers as written (checked by hand) -------------------------
    Q('Does KL regularization of 0.01 help arithmetic?', 'kl_coef', [0.0, 0.01], 'arithmetic', H, G),
    Q('does beta 0.1 hurt the guessing game?', 'kl_coef', [0.0, 0.1], 'guess_number', H, L),
    Q('does a KL penalty of 0.5 slow down learning on the easy task?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('would a kl coefficient of 0.2 make learning slower on say-banana?', 'kl_coef', [0.0, 0.2], 'learnable', LS, L),
    Q('is a Kullback-Leibler penalty worth it on the tool task?', 'kl_coef', [0.0, 0.05], 'calculator', H, G),
    Q('does kl_coef 0.05 vs 0.2 change training reward on arithmetic?', 'kl_coef', [0.05, 0.2], 'arithmetic', TR, TWO_SIDED),
    Q('does the learning rate 1e-5 match 2e-5 on the easy task?', 'lr', [2e-05, 1e-05], 'learnable', H, EQ, 0.05),
    Q('does lr=3e-5 learn faster on the calculator?', 'lr', [2e-05, 3e-05], 'calculator', LS, G),
    Q('is a smaller learning rate better for tool use?', 'lr', [2e-05, 5e-06], 'calculator', H, G),
    Q('does a lower step size of 1e-6 hurt learning speed on math?', 'lr', [2e-05, 1e-06], 'arithmetic', LS, L),
    Q('does a ten times smaller learning rate slow learning?', 'lr', [2e-05, 2e-06], 'chain_sum', LS, L),
    Q('does 1e-4 learn arithmetic faster than 1e-5?', 'lr', [1e-05, 0.0001], 'arithmetic', LS, G),
    Q('which learning rate is best for the guessing game?', 'lr', [2e-05, 5e-06, 0.0001], 'guess_number', H, TWO_SIDED),
    Q('does lr 1e-5, 2e-5, 5e-5 and 1e-4 affect accuracy on word problems?', 'lr', [2e-05, 1e-05, 5e-05, 0.0001], 'arithmetic', H, TWO_SIDED),
    Q('does an order of magnitude higher lr break training on arithmetic?', 'lr', [2e-05, 0.0002], 'arithmetic', H, L),
    Q('does a group size of 16 help on the guessing game?', 'group_size', [4, 16], 'guess_number', H, G),
    Q('do 8 rollouts per prompt beat 4 on arithmetic?', 'group_size', [4, 8], 'arithmetic', H, G),
    Q('does using 2 samples per prompt instead of 8 hurt the easy task?', 'group_size', [8, 2], 'learnable', H, L),
    Q('are larger groups more sample efficient on arithmetic?', 'group_size', [4, 8], 'arithmetic', LS, G),
    Q('does num_generations 16 vs 4 matter for calculator?', 'group_size', [4, 16], 'calculator', H, TWO_SIDED),
    Q('does group size 1 work on arithmetic?', 'group_size', [4, 1], 'arithmetic', H, TWO_SIDED),
    Q('does a batch size of 16 groups help arithmetic?', 'batch_groups', [4, 16], 'arithmetic', H, G),
    Q('does a smaller batch size learn faster on the number game?', 'batch_groups', [4, 2], 'guess_number', LS, G),
    Q('does batch_groups 2 vs 8 change learning speed?', 'batch_groups', [2, 8], 'chain_sum', LS, TWO_SIDED),
    Q('do 16 groups per step help the tool-use task?', 'batch_groups', [4, 16], 'calculator', H, G),
    Q('is a clip range of 0.1 better than 0.2 on arithmetic?', 'clip_eps', [0.2, 0.1], 'arithmetic', H, G),
    Q('does ppo clipping 0.3 help?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G),
    Q('does a larger clipping epsilon destabilize training on the guessing game?', 'clip_eps', [0.2, 0.3], 'guess_number', H, L),
    Q('does clip_eps 0.28 improve the calculator task?', 'clip_eps', [0.2, 0.28], 'calculator', H, G),
    Q('does weight decay 0.1 hurt held-out accuracy on sums?', 'weight_decay', [0.0, 0.1], 'arithmetic', H, L),
    Q('does l2 regularization of 0.01 help generalization on arithmetic?', 'weight_decay', [0.0, 0.01], 'arithmetic', H, G),
    Q('does max_grad_norm 0.1 vs 10 matter?', 'max_grad_norm', [0.1, 10.0], 'chain_sum', H, TWO_SIDED),
    Q('does gradient norm clipping at 1.0 vs 5.0 affect the easy task?', 'max_grad_norm', [1.0, 5.0], 'learnable', H, TWO_SIDED),
    Q('does staleness 0 vs 4 change learning speed on arithmetic?', 'max_staleness', [0, 4], 'arithmetic', LS, TWO_SIDED),
    Q('is max_staleness 8 as good as 1 within 5 points?', 'max_staleness', [1, 8], 'chain_sum', H, EQ, 0.05),
    Q('does more off-policy lag hurt the guessing game?', 'max_staleness', [1, 4], 'guess_number', H, L),
    Q('does max_steps 50 help?', 'max_steps', [20, 50], 'chain_sum', H, G),
    Q('does 200 training steps instead of 100 improve held-out accuracy on the calculator?', 'max_steps', [100, 200], 'calculator', H, G),
    Q('how many steps are needed to learn arithmetic?', 'max_steps', [10, 20, 40], 'arithmetic', H, G),
    Q('does REINFORCE learn as fast as GRPO on the easy task?', 'algorithm', ['grpo', 'reinforce'], 'learnable', LS, EQ, 0.05),
    Q('is RLOO as good as GRPO on the number guessing game?', 'algorithm', ['grpo', 'rloo'], 'guess_number', H, EQ, 0.05),
    Q('does the algorithm matter for the calculator task?', 'algorithm', ['grpo', 'rloo'], 'calculator', H, TWO_SIDED),
    Q('GRPO or RLOO for arithmetic?', 'algorithm', ['grpo', 'rloo'], 'arithmetic', H, TWO_SIDED),
    Q('does reinforce++ beat rloo on the guessing game?', 'algorithm', ['rloo', 'reinforce'], 'guess_number', H, G),
    Q('which advantage estimator is best for tool calling?', 'algorithm', ['grpo', 'rloo', 'reinforce'], 'bfcl', H, TWO_SIDED),
    Q('does timeline merging save wall time versus no merging on the calculator?', 'merge', ['none', 'timeline'], 'calculator', COST, L),
    Q('is tree packing cheaper than timelines on the guessing game?', 'merge', ['timeline', 'tree'], 'guess_number', COST, L),
    Q('does dropping zero-variance groups speed up learning?', 'zero_variance_groups', ['keep', 'drop'], 'chain_sum', LS, G),
    # scale_rewards: a question naming the std division ("group", the default) tries it against "none"
    Q('does std normalization of advantages help on chain_sum?', 'scale_rewards', ['none', 'group'], 'chain_sum', H, G),
    Q('does Dr. GRPO beat GRPO on countdown?', 'scale_rewards', ['group', 'none'], 'countdown', H, G),
    Q('is Dr GRPO as good as GRPO on countdown?', 'scale_rewards', ['group', 'none'], 'countdown', H, EQ, 0.05),
    Q('does dividing by the std help learning on countdown?', 'scale_rewards', ['none', 'group'], 'countdown', H, G),
    Q('does training without std normalization learn faster on arithmetic?', 'scale_rewards', ['group', 'none'], 'arithmetic', LS, G),
    Q('does mean centering rewards without dividing by the std help?', 'scale_rewards', ['group', 'none'], 'chain_sum', H, G),
    Q('does advantage normalization hurt on chain_sum?', 'scale_rewards', ['none', 'group'], 'chain_sum', H, L),
    Q('does scale_rewards matter?', 'scale_rewards', ['group', 'none'], 'chain_sum', H, TWO_SIDED),
    Q('does scale_rewards none help?', 'scale_rewards', ['group', 'none'], 'chain_sum', H, G),
    Q("does scale_rewards='none' beat scale_rewards='group' on countdown?", 'scale_rewards', ['group', 'none'], 'countdown', H, G),
    Q('does dropping partial groups hurt the tool task?', 'partial_groups', ['train', 'drop'], 'calculator', H, L),
    Q('does LoRA rank 8 vs 64 matter on arithmetic?', 'lora', [8, 64], 'arithmetic', H, TWO_SIDED),
    Q('is LoRA r=16 as good as full fine-tuning on the guessing game?', 'lora', ['full', 16], 'guess_number', H, EQ, 0.05),
    Q('does a larger LoRA rank help?', 'lora', [16, 64], 'chain_sum', H, G),
    Q('are adapters as good as full-parameter training on arithmetic?', 'lora', ['full', 16], 'arithmetic', H, EQ, 0.05),
    Q('does PEFT with rank 4 hurt the easy task compared with full fine-tuning?', 'lora', ['full', 4], 'learnable', H, L),
    Q('does QLoRA match full fine-tuning on tool use?', 'lora', ['full', 16], 'calculator', H, EQ, 0.05),
    Q('does a lower temperature help the easy task?', 'temperature', [1.0, 0.7], 'learnable', H, G),
    Q('does temperature 0.5, 1.0 and 1.5 change learning speed on arithmetic?', 'temperature', [1.0, 0.5, 1.5], 'arithmetic', LS, TWO_SIDED),
    Q('does sampling temperature 0.8 hurt exploration in the guessing game?', 'temperature', [1.0, 0.8], 'guess_number', H, L),
    Q('does rollout temperature 1.3 vs 0.7 matter for calculator?', 'temperature', [1.3, 0.7], 'calculator', H, TWO_SIDED),
    Q('does max_tokens 256 help the calculator task?', 'max_tokens', [96, 256], 'calculator', H, G),
    Q('do shorter completions hurt arithmetic?', 'max_tokens', [64, 32], 'arithmetic', H, L),
    Q('does a completion length of 32 vs 64 tokens change accuracy on arithmetic?', 'max_tokens', [64, 32], 'arithmetic', H, TWO_SIDED),
    Q('does max new tokens 16 make training cheaper on the easy task?', 'max_tokens', [24, 16], 'learnable', COST, L),
    Q('does a turn budget of 4 hurt guess_number?', 'max_turns', [None, 4], 'guess_number', H, L),
    Q('do 3 guesses per game suffice compared with 8 on the guessing game?', 'max_turns', [8, 3], 'guess_number', H, NI, 0.05),
    Q('does the number of turns matter in the guessing game?', 'max_turns', [None, 2], 'guess_number', H, TWO_SIDED),
    Q('does max_turns 2, 4 and 8 change held-out accuracy?', 'max_turns', [2, 4, 8], 'guess_number', H, TWO_SIDED),
    Q('does fewer guesses slow learning?', 'max_turns', [None, 2], 'guess_number', LS, L),
    Q('does mixing arithmetic and calculator help?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('does mixing in 10%, 25% and 50% calculator change arithmetic accuracy?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.9, 'calculator': 0.1}, {'arithmetic': 0.75, 'calculator': 0.25}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, TWO_SIDED),
    Q('does adding the guessing game to training hurt the easy task?', 'task_mix', [{'learnable': 1.0}, {'learnable': 0.5, 'guess_number': 0.5}], 'learnable', H, L),
    Q('does multitask training on arithmetic, calculator and guess_number help held-out arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.3333, 'calculator': 0.3333, 'guess_number': 0.3333}], 'arithmetic', H, G),
    Q('does a 50/50 mix of the easy task and arithmetic help the easy task?', 'task_mix', [{'learnable': 1.0}, {'learnable': 0.5, 'arithmetic': 0.5}], 'learnable', H, G),
    Q('does joint training with tool use improve math?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('does training on both tasks help the calculator?', 'task_mix', [{'calculator': 1.0}, {'calculator': 0.5, 'arithmetic': 0.5}], 'calculator', H, G),
    Q('does combining the tasks hurt learning speed on arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', LS, L),
    Q('is multi-task training as good as single-task training on arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, EQ, 0.05),
    # -- the issue's examples, paraphrased; outcomes, margins, several tasks -------------------
    Q('Does a KL penalty of 0.5 slow learning on the easy task?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('would adding a 0.5 KL penalty make the single-turn task learn more slowly?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('does kl 0.5 slow down learning on the banana task?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('does a group size of 8 instead of 2 help arithmetic?', 'group_size', [2, 8], 'arithmetic', H, G),
    Q('is GRPO with groups of 8 better than groups of 2 on math?', 'group_size', [2, 8], 'arithmetic', H, G),
    Q('does increasing the group size from 2 to 8 improve arithmetic accuracy?', 'group_size', [2, 8], 'arithmetic', H, G),
    Q('does LoRA match full fine-tuning on the easy task?', 'lora', ['full', 16], 'learnable', H, EQ, 0.05),
    Q('is LoRA comparable to full fine-tuning on the easy single-turn task?', 'lora', ['full', 16], 'learnable', H, EQ, 0.05),
    Q('is low-rank adaptation no worse than full fine-tuning on say a word?', 'lora', ['full', 16], 'learnable', H, NI, 0.05),
    Q('does mixing in tool use hurt held-out arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, L),
    Q('does adding the calculator task to training hurt arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, L),
    Q('does including tool-use tasks harm held-out math accuracy?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, L),
    Q('does temperature 1.2 help exploration in the guessing game?', 'temperature', [1.0, 1.2], 'guess_number', H, G),
    Q('is sampling at temperature 1.2 better than 1.0 for the number game?', 'temperature', [1.0, 1.2], 'guess_number', H, G),
    Q('does a rollout temperature of 1.2 help guess the number?', 'temperature', [1.0, 1.2], 'guess_number', H, G),
    Q('does the clip range 0.1 vs 0.3 matter on arithmetic?', 'clip_eps', [0.1, 0.3], 'arithmetic', H, TWO_SIDED),
    Q('does epsilon 0.1 or 0.3 make a difference for word problems?', 'clip_eps', [0.1, 0.3], 'arithmetic', H, TWO_SIDED),
    Q('how many steps does it take to learn to say banana?', 'max_steps', [10, 20, 40], 'learnable', H, G),
    Q('how many training steps does the easy task need?', 'max_steps', [10, 20, 40], 'learnable', H, G),
    Q('does mixing help the 7B model?', 'task_mix', [CHAIN, CHAIN_MIX], 'chain_sum', H, G),
    Q('does multi-task training help Qwen 7B on arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('does lr 1e-4 learn as well as lr 2e-5 within 20 steps on arithmetic?', 'lr', [2e-05, 0.0001], 'arithmetic', LS, EQ, 0.05, extra={'steps': 20}),
    Q('does RLOO learn faster than GRPO within 30 steps on the calculator task?', 'algorithm', ['grpo', 'rloo'], 'calculator', LS, G, None, extra={'steps': 30}),
    Q('how many steps does a KL penalty of 0.1 need to reach 0.8 on the easy task?', 'kl_coef', [0.0, 0.1], 'learnable', LS, TWO_SIDED, None, extra={'threshold': 0.8}),
    Q('does lr 1e-4 reach a training reward of 0.9 sooner than 2e-5 on arithmetic?', 'lr', [2e-05, 0.0001], 'arithmetic', LS, G, None, extra={'threshold': 0.9}),
    Q('does group size 8 raise the final training reward on arithmetic?', 'group_size', [4, 8], 'arithmetic', TR, G),
    Q('does a larger batch make training more expensive on arithmetic?', 'batch_groups', [4, 8], 'arithmetic', COST, G),
    Q('does max_staleness 4 make training faster on the guessing game?', 'max_staleness', [1, 4], 'guess_number', COST, L),
    Q('does tree merging use fewer tokens than no merging on calculator?', 'merge', ['none', 'tree'], 'calculator', COST, L),
    Q('is LoRA r=8 cheaper than full fine-tuning on arithmetic?', 'lora', ['full', 8], 'arithmetic', COST, L),
    Q('does lr 1e-4 help on arithmetic and the calculator task?', 'lr', [2e-05, 0.0001], 'arithmetic', H, G),
    # "the steps needed" is learning speed, not necessity; a bound written as a symbol
    Q('does the KL penalty increase the steps needed?', 'kl_coef', [0.0, 0.05], 'chain_sum', LS, L, extra={'threshold': 0.8}),
    Q('does a larger group size reduce the steps needed on chain_sum?', 'group_size', [4, 8], 'chain_sum', LS, G),
    Q('does lr > 1e-4 hurt chain_sum?', 'lr', [0.0001, 0.0002], 'chain_sum', H, L),
    Q('does lr 1e-4 reach a training reward > 0.9 sooner than 2e-5?', 'lr', [2e-05, 0.0001], 'chain_sum', LS, G, extra={'threshold': 0.9}),
    # a level word right after the verb is the training the question is about: held
    Q('does kl 0.05 help RLOO on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', H, G, extra={'held': {'algorithm': 'rloo'}}),
    Q('does the clip ratio matter for RLOO on countdown?', 'clip_eps', [0.2, 0.1], 'countdown', H, TWO_SIDED, extra={'held': {'algorithm': 'rloo'}}),
    Q('does weight decay help LoRA on chain_sum?', 'weight_decay', [0.0, 0.01], 'chain_sum', H, G, extra={'held': {'lora': 16}}),
    # "rank" named with LoRA: ranks around r=16, not full fine-tuning
    Q('how does LoRA rank affect countdown accuracy?', 'lora', [16, 64], 'countdown', H, TWO_SIDED),
    Q('which LoRA rank is best for chain_sum?', 'lora', [16, 4, 64], 'chain_sum', H, TWO_SIDED),
    # the task alone as the subject against a mix: the mix is the control
    Q('does chain_sum alone beat a mix of chain_sum and basic_arithmetic?', 'task_mix', [CHAIN_MIX, CHAIN], 'chain_sum', H, G),
    Q('is single-task training better than multi-task on chain_sum?', 'task_mix', [CHAIN_MIX, CHAIN], 'chain_sum', H, G),
    # a setting on by default named alone is tried on against off; taken away when "necessary"
    Q('does merging cut training cost on mastermind?', 'merge', ['none', 'tree'], 'mastermind', COST, L),
    Q('is full fine-tuning necessary for countdown?', 'lora', ['full', 16], 'countdown', H, L),
    Q('is gradient clipping necessary on chain_sum?', 'max_grad_norm', [1.0, 1e6], 'chain_sum', H, L),
    Q('is std normalization necessary on countdown?', 'scale_rewards', ['group', 'none'], 'countdown', H, L),
    # "to N" is where a multiplied setting lands; a multiplied outcome is no level
    Q('does doubling the group size to 8 help countdown?', 'group_size', [4, 8], 'countdown', H, G),
    Q('does halving the lr to 1e-5 hurt chain_sum?', 'lr', [2e-05, 1e-05], 'chain_sum', H, L),
    Q('does group size 8 double the training time on chain_sum?', 'group_size', [4, 8], 'chain_sum', COST, G),
    Q('does lr 1e-4 increase cost on chain_sum?', 'lr', [2e-05, 1e-04], 'chain_sum', COST, G),
    Q('does a larger group size decrease the wall time on chain_sum?', 'group_size', [4, 8], 'chain_sum', COST, L),
    # the reward named with a threshold is the threshold's, not the outcome
    Q('does lr 1e-4 reach a training reward of 0.9 within 25 steps on chain_sum?', 'lr', [2e-05, 1e-04], 'chain_sum', LS, G, extra={'threshold': 0.9, 'steps': 25}),
    Q('how many steps does lr 1e-4 need to hit 90% training reward on chain_sum?', 'lr', [2e-05, 1e-04], 'chain_sum', LS, TWO_SIDED, extra={'threshold': 0.9}),
    Q('does RLOO not learn faster than GRPO on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', LS, G, extra={'negated': True}),
    Q('does group size 8 fail to help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'negated': True}),
    # looser/wider, stronger/weaker move the setting; they are not the direction
    Q('does a looser clip range help countdown?', 'clip_eps', [0.2, 0.3], 'countdown', H, G),
    Q('does a wider clip range hurt chain_sum?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, L),
    Q('does a stronger KL penalty hurt chain_sum?', 'kl_coef', [0.0, 0.1], 'chain_sum', H, L),
    Q('does a weaker KL penalty than 0.1 help countdown?', 'kl_coef', [0.1, 0.05], 'countdown', H, G),
    Q('does a KL penalty reduce entropy collapse on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', H, TWO_SIDED),
    Q('does RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('does LoRA rank 4 learn chain_sum as fast as full fine-tuning?', 'lora', ['full', 4], 'chain_sum', LS, EQ, 0.05),
    Q('does LoRA r=8 learn countdown as well as full fine-tuning?', 'lora', ['full', 8], 'countdown', H, EQ, 0.05),
    # two levels of a setting that is off by default, neither compared with the other
    Q('does a KL penalty between 0.01 and 0.1 help?', 'kl_coef', [0.0, 0.01, 0.1], 'chain_sum', H, G),
    Q('does a KL penalty of 0.01 or 0.1 help?', 'kl_coef', [0.0, 0.01, 0.1], 'chain_sum', H, TWO_SIDED),
    Q('does a KL penalty of 0.1 help more than 0.01?', 'kl_coef', [0.01, 0.1], 'chain_sum', H, G),
    Q('does a KL penalty of 0.1 destabilize training?', 'kl_coef', [0.0, 0.1], 'chain_sum', H, L),
    Q('does mixing chain_sum into basic_arithmetic training raise held-out accuracy on basic_arithmetic?', 'task_mix', [{'basic_arithmetic': 1.0}, {'basic_arithmetic': 0.5, 'chain_sum': 0.5}], 'basic_arithmetic', H, G),
    Q('does lr 5e-5 help arithmetic with 3 seeds?', 'lr', [2e-05, 5e-05], 'arithmetic', H, G),
    Q('does a kl coef of 0.05 help arithmetic after 40 steps?', 'kl_coef', [0.0, 0.05], 'arithmetic', H, G, None, extra={'steps': 40}),
    Q('does lr 3e-5 help SmolLM2-135M on arithmetic?', 'lr', [2e-05, 3e-05], 'arithmetic', H, G),
    Q('does doubling the learning rate help on the guessing game?', 'lr', [2e-05, 4e-05], 'guess_number', H, G),
    Q('does a 2x larger group size help the easy task?', 'group_size', [4, 8], 'learnable', H, G),
    Q('does half the batch size hurt math?', 'batch_groups', [4, 2], 'arithmetic', H, L),
    Q('does tripling the completion length help tool use?', 'max_tokens', [96, 288], 'calculator', H, G),
    Q('does a larger temperature help?', 'temperature', [1.0, 1.2], 'chain_sum', H, G),
    Q('does temperature matter?', 'temperature', [1.0, 0.7], 'chain_sum', H, TWO_SIDED),
    Q('does the KL coefficient matter on the guessing game?', 'kl_coef', [0.0, 0.05], 'guess_number', H, TWO_SIDED),
    Q('does KL 0 vs 0.1 vs 1.0 change held-out arithmetic?', 'kl_coef', [0.0, 0.1, 1.0], 'arithmetic', H, TWO_SIDED),
    Q('do group sizes 2, 4, 8 and 16 change learning speed on the calculator task?', 'group_size', [4, 2, 8, 16], 'calculator', LS, TWO_SIDED),
    Q('is group size 8 as good as 16 within 0.02 on arithmetic?', 'group_size', [16, 8], 'arithmetic', H, EQ, 0.02),
    Q('does RLOO match GRPO within 2 percentage points on the easy task?', 'algorithm', ['grpo', 'rloo'], 'learnable', H, EQ, 0.02),
    Q('is REINFORCE as cheap as GRPO on arithmetic?', 'algorithm', ['grpo', 'reinforce'], 'arithmetic', COST, EQ, 0.1),
    # -- numbers as words; either way ------------------------------------------------------------
    Q('does a group size of eight help?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('do groups of sixteen beat groups of four on arithmetic?', 'group_size', [4, 16], 'arithmetic', H, G),
    Q('does a LoRA rank of thirty-two help?', 'lora', ['full', 32], 'chain_sum', H, G),
    Q('does training on two tasks help arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('is RLOO or GRPO better on arithmetic?', 'algorithm', ['grpo', 'rloo'], 'arithmetic', H, TWO_SIDED),
    Q('does lr 1e-4 help or hurt arithmetic?', 'lr', [2e-05, 0.0001], 'arithmetic', H, TWO_SIDED),
    # -- more paraphrases: verbs that name the level, non-inferiority, schedules ---------------
    Q('Does KL help?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, G),
    Q('does a KL penalty reduce reward hacking on the calculator task?', 'kl_coef', [0.0, 0.05], 'calculator', H, TWO_SIDED),
    Q('does lowering the learning rate to 1e-5 help arithmetic?', 'lr', [2e-05, 1e-05], 'arithmetic', H, G),
    Q('does raising the lr to 1e-4 speed up learning on the easy task?', 'lr', [2e-05, 0.0001], 'learnable', LS, G),
    Q('does increasing KL from 0.01 to 0.1 hurt arithmetic?', 'kl_coef', [0.01, 0.1], 'arithmetic', H, L),
    Q('does lr 2e-5 beat 1e-4?', 'lr', [0.0001, 2e-05], 'chain_sum', H, G),
    Q('would training with RLOO instead of GRPO help the easy task?', 'algorithm', ['grpo', 'rloo'], 'learnable', H, G),
    Q('does switching to REINFORCE slow learning on the guessing game?', 'algorithm', ['grpo', 'reinforce'], 'guess_number', LS, L),
    Q('is the default group size of 4 enough compared with 8?', 'group_size', [8, 4], 'chain_sum', H, NI, 0.05),
    Q('does a KL penalty of 0.05 keep the policy close without hurting arithmetic accuracy?', 'kl_coef', [0.0, 0.05], 'arithmetic', H, NI, 0.05),
    Q('how does the learning rate affect learning speed on the calculator task?', 'lr', [2e-05, 0.0001], 'calculator', LS, TWO_SIDED),
    Q('does lr 1e-4 make the easy task learn faster than lr 1e-5 does?', 'lr', [1e-05, 0.0001], 'learnable', LS, G),
    Q('does the learning rate 1e-5 vs 1e-4 vs 1e-3 matter for arithmetic?', 'lr', [1e-05, 0.0001, 0.001], 'arithmetic', H, TWO_SIDED),
    Q('does increasing the number of groups per batch to 8 help?', 'batch_groups', [4, 8], 'chain_sum', H, G),
    Q('does 16 samples per prompt instead of 4 make training more expensive?', 'group_size', [4, 16], 'chain_sum', COST, G),
    Q('does using 32 max tokens hurt the calculator task?', 'max_tokens', [96, 32], 'calculator', H, L),
    Q('does a temperature of 0.0 hurt exploration?', 'temperature', [1.0, 0.0], 'chain_sum', H, L),
    Q('are 2 turns enough for the guessing game?', 'max_turns', [None, 2], 'guess_number', H, NI, 0.05),
    Q('does LoRA with rank 16 learn arithmetic as fast as full fine-tuning?', 'lora', ['full', 16], 'arithmetic', LS, EQ, 0.05),
    Q('does staleness matter for learning speed?', 'max_staleness', [1, 4], 'chain_sum', LS, TWO_SIDED),
    Q('does mixing the easy task into arithmetic training help arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'learnable': 0.5}], 'arithmetic', H, G),
    Q('does training on the easy task and the guessing game help the guessing game?', 'task_mix', [{'guess_number': 1.0}, {'guess_number': 0.5, 'learnable': 0.5}], 'guess_number', H, G),
    Q('does a calculator help arithmetic?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('does mixing in arithmetic help the tool-use task?', 'task_mix', [{'calculator': 1.0}, {'calculator': 0.5, 'arithmetic': 0.5}], 'calculator', H, G),
    Q('does clipping help on arithmetic?', 'clip_eps', [0.2, 0.1], 'arithmetic', H, G),
    Q('does more training help the calculator task?', 'max_steps', [20, 40], 'calculator', H, G),
    Q('does kl 0.1 help the model say banana?', 'kl_coef', [0.0, 0.1], 'learnable', H, G),
    Q('is lr 1e-5 too small for arithmetic?', 'lr', [2e-05, 1e-05], 'arithmetic', H, L),
    Q('does lr 1e-4 hurt tool calling within 50 steps?', 'lr', [2e-05, 0.0001], 'bfcl', LS, L, None, extra={'steps': 50}),
    Q('does beta 0.04 (the TRL default) help arithmetic?', 'kl_coef', [0.0, 0.04], 'arithmetic', H, G),
    # -- casing, punctuation, imperative phrasings ------------------------------------------------
    Q('KL-penalty 0.5 — does it slow learning on the easy task?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('kl_coef=0.5: slower learning on learnable?', 'kl_coef', [0.0, 0.5], 'learnable', LS, L),
    Q('Does LR=1E-4 help ARITHMETIC?', 'lr', [2e-05, 0.0001], 'arithmetic', H, G),
    Q('Effect of group_size (2, 4, 8) on arithmetic.', 'group_size', [4, 2, 8], 'arithmetic', H, TWO_SIDED),
    Q('Compare lr 1e-5 and 1e-4 on the guessing game', 'lr', [1e-05, 0.0001], 'guess_number', H, TWO_SIDED),
    Q('I want to know if a KL penalty helps on the calculator task.', 'kl_coef', [0.0, 0.05], 'calculator', H, G),
    Q('Can LoRA (rank 16) match full fine-tuning on the easy task?', 'lora', ['full', 16], 'learnable', H, EQ, 0.05),
    Q('Test whether temperature 0.7 beats 1.0 on arithmetic.', 'temperature', [1.0, 0.7], 'arithmetic', H, G),
    Q('RLOO vs GRPO vs REINFORCE on the easy task', 'algorithm', ['grpo', 'rloo', 'reinforce'], 'learnable', H, TWO_SIDED),
    Q('lr: 1e-5 vs 3e-5 vs 1e-4, arithmetic, learning speed', 'lr', [1e-05, 3e-05, 0.0001], 'arithmetic', LS, TWO_SIDED),
    Q('does group size 8 (instead of 4) improve arithmetic?', 'group_size', [4, 8], 'arithmetic', H, G),
    Q('does mixing calculator tasks into arithmetic training improve held-out arithmetic accuracy?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('Does multi-task RL on arithmetic + calculator beat arithmetic alone?', 'task_mix', [{'arithmetic': 1.0}, {'arithmetic': 0.5, 'calculator': 0.5}], 'arithmetic', H, G),
    Q('is full fine-tuning better than LoRA on the calculator task?', 'lora', [16, 'full'], 'calculator', H, G),
    Q('does KL of 1e-3 change anything on the easy task?', 'kl_coef', [0.0, 0.001], 'learnable', H, TWO_SIDED),
    Q('what happens if I set kl_coef to 0.2 on arithmetic?', 'kl_coef', [0.0, 0.2], 'arithmetic', H, TWO_SIDED),
    Q("what's the effect of lr 5e-5 on the calculator task?", 'lr', [2e-05, 5e-05], 'calculator', H, TWO_SIDED),
    Q('Should I use a larger batch size for the guessing game?', 'batch_groups', [4, 8], 'guess_number', H, G),
    Q('Does a group size of 2 vs 8 matter for learning speed on the easy task?', 'group_size', [2, 8], 'learnable', LS, TWO_SIDED),
    # -- base models (three served) ------------------------------------------------------------
    Q('does a bigger model learn the calculator task faster?', 'base_model', [SMOL, SMOL_360, QWEN_7B], 'calculator', LS, G, served=THREE),
    Q('does model size matter on the guessing game?', 'base_model', [SMOL, SMOL_360, QWEN_7B], 'guess_number', H, TWO_SIDED, served=THREE),
    Q('does 360M beat 135M on arithmetic?', 'base_model', [SMOL, SMOL_360], 'arithmetic', H, G, served=THREE),
    Q('does Qwen 7B learn arithmetic faster than SmolLM2 135M?', 'base_model', [SMOL, QWEN_7B], 'arithmetic', LS, G, served=THREE),
    Q('do smaller models learn the easy task slower?', 'base_model', [QWEN_7B, SMOL, SMOL_360], 'learnable', LS, L, served=THREE),
    Q('do bigger models learn arithmetic faster?', 'base_model', [SMOL, SMOL_360, QWEN_7B], 'arithmetic', LS, G, served=THREE),
    Q('135M vs 360M on arithmetic?', 'base_model', [SMOL, SMOL_360], 'arithmetic', H, TWO_SIDED, served=THREE),
    Q('does scaling the model help tool use?', 'base_model', [SMOL, SMOL_360, QWEN_7B], 'calculator', H, G, served=THREE),
    # -- a factor taken away: on is the control, off (0) the treatment -------------------------
    Q('does removing the KL penalty hurt accuracy on countdown?', 'kl_coef', [0.05, 0.0], 'countdown', H, L),
    Q('does training without a KL penalty hurt on countdown?', 'kl_coef', [0.05, 0.0], 'countdown', H, L),
    Q('does dropping the KL penalty help on countdown?', 'kl_coef', [0.05, 0.0], 'countdown', H, G),
    Q('does turning off weight decay hurt on arithmetic?', 'weight_decay', [0.01, 0.0], 'arithmetic', H, L),
    Q('does removing the KL penalty of 0.1 hurt on countdown?', 'kl_coef', [0.1, 0.0], 'countdown', H, L),
    Q('does a KL penalty of 0.1 help on countdown?', 'kl_coef', [0.0, 0.1], 'countdown', H, G),
    Q('does a batch of 8 groups learn faster than 2 groups on arithmetic?', 'batch_groups', [2, 8], 'arithmetic', LS, G),
    Q('does a lower clip range make training more stable on countdown?', 'clip_eps', [0.2, 0.1], 'countdown', H, TWO_SIDED),
    Q('does tree merging save time?', 'merge', ['none', 'tree'], 'guess_number', COST, L),
    Q('does LoRA save training time on countdown?', 'lora', ['full', 16], 'countdown', COST, L),
    Q('Is there a difference between tree merging and no merging in training speed?', 'merge', ['tree', 'none'], 'guess_number', COST, TWO_SIDED),
    Q('does dropping stale samples help on arithmetic?', 'max_staleness', [1, 0], 'arithmetic', H, G),
    Q('does keeping stale samples hurt on countdown?', 'max_staleness', [1, 4], 'countdown', H, L),
    Q('does training 2x longer help on chain_sum?', 'max_steps', [20, 40], 'chain_sum', H, G),
    Q('does training 3 times longer help on chain_sum?', 'max_steps', [20, 60], 'chain_sum', H, G),
    Q('does training twice as long help on chain_sum?', 'max_steps', [20, 40], 'chain_sum', H, G),
    Q('does scaling rewards by group std matter on arithmetic?', 'scale_rewards', ['none', 'group'], 'arithmetic', H, TWO_SIDED),
    # DAPO's clip-higher is the clip range; a setting said fixed is no factor; sensitivity sweeps
    Q("Does DAPO's clip-higher (0.28) help on chain_sum?", 'clip_eps', [0.2, 0.28], 'chain_sum', H, G),
    Q('Does group size matter when the batch size is fixed on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, TWO_SIDED),
    Q('How sensitive is chain_sum accuracy to the learning rate?', 'lr', [2e-05, 5e-06, 0.0001], 'chain_sum', H, TWO_SIDED),
    Q('Does a KL penalty lower the final training reward on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', TR, L),
    Q('Does a KL penalty reduce held-out accuracy on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, L),
    # one algorithm beside two models is the training they both get
    Q('Does Qwen2.5-7B benefit more from GRPO than SmolLM2-135M on chain_sum?', 'base_model', [SMOL, QWEN_7B], 'chain_sum', H, G, served=THREE),
    Q('Does GRPO help Qwen2.5-7B more than SmolLM2-135M on chain_sum?', 'base_model', [SMOL, QWEN_7B], 'chain_sum', H, G, served=THREE),
    # a multiplier leaves its comparative to the factor's words; a limit at the default
    Q('Does a 4x larger group help on chain_sum?', 'group_size', [4, 16], 'chain_sum', H, G),
    Q('Does capping completions at 32 tokens hurt accuracy on basic arithmetic?', 'max_tokens', [64, 32], 'basic_arithmetic', H, L),
    Q('Does limiting max tokens to 32 hurt accuracy on basic arithmetic?', 'max_tokens', [64, 32], 'basic_arithmetic', H, L),
    Q('Does limiting responses to 16 tokens hurt on basic arithmetic?', 'max_tokens', [32, 16], 'basic_arithmetic', H, L),
    Q('Does raising the group size to 4 help on chain_sum?', 'group_size', [2, 4], 'chain_sum', H, G),
    # a direction about an unmeasured outcome does not set the side; hyphenated efficiency
    Q('Does a lower learning rate reduce reward collapse on chain_sum?', 'lr', [2e-05, 5e-06], 'chain_sum', H, TWO_SIDED),
    Q('Does a KL penalty prevent reward hacking on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, TWO_SIDED),
    Q('Does weight decay reduce overfitting and improve accuracy on chain_sum?', 'weight_decay', [0.0, 0.01], 'chain_sum', H, G),
    Q('Is RLOO more sample-efficient than GRPO on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', LS, G),
    Q('Is GRPO less sample-efficient than RLOO on chain_sum?', 'algorithm', ['rloo', 'grpo'], 'chain_sum', LS, L),
    Q('arithmetic vs arithmetic+calculator', 'task_mix', [ARITH, MIX], 'arithmetic', H, TWO_SIDED, extra={'tasks': ['arithmetic', 'calculator']}),
    # "a mix of A and B": A is mixed in, not the judged task
    Q('does a 50/50 mix of chain_sum and basic_arithmetic beat basic_arithmetic alone on basic_arithmetic?', 'task_mix', [{'basic_arithmetic': 1.0}, {'basic_arithmetic': 0.5, 'chain_sum': 0.5}], 'basic_arithmetic', H, G),
    # "pass@1" is the outcome's name, not a level
    Q('does training with 16 samples per prompt improve pass@1 on countdown?', 'group_size', [4, 16], 'countdown', H, G),
    Q('does a group of 8 improve pass@8 on countdown?', 'group_size', [4, 8], 'countdown', H, G),
    # a directional "A vs B" asks what A does against B: B is the control (neither is the default)
    Q('does max_completion_length 256 vs 128 help on countdown?', 'max_tokens', [128, 256], 'countdown', H, G),
    Q('does lr 1e-4 vs 1e-5 help on arithmetic?', 'lr', [1e-5, 1e-4], 'arithmetic', H, G),
    Q('does a KL penalty of 0.5 vs 0.1 hurt on arithmetic?', 'kl_coef', [0.1, 0.5], 'arithmetic', H, L),
    Q('Can I get away with a group size of 2 on arithmetic?', 'group_size', [4, 2], 'arithmetic', H, NI, 0.05),
    # "from X to Y": X is the control
    Q('does moving the group size to 16 from 8 help chain_sum?', 'group_size', [8, 16], 'chain_sum', H, G),
    Q('does changing kl from 0.1 to 0 help countdown?', 'kl_coef', [0.1, 0.0], 'countdown', H, G),
    Q('does changing lr from 1e-4 to 2e-5 hurt chain_sum?', 'lr', [1e-4, 2e-5], 'chain_sum', H, L),
    Q('does going from 8 to 4 groups per step hurt chain_sum?', 'batch_groups', [8, 4], 'chain_sum', H, L),
    Q('does switching to full fine-tuning from LoRA rank 8 help chain_sum?', 'lora', [8, 'full'], 'chain_sum', H, G),
    # "than no X": off is the control; more removal words; LoRA taken away
    Q('is weight decay 0.1 better than no weight decay for arithmetic?', 'weight_decay', [0.0, 0.1], 'arithmetic', H, G),
    Q('does a KL penalty hurt countdown compared to no KL?', 'kl_coef', [0.0, 0.05], 'countdown', H, L),
    Q('does not using a KL penalty hurt arithmetic?', 'kl_coef', [0.05, 0.0], 'arithmetic', H, L),
    Q('does skipping the KL term hurt countdown?', 'kl_coef', [0.05, 0.0], 'countdown', H, L),
    Q('does training without LoRA help chain_sum?', 'lora', [16, 'full'], 'chain_sum', H, G),
    Q('does not using LoRA help chain_sum?', 'lora', [16, 'full'], 'chain_sum', H, G),
    # name=value levels; a lowering multiplier divides; a percent on a real setting
    Q('Is kl_coef=0 better than kl_coef=0.05 for letter counting?', 'kl_coef', [0.05, 0.0], 'letter_counting', H, G),
    Q('is lr=5e-5 better than lr=1e-4 on chain_sum?', 'lr', [1e-4, 5e-5], 'chain_sum', H, G),
    Q('is group_size=8 better than group_size=16 on chain_sum?', 'group_size', [16, 8], 'chain_sum', H, G),
    Q('does lowering lr by 10x hurt chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, L),
    Q('does reducing the learning rate by 10x hurt chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, L),
    Q('does a KL penalty of 5% help chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, G),
    # gradient clipping is max_grad_norm, not the PPO clip
    Q('does grad clipping at 0.5 help chain_sum?', 'max_grad_norm', [1.0, 0.5], 'chain_sum', H, G),
    Q('does clipping gradients to 0.5 help chain_sum?', 'max_grad_norm', [1.0, 0.5], 'chain_sum', H, G),
    Q('does grad clipping 0.1 vs 1.0 matter on arithmetic?', 'max_grad_norm', [1.0, 0.1], 'arithmetic', H, TWO_SIDED),
    # "on parallel" is no "on par"; underperform is less; enough is non-inferiority
    Q('does a larger batch (8 groups) help on parallel function calling?', 'batch_groups', [4, 8], 'bfcl', H, G),
    Q('does REINFORCE underperform GRPO on basic arithmetic?', 'algorithm', ['grpo', 'reinforce'], 'basic_arithmetic', H, L),
    Q('is a group size of 2 enough on chain_sum?', 'group_size', [4, 2], 'chain_sum', H, NI, 0.05),
    # "in fewer steps" is learning speed; on-policy is staleness 0
    Q('does lr 1e-4 learn chain_sum in fewer steps than 2e-5?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G),
    Q('which reaches a reward of 0.5 in fewer steps on chain_sum: lr 1e-5 or lr 5e-5?', 'lr', [1e-5, 5e-5], 'chain_sum', LS, TWO_SIDED, extra={'threshold': 0.5}),
    Q('does max staleness 4 hurt compared to fully on-policy training on chain_sum?', 'max_staleness', [0, 4], 'chain_sum', H, L),
    # a misspelt task is the closest shipped one, said; a small a:b ratio beside "mix"
    Q('does kl coef of 1e-2 hurt chan_sum?', 'kl_coef', [0.0, 0.01], 'chain_sum', H, L),
    Q('does lr 3e-5 help letter countin?', 'lr', [2e-5, 3e-5], 'letter_counting', H, G),
    Q('does a 3:1 mix of chain_sum to basic_arithmetic help chain_sum?', 'task_mix', [CHAIN, {'chain_sum': 0.75, 'basic_arithmetic': 0.25}], 'chain_sum', H, G),
    # "slow down training" is more cost; "how fast … reach 80%" is steps to a threshold
    Q('does a larger group slow down training on chain_sum?', 'group_size', [4, 8], 'chain_sum', COST, G),
    Q('how fast does chain_sum reach 80% training reward with group size 8 vs 4?', 'group_size', [4, 8], 'chain_sum', LS, TWO_SIDED, extra={'threshold': 0.8}),
    # "the default X" is a level; removing std normalization; effects and margins are no levels
    Q('is the default lr better than 1e-4 on chain_sum?', 'lr', [1e-4, 2e-5], 'chain_sum', H, G),
    Q('does the default group size beat 8 on chain_sum?', 'group_size', [8, 4], 'chain_sum', H, G),
    Q('does removing std normalization hurt chain_sum?', 'scale_rewards', ['group', 'none'], 'chain_sum', H, L),
    Q('does turning off std normalization help countdown?', 'scale_rewards', ['group', 'none'], 'countdown', H, G),
    Q('is group size 8 at least 5 points better than 4 on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'min_effect': 0.05}),
    Q('is lr 5e-5 better than 2e-5 on chain_sum by at least 0.05?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'min_effect': 0.05}),
    Q('is lr 1e-5 as good as 2e-5 on chain_sum, margin 0.03?', 'lr', [2e-5, 1e-5], 'chain_sum', H, EQ, 0.03),
    Q('is rloo within 1 point of grpo on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, EQ, 0.01),
    Q('does group size make no difference on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, EQ, 0.05),
    Q('does allowing 4 steps of staleness hurt countdown?', 'max_staleness', [1, 4], 'countdown', H, L, extra={'steps': None}),
    # clipping turned off; a verb that moves the factor is no direction; "accuracy higher";
    # "at equal compute" is a constraint, not the outcome; a level straight after its task
    # "clip 0.3"; greedy sampling is temperature 0; two mixes compared with each other
    # "replacing A with B": A the control; "necessary": does taking it away hurt; "too high"
    Q('does replacing RLOO with GRPO hurt chain_sum?', 'algorithm', ['rloo', 'grpo'], 'chain_sum', H, L),
    Q('is a KL penalty necessary for chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, L),
    Q('is LoRA necessary on chain_sum?', 'lora', [16, 'full'], 'chain_sum', H, L),
    Q('is a group size of 8 necessary on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, TWO_SIDED),
    Q('is lr 1e-4 too high for chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, L),
    Q('does a higher lr help on the higher/lower game?', 'lr', [2e-5, 1e-4], 'guess_number', H, G),
    # the best value within a range is a sweep across it
    # a margin named beside a difference test is its smallest effect
    Q('does lr 1e-4 vs 2e-5 matter on chain_sum, margin 2 points?', 'lr', [2e-5, 1e-4], 'chain_sum', H, TWO_SIDED, extra={'min_effect': 0.02}),
    Q('what lr works best for countdown between 1e-5 and 1e-4?', 'lr', [1e-5, 3e-5, 1e-4], 'countdown', H, TWO_SIDED),
    Q('which group size between 2 and 8 is best on chain_sum?', 'group_size', [4, 2, 8], 'chain_sum', H, TWO_SIDED),
    Q('is clip 0.3 better than clip 0.2 on chain_sum?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G),
    Q('does greedy sampling during training hurt chain_sum?', 'temperature', [1.0, 0.0], 'chain_sum', H, L),
    Q('is a 90/10 split of chain_sum and basic_arithmetic better than 50/50 on chain_sum?', 'task_mix', [CHAIN_MIX, {'chain_sum': 0.9, 'basic_arithmetic': 0.1}], 'chain_sum', H, G),
    Q('does turning off gradient clipping hurt chain_sum?', 'max_grad_norm', [1.0, 1e6], 'chain_sum', H, L),
    Q('does cutting the learning rate in half help chain_sum?', 'lr', [2e-5, 1e-5], 'chain_sum', H, G),
    Q('is chain_sum accuracy higher with lr 4e-5?', 'lr', [2e-5, 4e-5], 'chain_sum', H, G),
    Q('does group size 8 beat group size 4 at equal compute on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('does group size 8 help countdown tiny?', 'group_size', [4, 8], 'countdown', H, G, extra={'task_levels': {'countdown': 'tiny'}}),
    Q('does group size 8 help countdown, tiny level?', 'group_size', [4, 8], 'countdown', H, G, extra={'task_levels': {'countdown': 'tiny'}}),
    Q('does a higher lr help bfcl parallel_multiple?', 'lr', [2e-5, 1e-4], 'bfcl', H, G, extra={'task_levels': {'bfcl': 'parallel_multiple'}}),
    # "the batch", more tokens, a completion budget and twice as long name their settings
    Q('does doubling the batch help?', 'batch_groups', [4, 8], 'chain_sum', H, G),
    Q('do more tokens help?', 'max_tokens', [32, 64], 'chain_sum', H, G),
    Q('does a longer completion budget help?', 'max_tokens', [32, 64], 'chain_sum', H, G),
    Q('does training for twice as long help?', 'max_steps', [20, 40], 'chain_sum', H, G),
    Q('does a larger group use more tokens on chain_sum?', 'group_size', [4, 8], 'chain_sum', COST, G),
    # two unquoted values of a one-word PARAM: "beat" sets the control
    Q('does the search tool beat the calculator tool?', 'workflow:tool', ['calculator', 'search'], 'workflow', H, G, params=AGENT),
    Q('does the default tool beat the search tool?', 'workflow:tool', ['search', 'calculator'], 'workflow', H, G, params=AGENT),
    # the time needed to reach a reward is learning speed to that threshold, not cost
    Q('does group size 8 reduce the training time needed to hit 0.7?', 'group_size', [4, 8], 'chain_sum', LS, G, extra={'threshold': 0.7}),
    Q('does a KL penalty increase the steps needed to reach 0.8 on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', LS, L, extra={'threshold': 0.8}),
    # tenfold, ten-fold, 10-fold, by a factor of, divided by
    Q('does a ten-fold higher learning rate help?', 'lr', [2e-5, 2e-4], 'chain_sum', H, G),
    Q('does a 10-fold higher lr help?', 'lr', [2e-5, 2e-4], 'chain_sum', H, G),
    Q('does a tenfold lower learning rate help?', 'lr', [2e-5, 2e-6], 'chain_sum', H, G),
    Q('does dividing the lr by ten help chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, G),
    Q('does reducing the lr by a factor of 10 help chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, G),
    # powers of ten written out
    Q('does lr 1 x 10^-5 help?', 'lr', [2e-5, 1e-5], 'chain_sum', H, G),
    Q('does lr 1×10^-5 help?', 'lr', [2e-5, 1e-5], 'chain_sum', H, G),
    Q('is lr 3 x 10^-5 better than 1e-5 on chain_sum?', 'lr', [1e-5, 3e-5], 'chain_sum', H, G),
    # held: a PARAM beside a PARAM or a run setting, LoRA's rank, a setting at its default
    Q('does few_shot=3 help at temperature 0.7?', 'workflow:few_shot', [0, 3], 'workflow', H, G, extra={'held': {'workflow:temperature': 0.7}}, params=AGENT),
    Q('does group size 8 help at few_shot=3?', 'group_size', [4, 8], 'workflow', H, G, extra={'held': {'workflow:few_shot': 3}}, params=AGENT),
    Q('does lr 1e-4 help with 3 retries?', 'lr', [2e-5, 1e-4], 'workflow', H, G, extra={'held': {'workflow:retries': 3}}, params=AGENT),
    Q('does lr 1e-4 help with LoRA rank 8?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G, extra={'held': {'lora': 8}}),
    Q('does RLOO beat GRPO with LoRA on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'held': {'lora': 16}}),
    Q('does group size 8 help at the default temperature?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'held': {'temperature': 1.0}}),
    # an amount added or taken away ("by 4"), not a level; multiplying by a count
    Q('does increasing the group size by 4 help?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('does cutting the group size by 2 hurt chain_sum?', 'group_size', [4, 2], 'chain_sum', H, L),
    Q('does multiplying the lr by 10 help?', 'lr', [2e-5, 2e-4], 'chain_sum', H, G),
    # a misspelt setting's name; numbers in words for a PARAM count and a decimal
    Q('does grop size 8 help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('Does a higher temprature help on countdown?', 'temperature', [1.0, 1.2], 'countdown', H, G),
    Q('does the learnign rate matter for chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('does the weigth decay matter?', 'weight_decay', [0.0, 0.01], 'chain_sum', H, TWO_SIDED),
    Q('does using five examples instead of two help my agent?', 'workflow:few_shot', [2, 5], 'workflow', H, G, params=AGENT),
    Q('is a kl penalty of zero point one too strong for chain_sum?', 'kl_coef', [0.0, 0.1], 'chain_sum', H, L),
    Q('does a learning rate of 10 to the minus 5 help chain_sum?', 'lr', [2e-5, 1e-5], 'chain_sum', H, G),
    Q('does lr three times ten to the minus five help chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G),
    Q('does a staleness of zero help chain_sum?', 'max_staleness', [1, 0], 'chain_sum', H, G),
    Q('does RLOO match GRPO to within two points on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, EQ, 0.02, extra={'effect_units': 'points'}),
    Q('does a learning rate of one in a million help chain_sum?', 'lr', [2e-5, 1e-6], 'chain_sum', H, G),
    Q('is an lr of 1 in 10,000 better than 2e-5 on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    # "not matter", "keep accuracy the same": equivalence; "reach 0.9 earlier": speed
    Q('does the lr not matter on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, EQ, 0.05),
    Q('does a KL penalty keep accuracy the same on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, EQ, 0.05),
    Q('does lr 1e-4 hit 0.9 training reward earlier on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G, extra={'threshold': 0.9}),
    # points, margins and thresholds on a workflow scored beyond 0-1 (a rubric of 0-10):
    # points wait on the rewards' range, a scale the question states fixes it, a threshold
    # above 1 is in the workflow's own units
    Q('does the system prompt "You are an expert science teacher." improve my agent\'s score by at least 1 point?', 'workflow:system_prompt', ['You are a helpful writing assistant.', 'You are an expert science teacher.'], 'workflow', H, G, extra={'min_effect': 0.01, 'effect_units': 'points'}, params=RUBRIC),
    Q('is the system prompt "You are an expert science teacher." within 0.5 points of the default for my agent?', 'workflow:system_prompt', ['You are a helpful writing assistant.', 'You are an expert science teacher.'], 'workflow', H, EQ, 0.005, extra={'effect_units': 'points'}, params=RUBRIC),
    Q('is the system prompt "You are an expert science teacher." within 1 point on the 0-10 rubric of the default for my agent?', 'workflow:system_prompt', ['You are a helpful writing assistant.', 'You are an expert science teacher.'], 'workflow', H, EQ, 1.0, extra={'effect_units': None}, params=RUBRIC),
    # a margin named as a bare number is the question's, even where it equals the default
    Q('is RLOO as good as GRPO within 0.05?', 'algorithm', ['grpo', 'rloo'], 'workflow', H, EQ, 0.05, extra={'margin_named': True, 'effect_units': None}, params=RUBRIC),
    Q('does lr 5e-5 improve my agent\'s score by 10%?', 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'min_effect': 0.1, 'effect_units': 'percent'}, params=RUBRIC),
    Q('does my agent reach a training reward of 8 faster with lr 1e-4?', 'lr', [2e-5, 1e-4], 'workflow', LS, G, extra={'threshold': 8.0}, params=RUBRIC),
    Q('does my agent reach a score of 7 within 20 steps with lr 5e-5?', 'lr', [2e-5, 5e-5], 'workflow', LS, G, extra={'threshold': 7.0, 'steps': 20}, params=RUBRIC),
    Q('does my agent reach a score of 80% within 20 steps with lr 5e-5?', 'lr', [2e-5, 5e-5], 'workflow', LS, G, extra={'threshold': 0.8}, params=RUBRIC),
    Q('does lr 1e-4 reach 80 faster on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G, extra={'threshold': 0.8}),
    # "need more than" the default is greater; "harder to learn" is less; symbols compare
    Q('does my agent need more than 4 turns?', 'workflow:max_turns', [4, 8], 'workflow', H, G, params=TOOL_AGENT),
    Q('does chain_sum need a larger group?', 'group_size', [4, 8], 'chain_sum', H, G),
    # verl's "clip ratio" is the PPO clip; a mix's tasks are no more judged than each other
    Q('does a larger clip ratio help?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G),
    Q('does a clip ratio of 0.1 vs 0.2 matter on chain_sum?', 'clip_eps', [0.2, 0.1], 'chain_sum', H, TWO_SIDED),
    Q('does dropping zero-advantage groups help chain_sum?', 'zero_variance_groups', ['keep', 'drop'], 'chain_sum', H, G),
    # the response length a setting moves is an outcome not measured, not max_tokens
    Q('does the learning rate affect response length?', 'lr', [2e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('does a KL penalty reduce the response length on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', H, TWO_SIDED),
    # "the base model" set against is the untrained model, reported beside every study
    Q('does RLOO outperform GRPO relative to the base model?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G),
    Q('is the improvement from RLOO over GRPO real on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    # a bound before the one value named: that value is the control, the treatment beyond it
    Q('does a group size of more than 4 help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('does the guessing game need more than 4 turns?', 'max_turns', [4, 8], 'guess_number', H, G),
    Q('does increasing lr beyond 1e-4 hurt chain_sum?', 'lr', [1e-4, 2e-4], 'chain_sum', H, L),
    Q('is a learning rate below 1e-5 too small for chain_sum?', 'lr', [1e-5, 5e-6], 'chain_sum', H, L),
    Q('does GRPO beat vanilla policy gradient on chain_sum?', 'algorithm', ['reinforce', 'grpo'], 'chain_sum', H, G),
    Q('does a mix of chain_sum and countdown help countdown?', 'task_mix', [{'countdown': 1.0}, {'countdown': 0.5, 'chain_sum': 0.5}], 'countdown', H, G),
    Q('does countdown need a lower learning rate?', 'lr', [2e-5, 5e-6], 'countdown', H, G),
    Q('does the learning rate need to be lower for countdown?', 'lr', [2e-5, 5e-6], 'countdown', H, G),
    Q('does min_word_len 5 make my agent\'s task harder to learn?', 'workflow:min_word_len', [3, 5], 'workflow', H, L, params={'min_word_len': 3}),
    Q('does min_word_len 2 make my agent\'s task easier to learn?', 'workflow:min_word_len', [3, 2], 'workflow', H, G, params={'min_word_len': 3}),
    Q('does rloo > grpo on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G),
    Q('is rloo < grpo on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, L),
    Q('does rloo >= grpo on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, NI, 0.05),
    Q('is rloo ≥ grpo on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, NI, 0.05),
    # a tool's one-word values unquoted, the default among them: set against each other
    Q('does using the calculator tool instead of search improve my agent\'s accuracy?', 'workflow:tool', ['search', 'calculator'], 'workflow', H, G, params=TOOL_AGENT),
    Q('is search better than calculator for my agent?', 'workflow:tool', ['calculator', 'search'], 'workflow', H, G, params=TOOL_AGENT),
    Q('does search vs calculator matter for my agent?', 'workflow:tool', ['search', 'calculator'], 'workflow', H, TWO_SIDED, params=TOOL_AGENT),
    Q('does switching the tool from search to calculator help?', 'workflow:tool', ['search', 'calculator'], 'workflow', H, G, params=TOOL_AGENT),
    # negations: "not hurt" is an equivalence test; "not beat" the positive test, said negated
    Q('does a smaller lr not hurt chain_sum?', 'lr', [2e-5, 5e-6], 'chain_sum', H, NI, 0.05),
    Q('does RLOO not beat GRPO on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'negated': True}),
    Q('does the clip range not help?', 'clip_eps', [0.2, 0.1], 'chain_sum', H, G, extra={'negated': True}),
    Q('does a KL penalty hurt or not on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, TWO_SIDED, extra={'negated': False}),
    Q('whether or not a KL penalty helps chain_sum', 'kl_coef', [0.0, 0.05], 'chain_sum', H, TWO_SIDED, extra={'negated': False}),
    Q('does not using a KL penalty hurt chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, L, extra={'negated': False}),
    # the batch a question fixes: a total per step, never a level of the group size
    Q('does 4 groups of 16 beat 16 groups of 4 on chain_sum?', 'group_size', [4, 16], 'chain_sum', H, G, extra={'episodes_per_step': 64}),
    Q('do 16 groups of 4 beat 4 groups of 16 on chain_sum?', 'group_size', [16, 4], 'chain_sum', H, G, extra={'episodes_per_step': 64}),
    Q('is 16 prompts x 4 samples better than 4 prompts x 16 samples on countdown?', 'group_size', [16, 4], 'countdown', H, G, extra={'episodes_per_step': 64}),
    Q('is it better to sample 16 completions for 4 prompts or 4 completions for 16 prompts on chain_sum?', 'group_size', [4, 16], 'chain_sum', H, TWO_SIDED, extra={'episodes_per_step': 64}),
    Q('does 8 groups of 4 beat 4 groups of 4 on chain_sum?', 'batch_groups', [4, 8], 'chain_sum', H, G, extra={'held': {'group_size': 4}, 'episodes_per_step': None}),
    Q('at a fixed batch of 64 episodes, is group size 16 better than group size 4 on chain_sum?', 'group_size', [4, 16], 'chain_sum', H, G, extra={'episodes_per_step': 64}),
    Q('does group size 8 help chain_sum at 32 episodes per step?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'episodes_per_step': 32}),
    Q('does lr 1e-4 help chain_sum with a batch of 32 episodes?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G, extra={'episodes_per_step': 32}),
    Q('with 64 samples per step, do more samples per prompt help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'episodes_per_step': 64}),
    # a moved setting against the one value named: that value is the control
    Q('does a weaker KL penalty help chain_sum compared with kl 0.1?', 'kl_coef', [0.1, 0.05], 'chain_sum', H, G),
    Q('does a higher lr help chain_sum compared with lr 1e-5?', 'lr', [1e-5, 2e-5], 'chain_sum', H, G),
    Q('does a smaller group size help chain_sum compared to group size 8?', 'group_size', [8, 4], 'chain_sum', H, G),
    Q('does a larger group size help chain_sum relative to 4?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('does lr 1e-4 help on math?', 'lr', [2e-5, 1e-4], 'arithmetic', H, G),
    # probe 4: a threshold written after "to"/"until" with its reward noun is no level
    Q('Does lr 5e-5 get chain_sum to 80% reward in fewer steps than 2e-5?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'threshold': 0.8}),
    Q('2e-5 vs 1e-4 lr: steps to 0.7 reward on letter counting', 'lr', [2e-5, 1e-4], 'letter_counting', LS, TWO_SIDED, extra={'threshold': 0.7}),
    Q('With lr 1e-4, how many steps until 0.6 reward on chain_sum, RLOO vs GRPO?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, TWO_SIDED, extra={'threshold': 0.6, 'held': {'lr': 1e-4}}),
    # a LoRA rank glued to its r
    Q('does lora r8 hurt bfcl', 'lora', ['full', 8], 'bfcl', H, L),
    Q('does lora r4 help countdown?', 'lora', ['full', 4], 'countdown', H, G),
    Q('does LoRA r64 beat r16 on chain_sum?', 'lora', [16, 64], 'chain_sum', H, G),
    # the most a treatment may lose is a non-inferiority margin; a percent cheaper an effect
    Q('Does switching to LoRA r=8 lose no more than 2 points on chain_sum?', 'lora', ['full', 8], 'chain_sum', H, NI, 0.02),
    Q('Does lr 1e-4 lose no more than 0.02 accuracy on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, NI, 0.02),
    Q('Is LoRA r=16 at least 10% cheaper than full fine-tuning on countdown?', 'lora', ['full', 16], 'countdown', COST, L, extra={'min_effect': 0.1}),
    # scaling down "by" a multiple, and an order of magnitude
    Q('does cutting the lr by an order of magnitude hurt letter counting?', 'lr', [2e-5, 2e-6], 'letter_counting', H, L),
    Q('does dropping the lr by 10x hurt chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, L),
    Q('does raising the lr by an order of magnitude help countdown?', 'lr', [2e-5, 2e-4], 'countdown', H, G),
    # "fewer steps" is the outcome's comparative, not a smaller group size
    Q('Does group size 8 reach 90% training reward in fewer steps than group size 4 on the easy task?', 'group_size', [4, 8], 'learnable', LS, G, extra={'threshold': 0.9}),
    Q('Does group size 8 learn in fewer steps than group size 4 on chain_sum?', 'group_size', [4, 8], 'chain_sum', LS, G),
    Q('does a larger group size learn in fewer steps on chain_sum?', 'group_size', [4, 8], 'chain_sum', LS, G),
    # the default itself "too small": against the level beyond it, does that do better
    Q("Is GRPO's default group size of 4 too small for countdown?", 'group_size', [4, 8], 'countdown', H, G),
    Q('Is the default lr of 2e-5 too small for chain_sum?', 'lr', [2e-5, 4e-5], 'chain_sum', H, G),
    Q('Is batch_groups 4 too few for countdown?', 'batch_groups', [4, 8], 'countdown', H, G),
    Q('is the default group size too small for countdown?', 'group_size', [4, 8], 'countdown', H, G),
    # directions: the outcome named after "higher", a symbol between two levels
    Q('Does RLOO achieve higher held-out accuracy than GRPO on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G),
    Q('Does RLOO get higher pass@1 on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('lr 3e-5 > 2e-5 on chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G),
    Q('lr 1e-4 >= 2e-5 on letter counting?', 'lr', [2e-5, 1e-4], 'letter_counting', H, NI, 0.05),
    # outcomes: the area under the reward curve, the reward at the end, "as fast to learn as"
    Q('does rloo improve the area under the reward curve on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, G),
    Q('does lr 5e-5 increase the AUC of the training reward on countdown?', 'lr', [2e-5, 5e-5], 'countdown', LS, G),
    Q('does kl 0.05 improve mean reward at the end of training on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', TR, G),
    Q('Is RLOO as fast to learn as GRPO on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', LS, EQ, 0.05),
    Q('Does a KL of 0.05 keep final training reward the same on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', TR, EQ, 0.05),
    # RLOO spelt out; a ratio written "3 to 1"
    Q('Does REINFORCE with a leave-one-out baseline beat plain REINFORCE on chain_sum?', 'algorithm', ['reinforce', 'rloo'], 'chain_sum', H, G),
    Q('Does a 3 to 1 mix of chain_sum and letter_counting help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'letter_counting': 0.25}], 'chain_sum', H, G),
    # abbreviations and paraphrases: ε, wd=, T=, bs, "256 tokens instead of 128",
    # all-correct and all-wrong groups
    Q('does ε=0.3 beat ε=0.2 on chain_sum?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G),
    Q('is wd=0.01 better than none for letter counting?', 'weight_decay', [0.0, 0.01], 'letter_counting', H, G),
    Q('T=0.5 vs T=1 on letter counting: which learns faster?', 'temperature', [1.0, 0.5], 'letter_counting', LS, TWO_SIDED),
    Q('bs 8 vs bs 4 on mastermind wall time', 'batch_groups', [4, 8], 'mastermind', COST, TWO_SIDED),
    Q('Does giving the model 256 tokens instead of 128 help countdown?', 'max_tokens', [128, 256], 'countdown', H, G),
    Q('Does training on 256 tokens instead of 64 per completion help letter counting?', 'max_tokens', [64, 256], 'letter_counting', H, G),
    Q('Does dropping all-correct and all-wrong groups help learning speed on the easy task?', 'zero_variance_groups', ['keep', 'drop'], 'learnable', LS, G),
    # a context before the question holds its settings; "for RLOO" holds the algorithm
    # beside a setting on by default; "at step 20" fixes the run's length
    Q('In our setting (LoRA rank 16, lr 1e-4), does RLOO outperform GRPO on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, G, extra={'held': {'lr': 1e-4, 'lora': 16}}),
    Q('With LoRA rank 16, lr 1e-4, does RLOO outperform GRPO on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, G, extra={'held': {'lr': 1e-4, 'lora': 16}}),
    Q('Does std normalization matter for RLOO on chain_sum?', 'scale_rewards', ['none', 'group'], 'chain_sum', H, TWO_SIDED, extra={'held': {'algorithm': 'rloo'}}),
    Q('How does the training reward at step 20 compare between lr 1e-5 and lr 1e-4 on chain_sum?', 'lr', [1e-5, 1e-4], 'chain_sum', TR, TWO_SIDED, extra={'steps': 20}),
    # on-policy and synchronous are staleness 0, held after "when"; a level word held after
    # "destabilize"; a saving "without hurting accuracy" is judged on accuracy
    Q('Does PPO clipping matter at all when fully on-policy on chain_sum?', 'clip_eps', [0.2, 0.1], 'chain_sum', H, TWO_SIDED, extra={'held': {'max_staleness': 0}}),
    Q('does a kl of 0.05 help when training fully on-policy?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, G, extra={'held': {'max_staleness': 0}}),
    Q('Does fully async training (staleness 8) hurt countdown compared with synchronous training?', 'max_staleness', [0, 8], 'countdown', H, L),
    Q('Does increasing the clip range to 0.4 destabilize RLOO on chain_sum?', 'clip_eps', [0.2, 0.4], 'chain_sum', H, L, extra={'held': {'algorithm': 'rloo'}}),
    Q('Does capping completions at 128 tokens cut cost without hurting accuracy on countdown?', 'max_tokens', [256, 128], 'countdown', H, NI, 0.05),
    Q('does LoRA save compute without losing accuracy on chain_sum?', 'lora', ['full', 16], 'chain_sum', H, NI, 0.05),
    # task mixes: the task "single-task on" names is judged; "which mix is best" sweeps
    Q('Is multi-task training on chain_sum, basic_arithmetic and letter_counting better than single-task on letter_counting?', 'task_mix', [{'letter_counting': 1.0}, {'letter_counting': 0.3333, 'chain_sum': 0.3333, 'basic_arithmetic': 0.3333}], 'letter_counting', H, G),
    Q('which mix of chain_sum and countdown is best for countdown?', 'task_mix', [{'countdown': 1.0}, {'countdown': 0.75, 'chain_sum': 0.25}, {'countdown': 0.5, 'chain_sum': 0.5}], 'countdown', H, TWO_SIDED),
    # a user's workflow (the workflow probe): "one"/"a single"/"zero-shot" are levels of a
    # count; "by 2" and "adding 2 to" add; an odd count's sweep; a bare "by at least 2" and
    # a stated scale are no levels; a negative threshold; a PARAM named *_steps; a penalty cut
    Q('does one retry instead of two hurt my agent?', 'workflow:retries', [2, 1], 'workflow', H, L, params=RETRY),
    Q('is zero-shot as good as 2 examples for my agent?', 'workflow:n_examples', [2, 0], 'workflow', H, EQ, 0.05, params=SHOTS),
    Q('does increasing top k by 2 help my agent?', 'workflow:top_k', [3, 5], 'workflow', H, G, params=RAG),
    Q('does adding 2 to top_k help my agent?', 'workflow:top_k', [3, 5], 'workflow', H, G, params=RAG),
    Q('does adding 4 to the group size help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('which top_k is best for my agent?', 'workflow:top_k', [3, 1, 6], 'workflow', H, TWO_SIDED, params=RAG),
    Q("does a KL of 0.05 lower my agent's score by at least 2?", 'kl_coef', [0.0, 0.05], 'workflow', H, L, extra={'min_effect': 2.0}, params=RUBRIC),
    Q("does lr 5e-5 improve my agent's score by at least 2?", 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'min_effect': 2.0}, params=RUBRIC),
    Q("does lr 5e-5 improve my agent's score by at least 0.5 out of 10?", 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'min_effect': 0.5}, params=RUBRIC),
    Q("does lr 5e-5 improve my agent's score by at least 0.5 on the 10-point scale?", 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'min_effect': 0.5}, params=RUBRIC),
    Q('does my agent reach a training reward of -0.2 within 20 steps at lr 5e-5?', 'lr', [2e-5, 5e-5], 'workflow', LS, G, extra={'threshold': -0.2}, params=PENALTY),
    Q("does lr 5e-5 improve my agent's reward by at least 0.1 (rewards run from -1 to 0)?", 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'min_effect': 0.1}, params=PENALTY),
    Q('does raising max_steps to 10 help my agent?', 'workflow:max_steps', [5, 10], 'workflow', H, G, params=LOOP),
    Q('does a word_budget of 20 cut the penalty?', 'workflow:word_budget', [12, 20], 'workflow', H, G, params=PENALTY),
    Q("does lr 5e-5 make my agent's reward less negative?", 'lr', [2e-5, 5e-5], 'workflow', H, G, params=PENALTY),
    Q('does adding "Call a tool first." to the system prompt help my agent?', 'workflow:system_prompt', ['Use the tool.', 'Use the tool. Call a tool first.'], 'workflow', H, G, params=TOOLS),
    Q('does lr 1e-4 improve accuracy by at least 5 on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G, extra={'min_effect': 0.05}),
    # the level after "as good as" is the control, even when it is the setting off
    Q('Is KL 0.02 at least as good as no KL on basic arithmetic?', 'kl_coef', [0.0, 0.02], 'basic_arithmetic', H, NI, 0.05),
    # numbers about how the study is run or what was already seen are no levels (probe 5)
    Q('At 95% confidence, does a KL of 0.05 hurt letter counting?', 'kl_coef', [0.0, 0.05], 'letter_counting', H, L),
    Q('Does doubling the group size improve chain_sum accuracy by at least 3 points at 90% confidence?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'min_effect': 0.03}),
    Q('Is KL 0.01 equivalent to KL 0 on chain_sum within 2 points, 95% CI?', 'kl_coef', [0.0, 0.01], 'chain_sum', H, EQ, 0.02),
    Q('I have 1 GPU for an afternoon: does batch_groups 8 help chain_sum?', 'batch_groups', [4, 8], 'chain_sum', H, G),
    Q('Does group size 8 help chain_sum? Use a 100-step budget.', 'group_size', [4, 8], 'chain_sum', H, G, extra={'steps': 100}),
    Q('Our runs on chain_sum plateau at 0.6 reward. Would lr 5e-5 do better?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('Our chain_sum accuracy is 0.68 after 20 steps. Does lr 5e-5 beat that?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'steps': 20}),
    Q('After 20 steps our held-out accuracy is 27%. Would group size 8 help chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q("I'm seeing reward collapse on countdown after step 15. Would a KL penalty of 0.05 fix it?", 'kl_coef', [0.0, 0.05], 'countdown', H, TWO_SIDED, extra={'steps': None}),
    Q('does temperature 0.7 help countdown in 2 hours?', 'temperature', [1.0, 0.7], 'countdown', H, G),
    Q('Does group size 8 help chain_sum in under 30 minutes?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('In 2 hours of GPU time, can we tell whether lr 5e-5 beats 2e-5 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('given 3 runs per arm, does temperature 0.7 help countdown?', 'temperature', [1.0, 0.7], 'countdown', H, G),
    Q('With a budget of 4 GPU-hours, which learning rate is best for countdown: 1e-5, 3e-5 or 1e-4?', 'lr', [1e-5, 3e-5, 1e-4], 'countdown', H, TWO_SIDED),
    Q('Does lr 1e-4 beat 1e-5 on chain_sum with a minimum detectable effect of 3 points?', 'lr', [1e-5, 1e-4], 'chain_sum', H, G, extra={'min_effect': 0.03}),
    Q('does group size 8 help chain_sum with an effect size of at least 0.1?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'min_effect': 0.1}),
    Q('Is max_staleness 2 non-inferior to 1 on chain_sum with a 0.03 margin?', 'max_staleness', [1, 2], 'chain_sum', H, NI, 0.03),
    Q('Does lowering the lr to 1e-5 cost more than 2 points of accuracy on countdown?', 'lr', [2e-5, 1e-5], 'countdown', H, L, extra={'min_effect': 0.02}),
    Q('Is lr 1e-4 better than 2e-5 on countdown at the 5% significance level?', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('With alpha = 0.05 and 4 seeds, does group size 8 help countdown?', 'group_size', [4, 8], 'countdown', H, G),
    Q('We see training collapse around step 30 on countdown with lr 1e-4. Would 5e-5 be more stable?', 'lr', [1e-4, 5e-5], 'countdown', H, TWO_SIDED),
    # synonyms read the right way round; a method cited as a source is no factor
    Q('Does filtering zero-variance groups help countdown?', 'zero_variance_groups', ['keep', 'drop'], 'countdown', H, G),
    Q('does scale_rewards=False help countdown?', 'scale_rewards', ['group', 'none'], 'countdown', H, G),
    Q('Does removing the KL term (as in DAPO) hurt chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, L),
    Q('DAPO suggests clip-higher with 0.28. Does it help on chain_sum?', 'clip_eps', [0.2, 0.28], 'chain_sum', H, G),
    Q('Does lr 1e-4 help on the knights and knaves puzzles?', 'lr', [2e-5, 1e-4], 'knights_knaves', H, G),
    Q('REINFORCE++ vs GRPO on countdown?', 'algorithm', ['grpo', 'reinforce'], 'countdown', H, TWO_SIDED),
    # direction and outcome words
    Q('Does group size 8 improve chain_sum accuracy by 5 points or more?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'min_effect': 0.05}),
    Q('Is RLOO no better than GRPO on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'negated': True}),
    Q('Is group size 2 slower to converge than group size 4 on chain_sum?', 'group_size', [4, 2], 'chain_sum', LS, L),
    Q('Does group size 2 take longer to converge than 4 on chain_sum?', 'group_size', [4, 2], 'chain_sum', LS, L),
    Q('Will a higher KL make countdown learning sluggish?', 'kl_coef', [0.0, 0.1], 'countdown', LS, L),
    Q('Does RLOO need more steps than GRPO to reach 0.7 training reward on letter counting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', LS, L, extra={'threshold': 0.7}),
    Q('How much faster does lr 1e-4 learn chain_sum than 2e-5?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G),
    Q('Is temperature 0.7 neither better nor worse than 1.0 on chain_sum?', 'temperature', [1.0, 0.7], 'chain_sum', H, EQ, 0.05),
    Q('Is kl 0.05 not significantly different from kl 0 on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, EQ, 0.05),
    Q('Does clip 0.3 give similar accuracy to clip 0.2 on countdown?', 'clip_eps', [0.2, 0.3], 'countdown', H, EQ, 0.05),
    Q('Would weight decay 0.01 be harmless on letter counting?', 'weight_decay', [0.0, 0.01], 'letter_counting', H, NI, 0.05),
    Q('Is max_staleness 2 non-inferior to 1 on chain_sum with a margin of 0.03?', 'max_staleness', [1, 2], 'chain_sum', H, NI, 0.03),
    Q('Does lowering the lr to 1e-5 cost accuracy on countdown?', 'lr', [2e-5, 1e-5], 'countdown', H, L),
    # multipliers and fractions: beside a level they describe it against the default
    Q('does a tenth of the default lr hurt chain_sum?', 'lr', [2e-5, 2e-6], 'chain_sum', H, L),
    Q('does lr 1e-4 (5x the default) help countdown?', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('would lr 1e-5 (half the default) hurt letter counting?', 'lr', [2e-5, 1e-5], 'letter_counting', H, L),
    Q('does lr 1e-4, five times the default, help countdown?', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('Does increasing the lr by 50% help chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G, extra={'min_effect': None}),
    Q('Does increasing the lr by 50 percent help chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G),
    Q('does cutting the group size by 50% hurt countdown?', 'group_size', [4, 2], 'countdown', H, L),
    Q('Does raising the lr by half help chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G),
    Q('does a KL coefficient of 5 percent hurt chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, L),
    Q('does a group size of 2^4 help countdown?', 'group_size', [4, 16], 'countdown', H, G),
    # terse forms
    Q('gs 8 vs 4 chain_sum', 'group_size', [4, 8], 'chain_sum', H, TWO_SIDED),
    Q('does bigger grp size help cntdown', 'group_size', [4, 8], 'countdown', H, G),
    Q('wd .01 hurt?', 'weight_decay', [0.0, 0.01], 'chain_sum', H, L),
    Q('clip .3 vs .2 letter counting pls', 'clip_eps', [0.2, 0.3], 'letter_counting', H, TWO_SIDED),
    Q('quick q: does dropping zero-var groups matter on countdown', 'zero_variance_groups', ['keep', 'drop'], 'countdown', H, TWO_SIDED),
    Q('is g=16 better than g=4 on chain_sum', 'group_size', [4, 16], 'chain_sum', H, G),
    Q('n=16 rollouts vs n=4 on countdown', 'group_size', [4, 16], 'countdown', H, TWO_SIDED),
    Q('8 grps per step vs 4 grps, chain sum', 'batch_groups', [4, 8], 'chain_sum', H, TWO_SIDED),
    Q('Does eps_high 0.28 help chain_sum?', 'clip_eps', [0.2, 0.28], 'chain_sum', H, G),
    # a sentence of setup before the question: its settings held, the question's own level
    # set against the setup's
    Q('We currently use no KL. Does adding a KL of 0.02 hurt chain_sum accuracy?', 'kl_coef', [0.0, 0.02], 'chain_sum', H, L),
    Q('We use RLOO on basic arithmetic. Is lr 1e-4 better than 1e-5?', 'lr', [1e-5, 1e-4], 'basic_arithmetic', H, G, extra={'held': {'algorithm': 'rloo'}}),
    Q("I'm training on basic arithmetic with RLOO. Is lr 1e-5 or 1e-4 better?", 'lr', [1e-5, 1e-4], 'basic_arithmetic', H, TWO_SIDED, extra={'held': {'algorithm': 'rloo'}}),
    Q('Baseline: GRPO, group size 4, lr 2e-5 on letter counting. Question: does RLOO do better?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, G, extra={'held': {'lr': 2e-5, 'group_size': 4}}),
    Q('Context: LoRA rank 16, lr 1e-4, chain_sum. Does increasing the group size to 16 help?', 'group_size', [4, 16], 'chain_sum', H, G, extra={'held': {'lr': 1e-4, 'lora': 16}}),
    Q('Assume full fine-tuning at lr 2e-5. Is LoRA r=8 at least as good on chain_sum?', 'lora', ['full', 8], 'chain_sum', H, NI, 0.05, extra={'held': {'lr': 2e-5}}),
    Q('We found group size 8 helps chain_sum. Does it also help countdown?', 'group_size', [4, 8], 'countdown', H, G),
    Q('DeepSeek-R1 used no KL. Does adding a KL of 0.001 hurt countdown?', 'kl_coef', [0.0, 0.001], 'countdown', H, L),
    # the asking sentence's direction words, not the context's ("slow")
    Q('Our runs are slow. Would doubling the lr speed up learning on letter counting?', 'lr', [2e-5, 4e-5], 'letter_counting', LS, G),
    Q('How many steps does group size 8 save to reach 0.8 on chain_sum?', 'group_size', [4, 8], 'chain_sum', LS, G, extra={'threshold': 0.8}),
    # sentences of setup around the question (probe 6): held; the setup's level of the
    # question's own setting is its control; a result seen is no level
    Q('We keep the lr at 1e-5. Does RLOO help?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'held': {'lr': 1e-5}}),
    Q('We sample 8 completions per prompt. Does RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'held': {'group_size': 8}}),
    Q('We also use a KL of 0.02. Does RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'held': {'kl_coef': 0.02}}),
    Q('We train at temperature 0.7. Does 1.0 do better on chain_sum?', 'temperature', [0.7, 1.0], 'chain_sum', H, G),
    Q('We use clip 0.3. Does 0.2 do better on chain_sum?', 'clip_eps', [0.3, 0.2], 'chain_sum', H, G),
    Q('The KL coefficient is 0.1 in our runs. Does removing it help letter counting?', 'kl_coef', [0.1, 0.0], 'letter_counting', H, G),
    Q('We use a KL of 0.05. Does 0.01 do better on countdown?', 'kl_coef', [0.05, 0.01], 'countdown', H, G),
    Q('We use lr 2e-5. Is 1e-4 better than 5e-5 on chain_sum?', 'lr', [5e-5, 1e-4], 'chain_sum', H, G),
    Q('Our runs use group size 16 on chain_sum. Is 4 enough?', 'group_size', [16, 4], 'chain_sum', H, NI, 0.05),
    Q('Does lr 1e-4 help countdown? For reference, we currently use 3e-5.', 'lr', [3e-5, 1e-4], 'countdown', H, G),
    Q('Is group size 16 better on chain_sum? Our current group size is 8.', 'group_size', [8, 16], 'chain_sum', H, G),
    Q('Does group size 16 help chain_sum? We train with group size 8 and RLOO.', 'group_size', [8, 16], 'chain_sum', H, G, extra={'held': {'algorithm': 'rloo'}}),
    Q("We're at 55% on letter counting after 40 steps. Would a KL of 0.01 help?", 'kl_coef', [0.0, 0.01], 'letter_counting', H, G, extra={'steps': 40}),
    Q('Our model scores 0.68 on chain_sum. Can lr 5e-5 beat that?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('Does lr 1e-4 help chain_sum? Baseline: 0.68.', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    Q('We got 0.45 held-out accuracy on countdown with group size 4. Would group size 8 do better?', 'group_size', [4, 8], 'countdown', H, G),
    Q('For chain_sum we use lr 2e-5. For countdown, is 5e-5 better?', 'lr', [2e-5, 5e-5], 'countdown', H, G),
    Q('My setup: RLOO on countdown. Does a KL of 0.01 hurt?', 'kl_coef', [0.0, 0.01], 'countdown', H, L, extra={'held': {'algorithm': 'rloo'}}),
    Q('Does lr 1e-4 help countdown? We use RLOO.', 'lr', [2e-5, 1e-4], 'countdown', H, G, extra={'held': {'algorithm': 'rloo'}}),
    Q('Question: does KL 0.05 hurt chain_sum? Context: we use RLOO with group size 8.', 'kl_coef', [0.0, 0.05], 'chain_sum', H, L, extra={'held': {'group_size': 8, 'algorithm': 'rloo'}}),
    Q('Our runs are 50 steps long. Would RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'steps': 50}),
    Q('We use the k3 estimator. Does a KL of 0.01 hurt chain_sum?', 'kl_coef', [0.0, 0.01], 'chain_sum', H, L),
    Q('Please test whether lr 5e-5 beats 2e-5 on chain_sum. Keep group size at 8.', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'group_size': 8}}),
    Q('Dr. GRPO argues the std division biases updates. Does removing it help chain_sum?', 'scale_rewards', ['group', 'none'], 'chain_sum', H, G),
    Q('Given our lr of 5e-5, would a KL of 0.01 help chain_sum?', 'kl_coef', [0.0, 0.01], 'chain_sum', H, G, extra={'held': {'lr': 5e-5}}),
    Q('We use the search tool. Does group size 8 help my agent?', 'group_size', [4, 8], 'workflow', H, G, extra={'held': {'workflow:tool': 'search'}}, params=TOOL_AGENT),
    # "as well" is no equivalence; "is GRPO as good?" is
    Q('Does RLOO help countdown as well?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('We use RLOO. Is GRPO as good?', 'algorithm', ['rloo', 'grpo'], 'chain_sum', H, EQ, 0.05),
    # multipliers beside a level, fractions, amounts added
    Q('Would a group size of 16, i.e. 4x the default, help countdown?', 'group_size', [4, 16], 'countdown', H, G),
    Q('Does lr 2e-4 — ten times the default — hurt chain_sum?', 'lr', [2e-5, 2e-4], 'chain_sum', H, L),
    Q('Does one-fifth of the default lr hurt countdown?', 'lr', [2e-5, 4e-6], 'countdown', H, L),
    Q('Does 2 more groups per step help chain_sum?', 'batch_groups', [4, 6], 'chain_sum', H, G),
    Q('Does giving my agent two extra turns help?', 'workflow:max_turns', [4, 6], 'workflow', H, G, params=TOOL_AGENT),
    # direction words
    Q('Would group size 16 break the plateau on chain_sum?', 'group_size', [4, 16], 'chain_sum', H, G),
    Q('Is the accuracy at lr 5e-5 higher than at 2e-5 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('Is a KL of 0.1, which we use now, worse than none on countdown?', 'kl_coef', [0.0, 0.1], 'countdown', H, L),
    Q('We noticed that accuracy drops after step 25 on countdown. Would weight decay 0.01 prevent that?', 'weight_decay', [0.0, 0.01], 'countdown', H, TWO_SIDED, extra={'steps': None}),
    Q('Does clip-higher, as proposed in DAPO, help letter counting?', 'clip_eps', [0.2, 0.3], 'letter_counting', H, G),
    # p-values and "n=" seeds are no levels
    Q('Does lr 5e-5 beat 2e-5 on chain_sum (p < 0.05)?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('Does RLOO beat GRPO on countdown with n = 5 runs per arm?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'held': {}}),
    Q('With n=4 seeds, does RLOO beat GRPO on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    # probe 7: what a colon, a remark or a result sentence holds
    Q('On countdown: does RLOO help?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('For letter counting: is lr 1e-4 better than 2e-5?', 'lr', [2e-5, 1e-4], 'letter_counting', H, G),
    Q('Compare lr: 1e-5, 3e-5, 1e-4.', 'lr', [1e-5, 3e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('Levels: 1e-5, 1e-4. Does the lr matter on countdown?', 'lr', [1e-5, 1e-4], 'countdown', H, TWO_SIDED),
    Q('Does RLOO help countdown? lr: 1e-5; group size: 8.', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'held': {'lr': 1e-5, 'group_size': 8}}),
    Q('Does lr 1e-4 help countdown? Our last run got 0.35.', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('Does a KL of 0.05 help countdown? Our baseline is 0.3.', 'kl_coef', [0.0, 0.05], 'countdown', H, G),
    Q('We train on 1000 prompts. Does group size 8 help countdown?', 'group_size', [4, 8], 'countdown', H, G),
    Q('Does lr 1e-4 help chain_sum? Current accuracy: 0.6.', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    Q('Does lr 1e-4 help countdown? We ran it 3 times.', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('Does group size 8 help countdown? It costs 2 times as much.', 'group_size', [4, 8], 'countdown', COST, L),
    Q('KL 0.1 gave 0.3 on countdown. Would KL 0.01 do better?', 'kl_coef', [0.1, 0.01], 'countdown', H, G),
    Q('We ran RLOO at lr 1e-4 and got 0.4. Does GRPO do better on countdown?', 'algorithm', ['rloo', 'grpo'], 'countdown', H, G, extra={'held': {'lr': 1e-4}}),
    Q('Does group size 8 improve countdown by approx. 5 points?', 'group_size', [4, 8], 'countdown', H, G, extra={'min_effect': 0.05}),
    Q('Does clipping at 0.3 instead of 0.2 help chain_sum, cf. DAPO?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G),
    Q('Would a group size of 16, which is 4x the default, help countdown?', 'group_size', [4, 16], 'countdown', H, G),
    # on by default and named alone: off (the control) against on
    Q('Does gradient clipping help chain_sum?', 'max_grad_norm', [1e6, 1.0], 'chain_sum', H, G),
    Q('Does rerank help my agent?', 'workflow:rerank', [False, True], 'workflow', H, G, params={'top_k': 5, 'rerank': True}),
    Q('Does turning rerank off hurt my agent?', 'workflow:rerank', [True, False], 'workflow', H, L, params={'top_k': 5, 'rerank': True}),
    Q('Does rerank=False hurt? We use top_k 10.', 'workflow:rerank', [True, False], 'workflow', H, L, extra={'held': {'workflow:top_k': 10}}, params={'top_k': 5, 'rerank': True}),
    Q('Is use_tests=True better than use_tests=False?', 'workflow:use_tests', [False, True], 'workflow', H, G, params={'max_attempts': 3, 'use_tests': True}),
    # the review of the day's changes: what they had broken, read right again
    Q('For the guessing game we allow 7 guesses. Would 10 guesses help?', 'max_turns', [7, 10], 'guess_number', H, G),
    Q('Does lr 1e-4 cut training time from 2 hours to 1 on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', COST, L),
    Q('We train longer, 40 steps. Does RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'steps': 40}),
    # probe 8: a model asked about beside a setup; staleness, token-limit and batch words
    Q('Setup: SmolLM2-135M, LoRA rank 16, chain_sum, 20 steps. Question: would the 360M model do better?', 'base_model', [SMOL, SMOL_360], 'chain_sum', H, G, extra={'held': {'lora': 16}, 'steps': 20}, served=TWO),
    Q('We use LoRA rank 16. Does the 360M model beat the 135M on chain_sum?', 'base_model', [SMOL, SMOL_360], 'chain_sum', H, G, extra={'held': {'lora': 16}}, served=TWO),
    Q('Does allowing samples 4 versions stale hurt countdown?', 'max_staleness', [1, 4], 'countdown', H, L),
    Q('Does a lag of 2 policy versions hurt chain_sum?', 'max_staleness', [1, 2], 'chain_sum', H, L),
    Q('Does truncation at 32 tokens hurt countdown?', 'max_tokens', [48, 32], 'countdown', H, L),
    Q('Is 1 group per step enough for countdown?', 'batch_groups', [4, 1], 'countdown', H, NI, 0.05),
    Q('Is a detailed style worse than concise?', 'workflow:style', ['concise', 'detailed'], 'workflow', H, L, params={'persona': 'tutor', 'max_turns': 6, 'style': 'concise'}),
    # probe 9: mix shares in the order written, from setup sentences, in parts and fractions
    Q('Does a 3:1 countdown:chain_sum mix help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.25, 'countdown': 0.75}], 'chain_sum', H, G),
    Q('Does a 75/25 countdown/chain_sum mix beat chain_sum alone?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.25, 'countdown': 0.75}], 'chain_sum', H, G),
    Q('countdown:chain_sum at 1:3 - does it help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'countdown': 0.25}], 'chain_sum', H, G),
    Q('Does training with one part countdown for every four parts chain_sum help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.8, 'countdown': 0.2}], 'chain_sum', H, G),
    Q('does 1 countdown prompt per 3 chain_sum prompts help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'countdown': 0.25}], 'chain_sum', H, G),
    Q('we train 2 parts countdown to 1 part chain_sum. does that help countdown vs countdown only?', 'task_mix', [{'countdown': 1.0}, {'countdown': 0.6667, 'chain_sum': 0.3333}], 'countdown', H, G),
    Q('If 30% of the batch is countdown, does chain_sum improve?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.7, 'countdown': 0.3}], 'chain_sum', H, G),
    Q('30% of the batch is countdown, rest chain_sum. does that beat pure chain_sum on chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.7, 'countdown': 0.3}], 'chain_sum', H, G),
    Q('does countdown benefit from a quarter of the batch being chain_sum?', 'task_mix', [{'countdown': 1.0}, {'countdown': 0.75, 'chain_sum': 0.25}], 'countdown', H, G),
    Q('I mix in 5% letter_counting as a regularizer. does it hurt chain_sum accuracy?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.95, 'letter_counting': 0.05}], 'chain_sum', H, L),
    Q('Would sprinkling in a little letter counting (say 10%) hurt chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.9, 'letter_counting': 0.1}], 'chain_sum', H, L),
    Q('does mixing help? chain_sum 80%, basic_arithmetic 20%', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.8, 'basic_arithmetic': 0.2}], 'chain_sum', H, G),
    Q('does a mix weighted 0.7 chain_sum / 0.3 letter_counting help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.7, 'letter_counting': 0.3}], 'chain_sum', H, G),
    Q('we mix basic_arithmetic at 0.25 weight. does that beat pure chain_sum on chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'basic_arithmetic': 0.25}], 'chain_sum', H, G),
    Q('does adding letter counting as a fifth of the data slow learning on chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.8, 'letter_counting': 0.2}], 'chain_sum', LS, L),
    Q('does diluting chain_sum with basic arithmetic (two thirds chain_sum) hurt?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.6667, 'basic_arithmetic': 0.3333}], 'chain_sum', H, L),
    Q('does a 2:1:1 mix of chain_sum, basic_arithmetic and letter_counting help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.5, 'basic_arithmetic': 0.25, 'letter_counting': 0.25}], 'chain_sum', H, G),
    Q('Does a 3:1 mix help chain_sum?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'basic_arithmetic': 0.25}], 'chain_sum', H, G),
    Q('is a 3:1 chain_sum:basic_arithmetic mix as good as 1:1 on chain_sum?', 'task_mix', [{'chain_sum': 0.5, 'basic_arithmetic': 0.5}, {'chain_sum': 0.75, 'basic_arithmetic': 0.25}], 'chain_sum', H, EQ, 0.05),
    Q('Does the 3:1 mix beat the 1:1 mix on chain_sum (mixing basic_arithmetic in)?', 'task_mix', [{'chain_sum': 0.5, 'basic_arithmetic': 0.5}, {'chain_sum': 0.75, 'basic_arithmetic': 0.25}], 'chain_sum', H, G),
    Q('does doubling the share of basic_arithmetic from 25% to 50% hurt chain_sum?', 'task_mix', [{'chain_sum': 0.75, 'basic_arithmetic': 0.25}, {'chain_sum': 0.5, 'basic_arithmetic': 0.5}], 'chain_sum', H, L),
    Q('does a 20% share of spell_backward in the mix hurt letter counting?', 'task_mix', [{'letter_counting': 1.0}, {'letter_counting': 0.8, 'spell_backward': 0.2}], 'letter_counting', H, L),
    Q('Does mixing in an easier task (chain_sum) help tiny countdown learn faster?', 'task_mix', [{'countdown': 1.0}, {'countdown': 0.5, 'chain_sum': 0.5}], 'countdown', LS, G),
    Q('Should I mix countdown in? We currently train pure chain_sum and I\'m thinking 1 in 4 prompts countdown.', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.75, 'countdown': 0.25}], 'chain_sum', H, TWO_SIDED),
    Q('does mixing basic arithmetic into chain_sum at 1:1 cost any chain_sum accuracy?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.5, 'basic_arithmetic': 0.5}], 'chain_sum', H, L),
    Q('Is a 90/10 mix better than chain_sum alone?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.9, 'basic_arithmetic': 0.1}], 'chain_sum', H, G),
    # thresholds are no levels; speed words; non-inferiority and margins on learning speed
    Q('does lr 5e-5 get chain_sum to 70% train reward in under 15 steps?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'threshold': 0.7, 'steps': 15}),
    Q('how much faster (in steps to 0.8) is lr 5e-5 than 2e-5 on letter counting?', 'lr', [2e-5, 5e-5], 'letter_counting', LS, G, extra={'threshold': 0.8}),
    Q('does lr 3e-5 reach the 0.8 threshold at least 5 steps sooner than 2e-5 on chain_sum?', 'lr', [2e-5, 3e-5], 'chain_sum', LS, G, extra={'threshold': 0.8, 'steps': None}),
    Q('does kl 0.05 delay reaching 0.8 reward on basic arithmetic?', 'kl_coef', [0.0, 0.05], 'basic_arithmetic', LS, L, extra={'threshold': 0.8}),
    Q('Does reinforce take longer than grpo to reach 0.7 on basic arithmetic?', 'algorithm', ['grpo', 'reinforce'], 'basic_arithmetic', LS, L, extra={'threshold': 0.7}),
    Q('is the time to 90% training reward on learnable shorter with temperature 0.7?', 'temperature', [1.0, 0.7], 'learnable', LS, G, extra={'threshold': 0.9}),
    Q('Does lr 1e-4 get to 0.5 reward at least twice as fast as 2e-5 on countdown?', 'lr', [2e-5, 1e-4], 'countdown', LS, G, extra={'threshold': 0.5}),
    Q('is RLOO at least as fast as GRPO to 0.8 reward on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, NI, 2.0, extra={'threshold': 0.8}),
    Q('Does RLOO hit 0.75 reward no later than GRPO on tiny countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', LS, NI, 2.0, extra={'threshold': 0.75}),
    # (no KL, named after "within 3 steps of", is what 0.02 is held to: the control)
    Q('does a KL of 0.02 keep steps-to-0.8 within 3 steps of no KL on chain_sum?', 'kl_coef', [0.0, 0.02], 'chain_sum', LS, EQ, 3.0, extra={'threshold': 0.8, 'steps': None}),
    Q('are rloo and grpo equally sample efficient on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, EQ, 0.05),
    Q('is lr 3e-5 at least as sample efficient as 2e-5 on chain_sum, within 5%?', 'lr', [2e-5, 3e-5], 'chain_sum', LS, NI, 0.05),
    Q('does RLOO match GRPO\'s held-out accuracy on countdown to within a point?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, EQ, 0.01),
    Q('does batch_groups 2 save wall time without costing more than 1 point on chain_sum?', 'batch_groups', [4, 2], 'chain_sum', H, NI, 0.01),
    # results seen in setup: a failed level is no control; scores and spreads are no levels
    Q('We tried lr 1e-4 on countdown and it diverged after ~12 steps. Does 5e-5 beat the default?', 'lr', [2e-5, 5e-5], 'countdown', H, G),
    Q('We tried lr 1e-4 and it diverged. Is 5e-5 safe on countdown?', 'lr', [2e-5, 5e-5], 'countdown', H, NI, 0.05),
    Q('Weight decay 0.1 made things worse on basic arithmetic last time. Is 0.01 harmless?', 'weight_decay', [0.0, 0.01], 'basic_arithmetic', H, NI, 0.05),
    Q('We ran 5 seeds of group size 4 on chain_sum and got 0.6 +/- 0.03. Does 8 beat it?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('We tried LoRA rank 4 and it barely moved (0.27 -> 0.30). Does rank 32 learn chain_sum better?', 'lora', [4, 32], 'chain_sum', H, G),
    Q('our grpo run with temp 0.6 diverged twice, so we switched to 1.0. is 1.0 actually better on countdown?', 'temperature', [0.6, 1.0], 'countdown', H, G),
    Q('Our baseline is GRPO with group size 8 at 0.62 on chain_sum. Does RLOO beat it?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'held': {'group_size': 8}}),
    Q("we use RLOO with lr 1e-5 on chain_sum and it's slow. would 3e-5 speed it up?", 'lr', [1e-5, 3e-5], 'chain_sum', LS, G),
    Q('Our runs at 4 groups per step peak at step 15 then degrade on chain_sum. Does 8 groups per step fix it?', 'batch_groups', [4, 8], 'chain_sum', H, G),
    Q('The 20-step runs hit 0.68 on chain_sum. Do 40 steps get us further?', 'max_steps', [20, 40], 'chain_sum', H, G),
    # held settings named with "=", a number first, or a level word; max_turns held picks the game
    Q('with merge=timeline, does RLOO beat GRPO on mastermind?', 'algorithm', ['grpo', 'rloo'], 'mastermind', H, G, extra={'held': {'merge': 'timeline'}}),
    Q('with max_turns 1, does RLOO beat GRPO on the guessing game?', 'algorithm', ['grpo', 'rloo'], 'guess_number', H, G, extra={'held': {'max_turns': 1}}),
    Q('In a multi-turn setting with 4 turns, does group size 8 help?', 'group_size', [4, 8], 'guess_number', H, G, extra={'held': {'max_turns': 4}}),
    # a workflow's PARAMS as people write them: nouns of verbs, singulars, "one", "a single"
    Q('does query rewriting help my agent?', 'workflow:query_rewrite', [False, True], 'workflow', H, G, params={'rerank': True, 'top_k': 5, 'query_rewrite': False}),
    Q('is reranking necessary for my agent?', 'workflow:rerank', [True, False], 'workflow', H, L, params={'rerank': True, 'top_k': 5, 'query_rewrite': False}),
    Q('does escalation to a human help my agent?', 'workflow:escalate', [False, True], 'workflow', H, G, params={'tool': 'search', 'max_turns': 4, 'escalate': False}),
    Q('does one attempt instead of three hurt my agent?', 'workflow:max_attempts', [3, 1], 'workflow', H, L, params={'max_attempts': 3, 'use_tests': True}),
    Q('do three attempts beat one for my agent?', 'workflow:max_attempts', [1, 3], 'workflow', H, G, params={'max_attempts': 3, 'use_tests': True}),
    Q('does a single turn hurt my agent?', 'workflow:max_turns', [4, 1], 'workflow', H, L, params={'tool': 'search', 'max_turns': 4, 'escalate': False}),
    Q('does a lower sampling temperature help my agent?', 'workflow:temperature', [0.7, 0.35], 'workflow', H, G, params={'tool': 'search', 'temperature': 0.7}),
    Q('does the hint help my agent, n_examples=4?', 'workflow:hint', [False, True], 'workflow', H, G, extra={'held': {'workflow:n_examples': 4}}, params={'hint': False, 'n_examples': 2}),
    Q('We run the support agent with the web tool and 6 turns. Does escalate=True help?', 'workflow:escalate', [False, True], 'workflow', H, G, extra={'held': {'workflow:tool': 'web', 'workflow:max_turns': 6}}, params={'tool': 'search', 'max_turns': 4, 'escalate': False}),
    # models: "is the smaller enough?" has the larger as control; "go up" is greater
    Q('is 135M enough for chain_sum, or do we need 360M?', 'base_model', [SMOL_360, SMOL], 'chain_sum', H, NI, 0.05, served=TWO),
    Q('with 3x the parameters (360M vs 135M), does held-out accuracy on basic arithmetic go up by at least 5 points?', 'base_model', [SMOL, SMOL_360], 'basic_arithmetic', H, G, extra={'min_effect': 0.05}, served=TWO),
    Q('Does the 360M model need fewer steps to hit 0.8?', 'base_model', [SMOL, SMOL_360], 'chain_sum', LS, G, extra={'threshold': 0.8}, served=TWO),
    Q('for our tool-calling agent on bfcl, does lr 5e-5 help parallel calls?', 'lr', [2e-5, 5e-5], 'bfcl', H, G, extra={'task_levels': {'bfcl': 'parallel'}}),
    Q('Does timeline merging train on fewer tokens than tree on guess_number?', 'merge', ['tree', 'timeline'], 'guess_number', COST, L),
    # a text PARAM in setup set against the one the question names
    Q('We use the coach persona. Would tutor do better?', 'workflow:persona', ['coach', 'tutor'], 'workflow', H, G, params={'persona': 'tutor', 'max_turns': 6, 'style': 'concise'}),
    Q('does the tutor persona beat coach?', 'workflow:persona', ['coach', 'tutor'], 'workflow', H, G, params={'persona': 'tutor', 'max_turns': 6, 'style': 'concise'}),
    Q('is the calculator tool better than search?', 'workflow:tool', ['search', 'calculator'], 'workflow', H, G, params={'tool': 'calculator', 'retries': 2, 'max_tokens': 256}),
    Q('Currently my agent uses the search tool with 4 turns. Does lr 1e-4 help it?', 'lr', [2e-5, 1e-4], 'workflow', H, G, extra={'held': {'workflow:tool': 'search', 'workflow:max_turns': 4}}, params={'system_prompt': 'x', 'max_turns': 4, 'tool': 'search', 'temperature': 0.7}),
    # probe 10: a workflow's PARAMS among other words ("tool errors", "tool calls", "my tool
    # agent", "training against", names ending in -er, a run setting's word in a longer key)
    Q('does showing tool errors help my agent?', 'workflow:show_tool_errors', [False, True], 'workflow', H, G, params=TOOLS_AGENT),
    Q('does hiding tool errors from the model hurt?', 'workflow:show_tool_errors', [True, False], 'workflow', H, L, params=TOOLS_AGENT),
    Q('does letting the agent make up to 5 tool calls instead of 3 improve accuracy?', 'workflow:max_tool_calls', [3, 5], 'workflow', H, G, params=TOOLS_AGENT),
    Q('is one tool call enough for my agent?', 'workflow:max_tool_calls', [3, 1], 'workflow', H, NI, 0.05, params=TOOLS_AGENT),
    Q('does strict_json=True help my tool agent?', 'workflow:strict_json', [False, True], 'workflow', H, G, params=TOOLS_AGENT),
    Q('does the unit_converter tool beat the calculator tool?', 'workflow:tool', ['calculator', 'unit_converter'], 'workflow', H, G, params=TOOLS_AGENT),
    Q('is my calculator agent better with kl=0.02 when tool is unit_converter?', 'kl_coef', [0.0, 0.02], 'workflow', H, G, extra={'held': {'workflow:tool': 'unit_converter'}}, params=TOOLS_AGENT),
    Q('does lr 5e-5 help my tool agent at max_tool_calls=2?', 'lr', [2e-5, 5e-5], 'workflow', H, G, extra={'held': {'workflow:max_tool_calls': 2}}, params=TOOLS_AGENT),
    Q("max tokens 128 vs 64 for my agent's calls", 'max_tokens', [128, 64], 'workflow', H, TWO_SIDED, params=TOOLS_AGENT),
    Q('does training against the random opponent help compared to the scripted one?', 'workflow:opponent', ['scripted', 'random'], 'workflow', H, G, params={'max_turns': 8, 'opponent': 'scripted', 'show_history': True}),
    Q('does training at temperature 1.2 help the writer?', 'temperature', [1.0, 1.2], 'workflow', H, G, params={'style': 'vivid', 'draft_rounds': 1, 'judge_temperature': 0.0}),
    # probe 10: the core questions as people word them
    Q('is max tokens 32 enough for chain_sum or do we need 64?', 'max_tokens', [64, 32], 'chain_sum', H, NI, 0.05),
    Q('is group size 4 enough for letter counting, or do we need 8?', 'group_size', [8, 4], 'letter_counting', H, NI, 0.05),
    Q('lr 3e-6 vs 3e-5 - does the higher one converge faster on tiny countdown?', 'lr', [3e-6, 3e-5], 'countdown', LS, G),
    Q('does dropping the kl loss (beta 0.04 -> 0) make training faster on chain_sum?', 'kl_coef', [0.04, 0.0], 'chain_sum', COST, L),
    Q('the KL coef is 0.05 in our runs; would turning it off help chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, G),
    Q('our kl is 0.1 — would removing it help chain_sum?', 'kl_coef', [0.1, 0.0], 'chain_sum', H, G),
    Q('Is parameter-efficient fine-tuning with LoRA competitive with full fine-tuning for RL on chain sums?', 'lora', ['full', 16], 'chain_sum', H, EQ, 0.05),
    Q('We do full fine-tuning on a 7B. Would LoRA r16 give the same chain_sum accuracy?', 'lora', ['full', 16], 'chain_sum', H, EQ, 0.05),
    Q('lora r=16 alpha=32 vs full, which learns faster on chain_sum', 'lora', ['full', 16], 'chain_sum', LS, TWO_SIDED),
    Q('does truncating responses to 24 tokens save training time without hurting chain_sum?', 'max_tokens', [32, 24], 'chain_sum', H, NI, 0.05),
    Q('Does a tighter token limit make learning faster on basic_arithmetic?', 'max_tokens', [32, 16], 'basic_arithmetic', LS, G),
    Q('does a 16-token limit hurt letter counting?', 'max_tokens', [32, 16], 'letter_counting', H, L),
    Q('does throwing away stale samples help basic arithmetic?', 'max_staleness', [1, 0], 'basic_arithmetic', H, G),
    Q('does discarding stale rollouts help chain_sum?', 'max_staleness', [1, 0], 'chain_sum', H, G),
    Q('How much off-policyness can GRPO tolerate on chain_sum? staleness 0, 1, 2, 4', 'max_staleness', [1, 0, 2, 4], 'chain_sum', H, TWO_SIDED),
    Q('Does using more prompts per update improve sample efficiency on chain_sum?', 'batch_groups', [4, 8], 'chain_sum', LS, G),
    Q('how many training steps are optimal for chain_sum: 10, 20 or 40?', 'max_steps', [20, 10, 40], 'chain_sum', H, TWO_SIDED),
    Q('Is it beneficial to train the model jointly on several tasks rather than on a single one, with respect to chain_sum accuracy?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.5, 'basic_arithmetic': 0.5}], 'chain_sum', H, G),
    Q('mixing 3 tasks (chain_sum, basic_arithmetic, letter_counting) equally vs chain_sum only: does chain_sum get better?', 'task_mix', [{'chain_sum': 1.0}, {'chain_sum': 0.3333, 'basic_arithmetic': 0.3333, 'letter_counting': 0.3333}], 'chain_sum', H, G),
    # merge layouts: "none" listed, per-call, a multi-turn task when none is named
    Q('Which merge layout is best: none, timeline or tree?', 'merge', ['tree', 'none', 'timeline'], 'guess_number', H, TWO_SIDED),
    Q('Is per-call training more expensive than tree?', 'merge', ['tree', 'none'], 'guess_number', COST, G),
    Q('does timeline merging beat merge none on mastermind?', 'merge', ['none', 'timeline'], 'mastermind', H, G),
    # a level given up for another is the control
    Q('Does dropping LoRA for full fine-tuning help countdown?', 'lora', [16, 'full'], 'countdown', H, G),
    Q('Would trading group size 8 for 16 help?', 'group_size', [8, 16], 'chain_sum', H, G),
    # session 32: settings listed after the levels compared are held
    Q('RLOO vs GRPO, lr=1e-5, group size 8, chain_sum: which learns faster?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, TWO_SIDED, extra={'held': {'lr': 1e-5, 'group_size': 8}}),
    Q('lr 1e-4 vs 1e-5, group size 8, on countdown?', 'lr', [1e-4, 1e-5], 'countdown', H, TWO_SIDED, extra={'held': {'group_size': 8}}),
    # a level named only in a result or setup sentence is no level once the question names two
    Q('lr 5e-5 beat 2e-5. Would 1e-4 beat 5e-5?', 'lr', [5e-5, 1e-4], 'chain_sum', H, G),
    Q('Is RLOO better than GRPO on countdown? We also tried REINFORCE.', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('The GRPO paper uses a group size of 64. Would 16 help chain_sum over our 4?', 'group_size', [4, 16], 'chain_sum', H, G),
    # "should it be lower", "do we need one above N": one-sided, unless a choice is offered
    Q('should the temperature be lower for countdown?', 'temperature', [1.0, 0.7], 'countdown', H, G),
    Q('should we use a larger group size on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G),
    Q('do we need a max_tokens above 150 on countdown?', 'max_tokens', [150, 300], 'countdown', H, G),
    Q('should the group size be larger or smaller on countdown?', 'group_size', [4, 2, 8], 'countdown', H, TWO_SIDED),
    Q('should the lr be higher or lower on chain_sum?', 'lr', [2e-5, 5e-6, 1e-4], 'chain_sum', H, TWO_SIDED),
    # a PARAM's one level after "more than": that level is the control
    Q('does my agent need more than 1 turn?', 'workflow:max_turns', [1, 4], 'workflow', H, G, params=TOOLS),
    Q('does my agent need more than 6 turns?', 'workflow:max_turns', [6, 12], 'workflow', H, G, params=TOOLS),
    # "every 2 turns" is how often, "merging the turns" the merge: neither is max_turns
    Q('does a hint every 2 turns help?', 'workflow:hint_every', [0, 2], 'workflow', H, G, params={'max_turns': 8, 'hint_every': 0}),
    Q('does merging the turns into one timeline help my agent?', 'merge', ['tree', 'timeline'], 'workflow', H, G, params=TOOLS),
    # batches written as groups in setup and question, or as AxB with a legend
    Q('We run 4 prompts x 8 samples per step. Would 16 prompts x 8 samples do better on chain_sum?', 'batch_groups', [4, 16], 'chain_sum', H, G, extra={'held': {'group_size': 8}}),
    Q('4x8 vs 8x4 (prompts x samples per prompt) on countdown?', 'group_size', [4, 8], 'countdown', H, TWO_SIDED, extra={'episodes_per_step': 32}),
    Q('is 8x4 better than 4x8 (samples x prompts) on chain_sum?', 'group_size', [4, 8], 'chain_sum', H, G, extra={'episodes_per_step': 32}),
    Q('4x8 vs 16x8 (prompts x samples per prompt) on countdown?', 'batch_groups', [4, 16], 'countdown', H, TWO_SIDED, extra={'held': {'group_size': 8}}),
    # "how many … should I use" asks for the best: a sweep
    Q('how many samples per prompt should I use for chain_sum?', 'group_size', [4, 2, 8], 'chain_sum', H, TWO_SIDED),
    Q('how large should the group size be on chain_sum?', 'group_size', [4, 2, 8], 'chain_sum', H, TWO_SIDED),
    # levels each with a score in setup: the best seen is the control, the rest results
    Q('Earlier runs: staleness 4 gave 0.5, 1 gave 0.6. Is fully on-policy even better?', 'max_staleness', [1, 0], 'chain_sum', H, G),
    Q('lr 1e-5 gave 0.42 and lr 5e-5 gave 0.51 on chain_sum. Would 1e-4 do even better?', 'lr', [5e-5, 1e-4], 'chain_sum', H, G),
    # the task "this question is about" is judged over the main task of the setup
    Q('Our main task is letter counting, but this question is about countdown: does group size 8 help?', 'group_size', [4, 8], 'countdown', H, G),
    # the default named alone with a direction is the level asked about: the treatment
    Q('does temperature 1.0 help countdown?', 'temperature', [0.7, 1.0], 'countdown', H, G),
    Q('does a KL of 0 help chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, G),
    Q('does group size 4 help chain_sum?', 'group_size', [8, 4], 'chain_sum', H, G),
    # probe 12: held lists ended by a dash, in brackets, with a bare algorithm or a PARAM word
    Q('lr 1e-5 vs 1e-4, weight decay 0.01 — which learns faster on countdown?', 'lr', [1e-5, 1e-4], 'countdown', LS, TWO_SIDED, extra={'held': {'weight_decay': 0.01}}),
    Q('lr 1e-5 vs 1e-4, kl 0.01 - which is better on countdown?', 'lr', [1e-5, 1e-4], 'countdown', H, TWO_SIDED, extra={'held': {'kl_coef': 0.01}}),
    Q('RLOO vs GRPO (lr 1e-5) on chain_sum: which learns faster?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, TWO_SIDED, extra={'held': {'lr': 1e-5}}),
    Q('Compare RLOO and GRPO (lr 1e-5, group size 8) on chain_sum: which learns faster?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, TWO_SIDED, extra={'held': {'lr': 1e-5, 'group_size': 8}}),
    Q('lr 1e-5 vs 5e-5, rloo, chain_sum: which is better?', 'lr', [1e-5, 5e-5], 'chain_sum', H, TWO_SIDED, extra={'held': {'algorithm': 'rloo'}}),
    Q('should we use a lower learning rate with RLOO on countdown?', 'lr', [2e-5, 5e-6], 'countdown', H, G, extra={'held': {'algorithm': 'rloo'}}),
    Q('does group size 8 help my agent, tool=calculator?', 'group_size', [4, 8], 'workflow', H, G, extra={'held': {'workflow:tool': 'calculator'}}, params=AGENT),
    Q('does group size 8 help, use_hint=True?', 'group_size', [4, 8], 'workflow', H, G, extra={'held': {'workflow:use_hint': True}}, params=AGENT),
    # a level of setup beside a question naming its own two is no arm
    Q('temp 0.5 did badly. does temperature 1.2 beat 1.0 on chain_sum?', 'temperature', [1.0, 1.2], 'chain_sum', H, G),
    Q('clip 0.3 blew up. does clip 0.1 beat 0.2?', 'clip_eps', [0.2, 0.1], 'chain_sum', H, G),
    Q('Our baseline uses group size 4 and lr 2e-5. Would group size 16 beat 8?', 'group_size', [8, 16], 'chain_sum', H, G, extra={'held': {'lr': 2e-5}}),
    # levels with their scores in brackets or after "=": the best seen is the control
    Q('We tried kl 0.1 (0.3 acc) and kl 0.01 (0.45 acc). Would no KL do better on countdown?', 'kl_coef', [0.01, 0.0], 'countdown', H, G),
    Q('Results so far: group size 2 = 0.3, group size 4 = 0.45, group size 8 = 0.5. Would 16 be better?', 'group_size', [8, 16], 'chain_sum', H, G),
    # "how many … do I need" asks for the best count: a sweep
    Q('how many completions per prompt do I need for chain_sum?', 'group_size', [4, 2, 8], 'chain_sum', H, TWO_SIDED),
    # one number of groups, two group sizes: the group size at that number
    Q('4 prompts x 8 samples vs 4 prompts x 16 samples on chain_sum, which is better?', 'group_size', [8, 16], 'chain_sum', H, TWO_SIDED, extra={'held': {'batch_groups': 4}}),
    # "A <verb> vs B": B is what A is set against
    Q('does staleness 2 cut wall time vs fully synchronous on chain_sum?', 'max_staleness', [0, 2], 'chain_sum', COST, L),
    Q('does staleness 2 learn faster vs staleness 0 on chain_sum?', 'max_staleness', [0, 2], 'chain_sum', LS, G),
    # a second task joined by "or" keeps the direction
    Q('does kl 0.05 help chain_sum or countdown?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, G),
    # "tool calls" names a PARAM max_calls
    Q('do 3 tool calls instead of 2 help my agent?', 'workflow:max_calls', [2, 3], 'workflow', H, G, params={'max_calls': 2, 'system_prompt': 'Use the tool.'}),
    # "train my agent faster" is "train faster": wall time
    Q('does RLOO train my agent faster than GRPO?', 'algorithm', ['grpo', 'rloo'], 'workflow', COST, L, params=TOOLS),
    # one batch written as groups is the setup: both its settings held (4 and 8 were levels)
    Q('With 4 prompts x 8 samples per step, does lr 5e-5 beat 2e-5 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('We train with 4 prompts x 8 samples. Does kl 0.05 help countdown?', 'kl_coef', [0.0, 0.05], 'countdown', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('With 4 prompts and 8 samples per prompt, does lr 5e-5 beat 2e-5 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('We use 8 prompts per step, 4 samples each. Is lr 1e-4 better than 2e-5 on countdown?', 'lr', [2e-5, 1e-4], 'countdown', H, G, extra={'held': {'batch_groups': 8, 'group_size': 4}}),
    Q('4 prompts x 8 samples: does RLOO help?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('At a batch of 4 prompts x 16 samples, does RLOO help countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G, extra={'held': {'batch_groups': 4, 'group_size': 16}}),
    Q('Our batch: 4 prompts x 8 samples. Does RLOO help?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('4 prompts x 8 samples per step: is clip range 0.3 better than 0.2 on chain_sum?', 'clip_eps', [0.2, 0.3], 'chain_sum', H, G, extra={'held': {'batch_groups': 4, 'group_size': 8}}),
    Q('Batch is 8 prompts × 4 samples. Would max_grad_norm 0.5 help countdown?', 'max_grad_norm', [1.0, 0.5], 'countdown', H, G, extra={'held': {'batch_groups': 8, 'group_size': 4}}),
    # a multiple or percent of the OUTCOME is no level (lr 5e-5 was scaled to 4.5e-5)
    Q('Does lr 5e-5 reduce wall time by 10%?', 'lr', [2e-5, 5e-5], 'chain_sum', COST, L, extra={'min_effect': 0.1}),
    Q('Does kl 0.05 cut wall time by half?', 'kl_coef', [0.0, 0.05], 'chain_sum', COST, L),
    Q('Does lr 1e-4 double the learning speed?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G),
    Q('Does lr 1e-4 halve the steps to 0.8?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G, extra={'threshold': 0.8}),
    Q('Does lr 1e-4 double accuracy on countdown?', 'lr', [2e-5, 1e-4], 'countdown', H, G),
    Q('Does group size 16 triple training cost?', 'group_size', [4, 16], 'chain_sum', COST, G),
    Q('Does group size 8 cut training time by 20%?', 'group_size', [4, 8], 'chain_sum', COST, L, extra={'min_effect': 0.2}),
    # a margin in steps is on the steps to a training reward (it was an accuracy margin of 3)
    Q('Does lr 5e-5 reach 0.7 within 3 steps of lr 2e-5?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, EQ, 3.0, extra={'threshold': 0.7}),
    Q('Does RLOO reach a training reward of 0.7 within 3 steps of GRPO on chain_sum?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, EQ, 3.0, extra={'threshold': 0.7}),
    Q('Is group size 8 within 2 steps of group size 4 in reaching 0.8?', 'group_size', [4, 8], 'chain_sum', LS, EQ, 2.0, extra={'threshold': 0.8}),
    Q('Does kl 0.05 get to a training reward of 0.6 within 5 steps of no KL?', 'kl_coef', [0.0, 0.05], 'chain_sum', LS, EQ, 5.0, extra={'threshold': 0.6}),
    Q('Does RLOO take no more than 3 extra steps to reach 0.7 than GRPO?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', LS, NI, 3.0, extra={'threshold': 0.7}),
    # "absence of", "lack of" take the setting away; "necessary" with its default written
    Q('Does the absence of a KL penalty hurt chain_sum?', 'kl_coef', [0.05, 0.0], 'chain_sum', H, L),
    Q('does the absence of weight decay hurt?', 'weight_decay', [0.01, 0.0], 'chain_sum', H, L),
    Q('Does the lack of gradient clipping hurt chain_sum?', 'max_grad_norm', [1.0, 1e6], 'chain_sum', H, L),
    Q('Is grad norm clipping at 1.0 necessary?', 'max_grad_norm', [1.0, 1e6], 'chain_sum', H, L),
    Q('Is dropping zero-variance groups necessary?', 'zero_variance_groups', ['drop', 'keep'], 'chain_sum', H, L),
    Q('Does a per-token KL penalty of 0.01 hurt learning speed?', 'kl_coef', [0.0, 0.01], 'chain_sum', LS, L),
    Q('Does lr 1e-4 cut steps to 0.8 by 30%?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G, extra={'threshold': 0.8}),
    Q('Is self-consistency accuracy higher after RLOO than GRPO?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', H, G),
    # LoRA's usual lr written after its rank: each method at its usual lr (was refused)
    Q('Does lora r8 at lr 1e-4 match full fine-tuning?', 'lora', ['full', 8], 'chain_sum', H, EQ, 0.05, extra={'held': {}}),
    Q('lora r8 at lr 1e-4 vs full fine-tuning on countdown: which is better?', 'lora', ['full', 8], 'countdown', H, TWO_SIDED),
    Q('Does LoRA r32 beat r8 at lr 3e-4?', 'lora', [8, 32], 'chain_sum', H, G, extra={'held': {'lr': 3e-4}}),
    # settings named by paraphrase or synonym (were refused)
    Q('how many tokens per completion?', 'max_tokens', [32, 64], 'chain_sum', H, TWO_SIDED),
    Q('How many tokens does each completion need on chain_sum?', 'max_tokens', [32, 16, 64], 'chain_sum', H, TWO_SIDED),
    Q('how many completion tokens should I allow?', 'max_tokens', [32, 16, 64], 'chain_sum', H, TWO_SIDED),
    Q('how many completion tokens does RLOO use?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', COST, TWO_SIDED),
    Q('How big should the group be on countdown?', 'group_size', [4, 2, 8], 'countdown', H, TWO_SIDED),
    Q('Is an L2 penalty of 0.01 useful on countdown?', 'weight_decay', [0.0, 0.01], 'countdown', H, G),
    Q('Does advantage whitening help chain_sum?', 'scale_rewards', ['none', 'group'], 'chain_sum', H, G),
    # Adam is every run's optimizer: "with Adam" is context, not a setting
    Q('Does lr 1e-4 help, with Adam?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    Q('Does a learning rate of 1e-6 with Adam help?', 'lr', [2e-5, 1e-6], 'chain_sum', H, G),
    # a period PARAM written as a frequency; "one" as a pronoun is no level
    Q('does a hint every other turn beat one every 4 turns?', 'workflow:hint_every', [4, 2], 'workflow', H, G, params=HINTS),
    Q('Would giving a hint every turn help compared with every 2 turns?', 'workflow:hint_every', [2, 1], 'workflow', H, G, params=HINTS),
    Q('does a hint every 3 turns beat one every 2 turns?', 'workflow:hint_every', [2, 3], 'workflow', H, G, params=HINTS),
    # a text PARAM held at a value written before its name (dropped, or two settings)
    Q('With the calculator tool, does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'workflow', H, G, params=TOOL_AGENT, extra={'held': {'workflow:tool': 'calculator'}}),
    Q('does lr 5e-5 help against the random opponent?', 'lr', [2e-5, 5e-5], 'workflow', H, G, params=GAME, extra={'held': {'workflow:opponent': 'random'}}),
    Q('With the random opponent, does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'workflow', H, G, params=GAME, extra={'held': {'workflow:opponent': 'random'}}),
    Q('does training against the minimax opponent beat the random one?', 'workflow:opponent', ['random', 'minimax'], 'workflow', H, G, params=GAME),
    Q('Does group size 8 help my agent when hints are off?', 'group_size', [4, 8], 'workflow', H, G, params=HINTS, extra={'held': {'workflow:use_hint': False}}),
    # the asking sentence's outcome decides, not a cost named in the setup
    Q('I have a limited budget and want to know if I can cut costs. Our runs use group size 8. Would group size 4 be just as accurate on letter counting?', 'group_size', [8, 4], 'letter_counting', H, EQ, 0.05),
    # a setting fixed in the setup by "can't change" or "keep … as the …" (were refused)
    Q("We can't change the group size (4). Does a lower lr help chain_sum?", 'lr', [2e-5, 5e-6], 'chain_sum', H, G, extra={'held': {'group_size': 4}}),
    Q('Does lr 5e-5 beat 2e-5 on chain_sum? Keep RLOO as the algorithm.', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'algorithm': 'rloo'}}),
    # a "<noun>_size" PARAM by its noun and a comparative, "k=5" for top_k, "two-shot"
    Q('Does a larger board hurt?', 'workflow:board_size', [3, 6], 'workflow', H, L, params=GAME),
    Q('Do bigger chunks of 1024 tokens help retrieval?', 'workflow:chunk_size', [512, 1024], 'workflow', H, G, params={'top_k': 5, 'chunk_size': 512, 'retriever': 'bm25'}),
    Q('Is k=5 better than k=10 for my agent?', 'workflow:top_k', [10, 5], 'workflow', H, G, params={'top_k': 5, 'chunk_size': 512}),
    Q('Is two-shot better than zero-shot for my agent?', 'workflow:n_examples', [0, 2], 'workflow', H, G, params=SHOTS),
    Q('does zero-shot hurt my agent?', 'workflow:n_examples', [2, 0], 'workflow', H, L, params=SHOTS),
    Q('Will a KL of 0.2 prevent the model from learning chain_sum?', 'kl_coef', [0.0, 0.2], 'chain_sum', H, L),
    Q('Sweep lr from 1e-5 to 1e-4 on chain_sum.', 'lr', [1e-5, 3e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    # a question written as a list: labelled parts and setup bullets
    Q('* factor: lr * levels: 1e-5, 3e-5, 1e-4 * task: chain_sum. Which lr is best?', 'lr', [1e-5, 3e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('factor: lr, levels: 1e-5, 3e-5, 1e-4, task: chain_sum. Which lr is best?', 'lr', [1e-5, 3e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('Setup: - group size 8 - lr 1e-5. Question: does kl 0.05 help chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, G, extra={'held': {'lr': 1e-5, 'group_size': 8}}),
    # levels listed "A or B", then a one-sided question about one of them
    Q('staleness 1 or 0: does going fully on-policy help countdown?', 'max_staleness', [1, 0], 'countdown', H, G),
    Q('lr 1e-5 or 1e-4: does the higher one help?', 'lr', [1e-5, 1e-4], 'chain_sum', H, G),
    # probe 14
    Q('temp 0.7 vs 1.0, basic arith, which better?', 'temperature', [1.0, 0.7], 'basic_arithmetic', H, TWO_SIDED),
    Q('Most of our countdown groups are all-zero reward early on, so they are dropped. Would keeping them help?', 'zero_variance_groups', ['drop', 'keep'], 'countdown', H, G),
    Q('How many steps does group size 8 save in reaching 0.6 on letter counting compared with 4?', 'group_size', [4, 8], 'letter_counting', LS, G, extra={'threshold': 0.6}),
    Q('Does group size 8 save steps in reaching 0.6 on letter counting?', 'group_size', [4, 8], 'letter_counting', LS, G, extra={'threshold': 0.6}),
    Q('Does the KL penalty slow down how quickly the reward climbs on countdown?', 'kl_coef', [0.0, 0.05], 'countdown', LS, L),
    Q('Does a single hop hurt my agent?', 'workflow:n_hops', [2, 1], 'workflow', H, L, params={'n_hops': 2, 'top_k': 5, 'retriever': 'bm25'}),
    # the setup's level of the question's setting is the control (probe 14)
    Q('For bfcl we use max_tokens 256. Some completions are cut off. Does 512 tokens help?', 'max_tokens', [256, 512], 'bfcl', H, G),
    Q('Currently max_tokens is 64 on basic arithmetic, and most answers are short. Can we cut it to 32 without losing accuracy?', 'max_tokens', [64, 32], 'basic_arithmetic', H, NI, 0.05),
    Q("The GRPO paper uses a group size of 64. We can't afford that; we use 4. Would 16 help countdown?", 'group_size', [4, 16], 'countdown', H, G),
    Q('We use weight decay 0.1. Would lowering it to 0.01 help letter counting?', 'weight_decay', [0.1, 0.01], 'letter_counting', H, G),
    Q('Our team trains on letter counting with full fine-tuning at lr 2e-5. Would LoRA rank 32 at lr 1e-4 be just as good?', 'lora', ['full', 32], 'letter_counting', H, EQ, 0.05, extra={'held': {}}),
    Q('We keep the temperature at 0.8 and group size 8. On countdown, would a KL of 0.01 hurt?', 'kl_coef', [0.0, 0.01], 'countdown', H, L, extra={'held': {'temperature': 0.8, 'group_size': 8}}),
    Q('Does few_shot 4 improve the judge score by at least 1 point on the 0-10 rubric?', 'workflow:few_shot', [2, 4], 'workflow', H, G, params={'rubric': 'Score clarity from 0 to 10.', 'few_shot': 2, 'max_words': 200}),
    Q('Does limiting answers to 100 words hurt my writer?', 'workflow:max_words', [200, 100], 'workflow', H, L, params={'rubric': 'Score clarity from 0 to 10.', 'few_shot': 2, 'max_words': 200}),
    # "clipping" after setup about the gradient clip is that clip; no clipping as the control
    Q('The default gradient clip is 1.0. Our grad norms spike on countdown. Would clipping at 0.3 give better accuracy?', 'max_grad_norm', [1.0, 0.3], 'countdown', H, G),
    Q('Would clipping at 0.3 help countdown?', 'clip_eps', [0.2, 0.3], 'countdown', H, G),
    Q('We train without gradient clipping. Does clipping at 1.0 help countdown?', 'max_grad_norm', [1e6, 1.0], 'countdown', H, G),
    Q('Does gradient clipping at 1.0 help countdown relative to no gradient clipping?', 'max_grad_norm', [1e6, 1.0], 'countdown', H, G),
    # levels with scores split by ";" are results together; the best is the control
    Q('We ran kl 0.05 and it gave 0.55 on countdown; kl 0 gave 0.6. Would kl 0.01 beat no KL?', 'kl_coef', [0.0, 0.01], 'countdown', H, G),
    Q('staleness 4 gave 0.5; 1 gave 0.6. Is fully on-policy even better?', 'max_staleness', [1, 0], 'chain_sum', H, G),
    Q('does group size 16 slow training down?', 'group_size', [4, 16], 'chain_sum', COST, G),
    Q('Does top-k 20 slow training down?', 'workflow:top_k', [5, 20], 'workflow', COST, G, params={'top_k': 5, 'chunk_size': 512}),
    Q('Our guessing game agent gets 7 guesses per game. Would giving it only 4 guesses hurt?', 'max_turns', [7, 4], 'guess_number', H, L),
    # "Is it?" after a claim asks the claim
    Q('We run at temperature 1.0. A colleague says 0.8 is better for small models. Is it, on basic arithmetic?', 'temperature', [1.0, 0.8], 'basic_arithmetic', H, G),
    Q('A paper claims RLOO beats GRPO. Is that true on countdown?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, G),
    Q('Is the area under the reward curve larger with group size 8 on countdown?', 'group_size', [4, 8], 'countdown', LS, G),
    Q('Is 0.05 KL better? Or 0.1?', 'kl_coef', [0.0, 0.05, 0.1], 'chain_sum', H, G),
    # a follow-up question adds a level; the first question's control (the default) stays
    Q('Does group size 8 help chain_sum? And with 16?', 'group_size', [4, 8, 16], 'chain_sum', H, G),
    Q('Does lr 5e-5 help? What about 1e-4?', 'lr', [2e-5, 5e-5, 1e-4], 'chain_sum', H, G),
    Q('Does lr 5e-5 help? If so, what about 1e-4?', 'lr', [2e-5, 5e-5, 1e-4], 'chain_sum', H, G),
    Q('Does RLOO help countdown? What about REINFORCE?', 'algorithm', ['grpo', 'rloo', 'reinforce'], 'countdown', H, G),
    Q('Does lr 5e-5 beat 1e-5? What about 1e-4?', 'lr', [1e-5, 5e-5], 'chain_sum', H, G),
    # an outcome's values in the setup are results, not levels (lr 0.27 and 0.68 were arms)
    Q('We train on chain_sum with GRPO and the held-out accuracy climbs from 0.27 to about 0.68 in 20 steps. I wonder if a larger learning rate would get us there faster. Would lr 5e-5 learn faster?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'held': {'algorithm': 'grpo'}}),
    Q('We train on chain_sum with GRPO and the held-out accuracy climbs from 0.27 to about 0.68 in 20 steps. Would lr 5e-5 learn faster?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'held': {'algorithm': 'grpo'}}),
    # the level named again after the list is the one asked about: the treatment
    Q('staleness 0 vs 4 on chain_sum: does on-policy learn faster?', 'max_staleness', [4, 0], 'chain_sum', LS, G),
    Q('lora r8 vs full fine-tuning: is full fine-tuning worth it on chain_sum?', 'lora', [8, 'full'], 'chain_sum', H, G),
    Q('rloo vs grpo on chain_sum -- is grpo better?', 'algorithm', ['rloo', 'grpo'], 'chain_sum', H, G),
    Q('kl 0.1 vs 0 on chain_sum: is no KL better?', 'kl_coef', [0.1, 0.0], 'chain_sum', H, G),
    Q('kl 0 vs 0.1 on chain_sum: does dropping the kl penalty help?', 'kl_coef', [0.1, 0.0], 'chain_sum', H, G),
    Q('kl 0 vs 0.05 on countdown: does the kl penalty help?', 'kl_coef', [0.0, 0.05], 'countdown', H, G),
    # the tokens allowed per completion are the budget; the tokens a run uses are cost
    Q('how many tokens should I allow per completion on chain_sum?', 'max_tokens', [32, 16, 64], 'chain_sum', H, TWO_SIDED),
    Q('how many tokens per completion should I allow on countdown?', 'max_tokens', [48, 24, 96], 'countdown', H, TWO_SIDED),
    Q('how many tokens per completion does RLOO use vs GRPO?', 'algorithm', ['grpo', 'rloo'], 'chain_sum', COST, TWO_SIDED),
    # "get <task> to 0.7" is a threshold, not an lr level; "compared to" names the control
    Q('does lr 5e-5 get chain_sum to 0.7 within 3 steps compared to 2e-5?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'threshold': 0.7}),
    Q('does lr 5e-5 get chain_sum within 3 steps to 0.7 compared to 2e-5?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'threshold': 0.7}),
    Q('does lr 5e-5 reach 0.7 on chain_sum within 10 steps, compared to 2e-5?', 'lr', [2e-5, 5e-5], 'chain_sum', LS, G, extra={'threshold': 0.7}),
    # probe 15: the test's level is no level
    Q('does lr 1e-4 hurt chain_sum at the 0.05 significance level?', 'lr', [2e-5, 1e-4], 'chain_sum', H, L),
    Q('does lr 1e-4 help chain_sum at the 5% level?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    Q('does kl 0.1 reduce accuracy on chain_sum by at least 0.02 at the 0.05 level?', 'kl_coef', [0.0, 0.1], 'chain_sum', H, L, extra={'min_effect': 0.02}),
    # margins written as a tolerance
    Q('is kl 0.01 no worse than no kl on countdown, tolerating a 2-point drop?', 'kl_coef', [0.0, 0.01], 'countdown', H, NI, 0.02),
    Q('is kl 0.01 no worse than zero on chain_sum, tolerating a 0.03 drop?', 'kl_coef', [0.0, 0.01], 'chain_sum', H, NI, 0.03),
    Q('I want to know if reinforce is at least as good as rloo on leg_counting, allowing a 4-point margin', 'algorithm', ['rloo', 'reinforce'], 'leg_counting', H, NI, 0.04),
    Q('is RLOO no worse than GRPO on countdown with a 2-point tolerance?', 'algorithm', ['grpo', 'rloo'], 'countdown', H, NI, 0.02),
    Q('Is group size 8 as good as 16 on countdown? Margin: 3 points.', 'group_size', [16, 8], 'countdown', H, EQ, 0.03),
    # numbers written loosely
    Q('would 3 times 10^-5 as the learning rate improve countdown accuracy?', 'lr', [2e-5, 3e-5], 'countdown', H, G),
    Q('does 2 times 10^-5 vs 6 times 10^-5 as the lr matter on chain_sum?', 'lr', [2e-5, 6e-5], 'chain_sum', H, TWO_SIDED),
    Q('does a lr of 3x10-5 help chain sum?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G),
    Q('does an lr of 1 e-4 help chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', H, G),
    Q('Is lr 0,00005 better than 0,00002 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G),
    Q('Is a group size of one useless compared to 4 on chain_sum?', 'group_size', [4, 1], 'chain_sum', H, TWO_SIDED),
    # a level written "merge=none", algorithms misspelt: the control stays the one compared against
    Q('does merge=none cost more wall time than tree on mastermind?', 'merge', ['tree', 'none'], 'mastermind', COST, G),
    Q('is RLO better than GRPO on letter couting?', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, G),
    Q('is GPRO better than RLOOO on chain_sum?', 'algorithm', ['rloo', 'grpo'], 'chain_sum', H, G),
    # the step the comparison is made at is the run's length (not a step where something happened)
    Q('Does lr 5e-5 beat 2e-5 at step 30 on chain_sum?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'steps': 30}),
    Q('does lr 5e-5 beat 2e-5 on letter counting, measured at step 40?', 'lr', [2e-5, 5e-5], 'letter_counting', H, G, extra={'steps': 40}),
    Q('does lr 5e-5 beat 2e-5 on countdown by step 40?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'steps': 40}),
    Q('does kl 0.05 stop the collapse at step 30 on chain_sum?', 'kl_coef', [0.0, 0.05], 'chain_sum', H, TWO_SIDED, extra={'steps': None}),
    # temperature adjectives; outcome and direction words
    Q('does a hotter sampling temperature improve held-out accuracy on countdown?', 'temperature', [1.0, 1.2], 'countdown', H, G),
    Q('does a warmer rollout temperature hurt letter counting?', 'temperature', [1.0, 1.2], 'letter_counting', H, L),
    Q('grp size 8 vs 4 on basic arithmetic in 30 steps - faster?', 'group_size', [4, 8], 'basic_arithmetic', LS, G, extra={'steps': 30}),
    Q('does group size 16 take longer to train than group size 4 on countdown?', 'group_size', [4, 16], 'countdown', COST, G),
    Q('does group size 16 take longer than 4 on countdown, in wall time?', 'group_size', [4, 16], 'countdown', COST, G),
    Q('Does a learning rate of 3e-5 or 5e-5 beat 2e-5 on chain_sum?', 'lr', [2e-5, 3e-5, 5e-5], 'chain_sum', H, G),
    Q('Would lr 4e-5 or 8e-5 improve on the default lr for countdown?', 'lr', [2e-5, 4e-5, 8e-5], 'countdown', H, G),
    Q('is lr 1e-5 or 1e-4 better on chain_sum?', 'lr', [1e-5, 1e-4], 'chain_sum', H, TWO_SIDED),
    Q('if we double the KL coefficient from 0.02, does chain_sum accuracy drop?', 'kl_coef', [0.02, 0.04], 'chain_sum', H, L),
    Q('does raising the group size to 8 make held-out accuracy fall on letter counting?', 'group_size', [4, 8], 'letter_counting', H, L),
    Q('does kl 0.1 help chain_sum without an accuracy drop?', 'kl_coef', [0.0, 0.1], 'chain_sum', H, G),
    # a step count where something happened is context, not the run's length (probe 14)
    Q('Our runs stall after 10 steps on countdown. Does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'steps': None}),
    Q('Training collapses within 30 steps on countdown; would kl 0.05 help within 60 steps?', 'kl_coef', [0.0, 0.05], 'countdown', LS, G, extra={'steps': 60}),
    Q('We train for 40 steps. Does lr 5e-5 help countdown?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'steps': 40}),
    Q('does lr 1e-4 save training steps on chain_sum?', 'lr', [2e-5, 1e-4], 'chain_sum', LS, G),
    Q('how high should the KL be on chain_sum?', 'kl_coef', [0.0, 0.05, 0.1], 'chain_sum', H, TWO_SIDED),
    Q('does sampling at 0.3 instead of 0.7 help chain_sum?', 'temperature', [0.7, 0.3], 'chain_sum', H, G),
    # a workflow's PARAMS by other forms of their names (probes 13/14)
    Q('is dense retrieval better than bm25 for my agent?', 'workflow:retriever', ['bm25', 'dense'], 'workflow', H, G, params={'retriever': 'bm25', 'top_k': 5}),
    Q('do hints given twice as often help my agent?', 'workflow:hint_every', [2, 1], 'workflow', H, G, params=HINTS),
    Q('does showing hints half as often hurt my agent?', 'workflow:hint_every', [2, 4], 'workflow', H, L, params=HINTS),
    Q("does using gpt-4o as the judge model instead of gpt-4o-mini change my agent's score?", 'workflow:judge_model', ['gpt-4o-mini', 'gpt-4o'], 'workflow', H, TWO_SIDED, params={'judge_model': 'gpt-4o-mini', 'style': 'formal'}),
    Q('does sampling at 0.3 instead of 0.7 help my agent?', 'workflow:temperature', [0.7, 0.3], 'workflow', H, G, params={'temperature': 0.7, 'max_attempts': 3}),
    Q('does training on a 5x5 board help?', 'workflow:board_size', [3, 5], 'workflow', H, G, params=GAME),
    Q('is a 5x5 board better than 3x3?', 'workflow:board_size', [3, 5], 'workflow', H, G, params=GAME),
    # probe 16: a step count where a result was seen is no run length; results fold no level
    Q('Does lr 5e-5 help chain_sum? We got 0.5 after 40 steps.', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'steps': None}),
    Q('Our model scores 0.68 on chain_sum after 20 steps. Does lr 3e-5 help?', 'lr', [2e-5, 3e-5], 'chain_sum', H, G, extra={'steps': None}),
    Q('Setup: mastermind at the tiny level, 6 guesses, merge=timeline, GRPO. The model cracks 30% of codes after 40 steps. Does tree merging beat timeline?', 'merge', ['timeline', 'tree'], 'mastermind', H, G, extra={'steps': None}),
    Q('We keep staleness at 1 and lr at 2e-5. Our chain_sum accuracy stalls at 0.6 after 15 steps. Would dropping stale samples entirely help?', 'max_staleness', [1, 0], 'chain_sum', H, G, extra={'steps': None, 'held': {'lr': 2e-5}}),
    Q("Does a KL of 0.05 help countdown at lr 5e-5? We've seen 0.3 accuracy without KL.", 'kl_coef', [0.0, 0.05], 'countdown', H, G, extra={'held': {'lr': 5e-5}}),
    Q('Does a KL of 0.05 help countdown? Without KL we get 0.3.', 'kl_coef', [0.0, 0.05], 'countdown', H, G),
    Q('Is RLOO better than GRPO on letter counting? We use 8 samples per prompt and lr 3e-5. Accuracy with GRPO was 0.51.', 'algorithm', ['grpo', 'rloo'], 'letter_counting', H, G, extra={'held': {'lr': 3e-5, 'group_size': 8}}),
    Q('Does weight decay 0.05 help letter counting? Last time weight decay 0.1 made things worse.', 'weight_decay', [0.0, 0.05], 'letter_counting', H, G),
    Q('Does a KL of 0.1 hurt accuracy on countdown within 30 steps?', 'kl_coef', [0.0, 0.1], 'countdown', H, L, extra={'steps': 30}),
    # a held setting, then the task, then the question
    Q('With group size 8 on chain_sum, does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'group_size': 8}}),
    Q('With LoRA rank 8 on chain_sum, does lr 2e-4 beat lr 1e-4?', 'lr', [1e-4, 2e-4], 'chain_sum', H, G, extra={'held': {'lora': 8}}),
    Q('With 4 prompts x 8 samples per step on chain_sum, does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'chain_sum', H, G, extra={'held': {'group_size': 8, 'batch_groups': 4}}),
    # the task's runs in setup, and what they did at their settings
    Q('Our countdown runs use lr 1e-5. Would a KL penalty of 0.05 help?', 'kl_coef', [0.0, 0.05], 'countdown', H, G, extra={'held': {'lr': 1e-5}}),
    Q('Our countdown runs at lr 1e-5 keep collapsing around step 30. We use RLOO with group size 8. Would a KL penalty of 0.05 stabilize them?', 'kl_coef', [0.0, 0.05], 'countdown', H, TWO_SIDED, extra={'held': {'lr': 1e-5, 'algorithm': 'rloo', 'group_size': 8}, 'steps': None}),
    Q("Does group size 8 raise my agent's judge score by at least 1 point on the 0-10 rubric?", 'group_size', [4, 8], 'workflow', H, G, params={'judge_model': 'gpt-4o-mini', 'rubric': 'Score clarity from 0 to 10.', 'judge_temperature': 0.0, 'min_words': 150}, extra={'min_effect': 1.0}),
    # a task's level in brackets, or in the asking sentence away from its name
    Q('The countdown task at the standard level barely learns (0.00 -> 0.01). At the tiny level, does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'task_levels': {'countdown': 'tiny'}}),
    Q('On countdown (tiny level), does lr 5e-5 help?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'task_levels': {'countdown': 'tiny'}}),
    Q('At the tiny level, does lr 5e-5 help countdown?', 'lr', [2e-5, 5e-5], 'countdown', H, G, extra={'task_levels': {'countdown': 'tiny'}}),
    # a workflow's PARAMS: a flag taken away past an adjective, a unit-suffixed name
    Q('Does turning off the unit tests hurt my agent?', 'workflow:run_tests', [True, False], 'workflow', H, L, params={'max_attempts': 3, 'run_tests': True, 'timeout_s': 10.0}),
    Q('Does a 30 second timeout beat 10 seconds for my agent?', 'workflow:timeout_s', [10.0, 30.0], 'workflow', H, G, params={'max_attempts': 3, 'run_tests': True, 'timeout_s': 10.0}),
    # a scale in brackets after the score: the smallest effect in its units, as written
    Q("does style=casual improve my agent's rubric score (0-10) by at least 1 point?", 'workflow:style', ['formal', 'casual'], 'workflow', H, G, params={'judge_model': 'gpt-4o-mini', 'style': 'formal', 'max_words': 150}, extra={'min_effect': 1.0}),
]
# fmt: on

REFUSALS: list[tuple[str, type[UnmappableQuestion], str]] = [
    # episodes per step named as what varies: which of its two settings
    (
        "Does the number of rollouts per step matter (64 vs 16) on countdown?",
        UnreadableQuestion,
        "which are group_size x batch_groups; name the one to vary",
    ),
    # interactions between two settings, named or one of them held
    (
        "Does the KL penalty matter more for RLOO than for GRPO on chain_sum?",
        UnreadableQuestion,
        "whether kl_coef's effect depends on algorithm (an interaction)",
    ),
    (
        "does the group size help more at temperature 0.7 than at 1.0?",
        UnreadableQuestion,
        "whether group_size's effect depends on temperature (an interaction)",
    ),
    (
        "does kl help more with lora than without on chain_sum?",
        UnreadableQuestion,
        "whether kl_coef's effect depends on lora",
    ),
    (
        "Is the benefit of a larger group size on chain_sum robust to the learning rate?",
        UnreadableQuestion,
        "whether group_size's effect depends on lr",
    ),
    (
        "Does lr 1e-4 hurt chain_sum at the default group size but help at group size 16?",
        UnreadableQuestion,
        "whether lr's effect depends on group_size",
    ),
    # GRPO alone with no task; hardware; "my agent" with no workflow; a setting that cannot
    # be taken away asked whether it is needed
    (
        "Does GRPO make the model more truthful?",
        UnreadableQuestion,
        "names only GRPO, the default algorithm",
    ),
    ("What's the best GPU for GRPO?", UnreadableQuestion, "names only GRPO"),
    ("does lr 1e-4 help my agent?", UnreadableQuestion, "pass your workflow file"),
    (
        "Is the clip range necessary on chain_sum?",
        UnreadableQuestion,
        "clip_eps cannot be turned off here",
    ),
    # MATH in capitals is the competition benchmark, not arithmetic; other benchmarks by name
    ("does lr 1e-4 help on MATH?", UnreadableQuestion, "'MATH' (the competition-mathematics"),
    ("does GRPO beat RLOO on MATH-500?", UnreadableQuestion, "is not a task this planner ships"),
    ("does lr 1e-4 help on AIME problems?", UnreadableQuestion, "'aime' is not a task"),
    # two batches that differ in both the group size and the total: two settings at once
    (
        "does 8 groups of 8 beat 4 groups of 4 on chain_sum?",
        UnreadableQuestion,
        "change two settings at once",
    ),
    # the default algorithm alone is whether training helps at all, not GRPO vs RLOO
    ("does GRPO help countdown?", UnreadableQuestion, "compares no two settings"),
    ("is GRPO good for chain_sum?", UnreadableQuestion, "compares no two settings"),
    ("does GRPO beat no training on chain_sum?", UnreadableQuestion, "compares no two settings"),
    # below a default that is off already
    (
        "does a weaker KL penalty hurt chain_sum?",
        UnreadableQuestion,
        "does not exist: name the level",
    ),
    # an interaction across models
    (
        "does a 360M model benefit more from lr 1e-4 than a 135M model on chain_sum?",
        UnreadableQuestion,
        "(an interaction)",
    ),
    # an interaction: one setting's effect on two tasks set against each other
    (
        "does a KL penalty help the calculator task more than arithmetic?",
        UnreadableQuestion,
        "(an interaction)",
    ),
    (
        "does lr 1e-4 on countdown help more than on chain_sum?",
        UnreadableQuestion,
        "(an interaction)",
    ),
    (
        "does the group size matter more for countdown than for chain_sum?",
        UnreadableQuestion,
        "(an interaction)",
    ),
    # whether it learns, one level of anything named: no two settings compared
    ("does GRPO learn chain_sum?", UnreadableQuestion, "compares no two settings"),
    (
        "does GRPO learn chain_sum within 30 steps at lr 1e-4?",
        UnreadableQuestion,
        "compares no two settings",
    ),
    (
        "does training on chain_sum generalize to held-out tasks?",
        UnreadableQuestion,
        "compares no two settings",
    ),
    # trained on one task, judged on another
    (
        "does training on chain_sum raise held-out accuracy on basic_arithmetic?",
        UnreadableQuestion,
        "transfers to another",
    ),
    (
        "does training on chain_sum transfer to other tasks?",
        UnreadableQuestion,
        "name the task it should transfer to",
    ),
    ("do two epochs over the data help?", UnreadableQuestion, "no fixed dataset to pass over"),
    ("do 2 ppo epochs help on chain_sum?", UnreadableQuestion, "no inner epochs"),
    ("what is the capital of France?", NotAboutTraining, "not a question about training"),
    ("write me a poem", NotAboutTraining, "not a question about training"),
    ("hello", NotAboutTraining, "not a question about training"),
    ("asdf qwer zxcv", NotAboutTraining, "not a question about training"),
    ("Which GPU should I buy?", NotAboutTraining, "not a question about training"),
    ("does the model learn better?", UnreadableQuestion, "no run setting or task named"),
    ("does a step-by-step prompt help?", UnreadableQuestion, "no run setting or task named"),
    ("does lr 5 help on arithmetic?", UnreadableQuestion, "lr must be > 0 and <= 1"),
    ("does group size 2.5 help?", UnreadableQuestion, "not a whole number"),
    ("does clip range 1.5 help?", UnreadableQuestion, "clip_eps must be > 0 and < 1"),
    ("does a larger group size and a smaller lr help?", UnreadableQuestion, "varies one at a time"),
    (
        "Is RLOO with group size 8 better than GRPO with group size 4?",
        UnreadableQuestion,
        "varies one at a time",
    ),
    ("Does GSPO beat GRPO on chain_sum?", UnreadableQuestion, "'gspo' is not a setting"),
    # trained against untrained: every study's control answers it, and the bench measured it
    (
        "Does GRPO training help letter counting at all?",
        UnreadableQuestion,
        "whether the model can learn letter_counting",
    ),
    (
        "Does RL fine-tuning with GRPO improve chain_sum over the base model?",
        UnreadableQuestion,
        "whether the model can learn chain_sum",
    ),
    (
        "does training improve chain_sum compared to no training?",
        UnreadableQuestion,
        "whether the model can learn chain_sum",
    ),
    ("Does DAPO beat GRPO on chain_sum?", UnreadableQuestion, "'dapo' is not a setting"),
    (
        "Does a token-level loss beat a sequence-level loss on chain_sum?",
        UnreadableQuestion,
        "'token-level loss' is not a setting",
    ),
    ("does humaneval benefit from a KL penalty?", UnreadableQuestion, "'humaneval' is not a task"),
    (
        "does training on chain_sum transfer to basic_arithmetic?",
        UnreadableQuestion,
        "transfers to another",
    ),
    ("does countdown training generalize to chain sums?", UnreadableQuestion, "transfers to"),
    ("do bigger models learn arithmetic faster?", UnreadableQuestion, "serve at least two"),
    (
        "does a bigger model learn the calculator task faster?",
        UnreadableQuestion,
        "it compares base models, but the gateway",
    ),
    (
        "does model size matter on the guessing game?",
        UnreadableQuestion,
        "it compares base models, but the gateway",
    ),
    (
        "does 360M beat 135M on arithmetic?",
        UnreadableQuestion,
        "it compares base models, but the gateway",
    ),
    (
        "does Qwen 7B learn arithmetic faster than SmolLM2 135M?",
        UnreadableQuestion,
        "it compares base models, but the gateway",
    ),
    (
        "do smaller models learn the easy task slower?",
        UnreadableQuestion,
        "it compares base models, but the gateway",
    ),
    ("what is the meaning of life?", NotAboutTraining, "not a question about training"),
    ("tell me a joke", NotAboutTraining, "not a question about training"),
    ("how do I bake bread?", NotAboutTraining, "not a question about training"),
    ("translate this into French", NotAboutTraining, "not a question about training"),
    ("who won the world cup?", NotAboutTraining, "not a question about training"),
    ("does training help?", UnreadableQuestion, "no run setting or task named"),
    ("does RL work?", UnreadableQuestion, "no run setting or task named"),
    ("how should I train my model?", UnreadableQuestion, "no run setting or task named"),
    (
        "does gsm8k benefit from a higher learning rate?",
        UnreadableQuestion,
        "'gsm8k' is not a task this planner ships",
    ),
    (
        "does humaneval training help arithmetic?",
        UnreadableQuestion,
        "'humaneval' is not a task this planner ship",
    ),
    ("does lr 0 help?", UnreadableQuestion, "lr level 0 is out of bounds"),
    # a default of 0 scaled stays 0: the level must be named
    ("would halving the KL penalty hurt chain_sum?", UnreadableQuestion, "kl_coef's default is 0"),
    ("does lr 2 help arithmetic?", UnreadableQuestion, "lr level 2 is out of bounds"),
    ("does a KL penalty of -1 help?", UnreadableQuestion, "kl_coef level -1 is out of bounds"),
    ("does group size 5000 help?", UnreadableQuestion, "group_size level 5000 is out of bounds"),
    ("does temperature 3 help?", UnreadableQuestion, "temperature level 3 is out of bounds"),
    ("does weight decay 2 help?", UnreadableQuestion, "weight_decay level 2 is out of bounds"),
    ("does clipping epsilon 0 help?", UnreadableQuestion, "clip_eps level 0 is out of bounds"),
    (
        "does the learning rate schedule matter?",
        UnreadableQuestion,
        "'learning rate schedule' is not a settin",
    ),
    (
        "does a group size of 16 with lr 1e-5 help?",
        UnreadableQuestion,
        "it names 2 settings (group_size, lr); a ",
    ),
    (  # one optimizer update per batch: PPO epochs are no setting (not "PPO" the algorithm)
        "does increasing the number of PPO epochs per batch improve sample efficiency on countdown?",
        UnreadableQuestion,
        "'ppo epochs per batch' is not a setting",
    ),
    ("do 4 epochs per batch beat 1?", UnreadableQuestion, "'epochs per batch' is not a setting"),
    # sampling and batching knobs of other trainers, refused by name (not "no setting named")
    ("does top_p 0.9 help on countdown?", UnreadableQuestion, "'top_p' is not a setting"),
    (
        "does gradient accumulation help?",
        UnreadableQuestion,
        "'gradient accumulation' is not a setting",
    ),
    (
        "does mask_truncated_completions help on countdown?",
        UnreadableQuestion,
        "'mask_truncated_completions' is not a setting",
    ),
    (
        "does a repetition penalty of 1.1 help on arithmetic?",
        UnreadableQuestion,
        "'repetition penalty' is not a setting",
    ),
    ("do more updates per batch help on arithmetic?", UnreadableQuestion, "is not a setting"),
    (  # trained against untrained, not SmolLM2 against Qwen
        "does GRPO training improve countdown relative to the base model?",
        UnreadableQuestion,
        "it asks whether the model can learn countdown",
    ),
    (
        "does adding a length penalty help countdown?",
        UnreadableQuestion,
        "'length penalty' is not a setting",
    ),
    (
        "does using 4 mini-batches per step help?",
        UnreadableQuestion,
        "'mini-batches per step' is not a setting",
    ),
    (  # "coefficient" alone is no misspelt "kl coefficient"
        "does the entropy coefficient matter on countdown?",
        UnreadableQuestion,
        "'entropy coefficient' is not a setting",
    ),
    (
        "does adding a format reward help chain_sum?",
        UnreadableQuestion,
        "'format reward' is not a setting",
    ),
    (  # every arm trains on the task it is judged on: another task trained on is refused
        "train on chain_sum, judge on basic_arithmetic: does lr 1e-4 help?",
        UnreadableQuestion,
        "it trains on chain_sum and judges on basic_arithmetic",
    ),
    (  # it trained and judged every arm on guess_number, never on arithmetic
        "does the learning rate matter for held-out guess_number after training on arithmetic?",
        UnreadableQuestion,
        "it trains on arithmetic and judges on guess_number",
    ),
    (
        "trained on countdown, does group size 8 help on chain_sum?",
        UnreadableQuestion,
        "it trains on countdown and judges on chain_sum",
    ),
    (  # two tasks set against each other are no task mix
        "which is faster to learn: letter_counting or spell_backward?",
        UnreadableQuestion,
        "it compares the tasks letter_counting and spell_backward themselves",
    ),
    ("is countdown harder than arithmetic?", UnreadableQuestion, "it compares the tasks"),
    (  # Dr. GRPO is GRPO without the std division: against RLOO two settings differ
        "does Dr. GRPO beat RLOO?",
        UnreadableQuestion,
        "it names 2 settings (scale_rewards, algorithm)",
    ),
    # one level against several: a study answers whether ANY treatment beats its control,
    # and with the first after "than" as control it would ask whether 3e-5 or 5e-5 beats 1e-5
    (
        "does lr 1e-4 beat 1e-5, 3e-5 and 5e-5 on countdown?",
        UnreadableQuestion,
        "it asks whether lr 0.0001 beats each of 1e-05, 3e-05 and 5e-05",
    ),
    ("is rloo better than grpo and reinforce?", UnreadableQuestion, "beats each of grpo and"),
    ("is group size 8 better than 4, 16 and 32?", UnreadableQuestion, "which group_size is best"),
    # methods the trainer does not have, refused by name (not mapped onto a nearby setting)
    ("Does ReMax beat RLOO on chain_sum?", UnreadableQuestion, "'remax' is not a setting"),
    (
        "Does using the k3 KL estimator help chain_sum?",
        UnreadableQuestion,
        "'k3 kl estimator' is not",
    ),
    (
        "Does truncated importance sampling help with stale samples on chain_sum?",
        UnreadableQuestion,
        "'truncated importance sampling' is not a setting",
    ),
    ("Does overlong filtering help?", UnreadableQuestion, "'overlong filtering' is not a setting"),
    (
        "does masking out truncated responses help countdown accuracy?",
        UnreadableQuestion,
        "'masking out truncated responses' is not a setting",
    ),
    (
        "does filtering overlong responses help countdown?",
        UnreadableQuestion,
        "'filtering overlong responses' is not a setting",
    ),
    (  # a benchmark not shipped, named in setup with a setting: still refused
        "We train on gsm8k with lr 2e-5. Does group size 8 help?",
        UnreadableQuestion,
        "'gsm8k' is not a task this planner ships",
    ),
    (  # what else to try: the settings named are the ones in use, none is asked about
        "We train countdown with GRPO and lr 2e-5. Is it worth trying something else?",
        UnreadableQuestion,
        "it asks what else to try, not about one setting",
    ),
    (  # what else to try: the settings named are the ones in use, none is asked about
        "We train countdown with GRPO and lr 2e-5. Is it worth trying something else?",
        UnreadableQuestion,
        "it asks what else to try, not about one setting",
    ),
    (  # two questions joined by "and", each with its own verb
        "does group size 8 help countdown and lr 1e-4 help chain_sum?",
        UnreadableQuestion,
        "it names 2 settings (group_size, lr)",
    ),
    (
        "Does DAPO's overlong reward shaping hurt chain_sum?",
        UnreadableQuestion,
        "'overlong reward shaping' is not a setting",
    ),
    (
        "Does bf16 vs fp32 matter on countdown?",
        UnreadableQuestion,
        "'bf16 vs fp32' is not a setting",
    ),
    ("Does SFT before RL help countdown?", UnreadableQuestion, "'sft' is not a setting"),
    (
        "does DAPO dynamic sampling help countdown?",
        UnreadableQuestion,
        "does dropping zero-variance",
    ),
    ("does DAPO beat GRPO?", UnreadableQuestion, "'dapo' is not a setting"),
    (
        "does lr 1e-4 help on Wordle?",
        UnreadableQuestion,
        "'wordle' is not a task this planner ships",
    ),
    ("Does kl 0.05 help on tic-tac-toe?", UnreadableQuestion, "'tic-tac-toe' is not a task"),
    (
        "Does group size 8 help on code generation?",
        UnreadableQuestion,
        "'code generation' is not a",
    ),
    (
        "Does chain-of-thought prompting help countdown?",
        UnreadableQuestion,
        "as a PARAM of your workflow",
    ),
    # PPO the algorithm has a learned critic: not read as RLOO (its clip and epochs still read)
    ("GRPO vs PPO on arithmetic?", UnreadableQuestion, "PPO trains a learned value critic"),
    ("does PPO beat GRPO on countdown?", UnreadableQuestion, "ask e.g. 'does RLOO beat GRPO?'"),
    ("Is DoRA better than LoRA on countdown?", UnreadableQuestion, "'dora' is not a setting"),
    (
        "Does LoRA on the attention layers only beat LoRA on all layers?",
        UnreadableQuestion,
        "'lora on the attention layers' is not",
    ),
    (
        "Does evaluating at temperature 0.7 instead of greedy change held-out accuracy on chain_sum?",
        UnreadableQuestion,
        "'evaluating at temperature' is not",
    ),
    (
        "Does training in bf16 hurt chain_sum?",
        UnreadableQuestion,
        "'training in bf16' is not a setting",
    ),
    # a method named only in setup, when the question varies nothing else, is what it asks
    (
        "Kimi k1.5 used a length penalty. Would it help countdown?",
        UnreadableQuestion,
        "'length penalty' is not a setting",
    ),
    # interactions worded without "more … than"
    ("Does group size 8 help more when the lr is high?", UnreadableQuestion, "(an interaction)"),
    (
        "will RL on letter counting carry over to spell backward?",
        UnreadableQuestion,
        "transfers to another",
    ),
    (
        "does GRPO improve letter counting over the untrained 135M model?",
        UnreadableQuestion,
        "can learn letter_counting",
    ),
    (
        "does running more rollout workers speed up training on chain_sum?",
        UnreadableQuestion,
        "'more rollout workers' is not a setting",
    ),
    (
        "do two policies trained together (solver + verifier) beat a single policy on countdown?",
        UnreadableQuestion,
        "'two policies trained together' is not a setting",
    ),
    (
        "does rejection sampling fine-tuning beat GRPO on chain_sum?",
        UnreadableQuestion,
        "'rejection sampling fine-tuning' is not a setting",
    ),
    (
        "does adding an entropy term (coef 0.001) help exploration on countdown?",
        UnreadableQuestion,
        "'entropy term' is not a setting",
    ),
    ("does RL even help chain_sum?", UnreadableQuestion, "can learn chain_sum"),
    (
        "will GRPO improve my base model on letter counting?",
        UnreadableQuestion,
        "can learn letter_counting",
    ),
    (
        "trained vs untrained on letter_counting — significant difference?",
        UnreadableQuestion,
        "can learn letter_counting",
    ),
    (
        "is 20 steps of training enough to beat the untrained model on chain_sum?",
        UnreadableQuestion,
        "can learn chain_sum",
    ),
    (
        "how many steps are needed to reach 0.6 on chain_sum?",
        UnreadableQuestion,
        "can learn chain_sum",
    ),
    # merging on a task of one call per episode would compare identical training
    ("does tree merging help chain_sum?", UnreadableQuestion, "one call per episode"),
    (
        "Is the optimal KL coefficient different for RLOO and GRPO?",
        UnreadableQuestion,
        "depends on algorithm",
    ),
    (
        "does the best lr differ between countdown and chain_sum?",
        UnreadableQuestion,
        "(an interaction)",
    ),
    # two tasks compared beside a setting held
    (
        "does chain_sum or countdown learn faster with group size 8?",
        UnreadableQuestion,
        "it compares two tasks (chain_sum or countdown), not two levels of a run setting",
    ),
    (
        "does countdown learn faster than chain sum under rloo?",
        UnreadableQuestion,
        "it compares two tasks (countdown or chain_sum)",
    ),
    (
        "which learns faster with lr 1e-4, countdown or chain_sum?",
        UnreadableQuestion,
        "it compares two tasks (countdown or chain_sum)",
    ),
    (
        "is letter counting easier than chain_sum with group size 16?",
        UnreadableQuestion,
        "it compares two tasks (letter_counting or chain_sum)",
    ),
    (
        "does lr 1e-4 help more on chain_sum or countdown?",
        UnreadableQuestion,
        "it compares two tasks (chain_sum or countdown)",
    ),
    # a setting set against more training steps (read as a cost equivalence on one setting)
    (
        "Compute-matched: is group size 16 for 10 steps better than group size 4 for 40 steps?",
        UnreadableQuestion,
        "it sets group_size against the number of training steps (10 vs 40 steps)",
    ),
    (
        "At matched compute, does a larger group beat more steps?",
        UnreadableQuestion,
        "it sets group_size against the number of training steps (more steps)",
    ),
    # methods the trainer lacks, once read as a neighbouring setting
    (
        "Does dropping truncated completions help countdown?",
        UnreadableQuestion,
        "'dropping truncated completions' is not a setting",
    ),
    (
        "Is putting the KL in the reward better than in the loss?",
        UnreadableQuestion,
        "'kl in the reward' is not a setting",
    ),
    ("Does best-of-n with n=16 beat n=4?", UnreadableQuestion, "'best-of-n' is not a setting"),
    ("Does Adam beat SGD?", UnreadableQuestion, "'adam' is not a setting"),
    ("Does DPO beat GRPO on letter counting?", UnreadableQuestion, "'dpo' is not a setting"),
    (
        "Does adding a bonus reward for the answer format help letter counting?",
        UnreadableQuestion,
        "'bonus reward for the answer format' is not a setting",
    ),
    # a level word tied to one level before the verb: a second setting (it was dropped)
    (
        "Does lr 2e-4 with LoRA beat lr 1e-4 on chain_sum?",
        UnreadableQuestion,
        "it names 2 settings (lr, lora)",
    ),
    (
        "Is lora rank 8 at lr 2e-4 no worse than full fine-tuning on letter counting?",
        UnreadableQuestion,
        "'at lr 2e-4' after the LoRA rank would change the LoRA arm's lr alone",
    ),
]


def _check(reading: Any, case: Q) -> None:
    got = {
        "factor": reading.factor,
        "levels": reading.levels,
        "control": reading.control,
        "task": reading.task,
        "outcome": reading.outcome,
        "direction": reading.direction,
        "margin": reading.margin,
    }
    want = {
        "factor": case.factor,
        "levels": case.levels,
        "control": case.levels[0],
        "task": case.task,
        "outcome": case.outcome,
        "direction": case.direction,
        "margin": case.margin,
    }
    for key, value in case.extra.items():
        got[key] = getattr(reading, key)
        want[key] = value
    assert got == want, f"{case.question!r}: {reading.assumptions}"
    assert [type(level) for level in reading.levels] == [type(level) for level in case.levels]


@pytest.mark.parametrize("case", CORPUS, ids=[case.question for case in CORPUS])
def test_each_question_of_the_corpus_reads_as_asked(case: Q) -> None:
    reading = read_question(case.question, served_models=case.served, workflow_params=case.params)
    _check(reading, case)
    assert reading.summary and reading.summary.endswith(".")
    # the reading is stored as JSON with the study: it must come back the same, types included
    again = Reading.model_validate_json(reading.model_dump_json())
    assert again == reading
    assert [type(level) for level in again.levels] == [type(level) for level in reading.levels]


@pytest.mark.parametrize(("question", "error", "says"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_questions_that_must_be_refused_are_refused_saying_why(
    question: str, error: type[UnmappableQuestion], says: str
) -> None:
    with pytest.raises(error) as raised:
        read_question(question, served_models=ONE)
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("bigger model or more steps: does 360M at 20 steps beat 135M at 60 steps on chain_sum?", "a larger model against more training steps"),
        ("does scaling from 135M to 360M help more than doubling the training steps?", "a larger model against more training steps"),
        ("is it better to train a 135M model for 60 steps or a 360M model for 20 steps on chain_sum?", "a larger model against more training steps"),
        ("does the 360M model need a lower lr than the 135M?", "depends on the model (an interaction)"),
        ("does Qwen 0.5B beat both smollm models on letter counting?", "beats each of the others"),
    ],
)  # fmt: skip
def test_questions_about_several_served_models_that_must_be_refused(question, says) -> None:
    served = ["Qwen/Qwen2.5-0.5B-Instruct", SMOL, SMOL_360]
    with pytest.raises(UnreadableQuestion) as raised:
        read_question(question, served_models=served)
    assert says in str(raised.value)


def test_the_corpus_holds_at_least_150_questions() -> None:
    assert len(CORPUS) + len(REFUSALS) >= 150


DOCS_AGENT_PARAMS = {"system_prompt": "Answer with the number only.", "attempts": 1}  # my_agent.py


def _quoted_questions(*, workflow: bool = False) -> list[str]:
    """Every question README.md and docs/*.md pass to `researcher start` or `plan` — with
    `--workflow` (the docs' my_agent.py) when `workflow`, else without."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for question, rest in re.findall(r"researcher (?:start|plan) \"([^\"]+\?)\"([^\n]*)", text):
            if ("--workflow" in rest) == workflow:
                found.append(question)
    return sorted(set(found))


def test_every_question_quoted_in_readme_and_docs_is_in_the_corpus_and_reads() -> None:
    quoted = _quoted_questions()
    assert quoted, "README.md quotes the demo question"
    in_corpus = {case.question for case in CORPUS}
    for question in quoted:
        assert question in in_corpus, f"{question!r} (quoted in the docs) is not in the corpus"
        read_question(question, served_models=ONE)


def test_every_workflow_question_in_the_docs_reads_on_the_docs_agent() -> None:
    quoted = _quoted_questions(workflow=True)
    assert quoted, "docs/researcher.md shows a --workflow question"
    for question in quoted:
        reading = read_question(question, served_models=ONE, workflow_params=DOCS_AGENT_PARAMS)
        assert reading.task == "workflow" and reading.factor.startswith("workflow:"), question


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("does a lower clip range make training more stable on countdown?", "more stable"),
        ("would a KL coefficient of 0.01 prevent reward hacking on countdown?", "reward hacking"),
        ("does a KL penalty stop the policy from collapsing on arithmetic?", "collapsing"),
        ("does RLOO reduce variance compared to GRPO on countdown?", "variance"),
        ("Does the model become more creative with temperature 1.5?", "creative"),
        ("Does the reward curve look smoother with RLOO on countdown?", "smoother"),
        (
            "Is the std of held-out accuracy across seeds lower with group size 16 than 4 on countdown?",
            "std of held-out accuracy across seeds",
        ),
    ],
)
def test_an_outcome_no_study_measures_is_said_not_passed_over(question: str, named: str) -> None:
    """Stability, collapse or reward hacking are not measured: the reading says so instead
    of "no other outcome named", and judges by held-out accuracy."""
    reading = read_question(question, served_models=ONE)
    assert reading.outcome == "heldout_accuracy"
    said = " ".join(reading.assumptions)
    assert f"{named!r} is no outcome this researcher measures" in said
    assert "no other outcome named" not in said


def test_pass_at_k_is_read_as_held_out_accuracy_and_k_above_1_is_said_unmeasured() -> None:
    one = read_question("does a larger group improve pass@1 on countdown?", served_models=ONE)
    assert one.outcome == "heldout_accuracy"
    assert any("pass@1 read as held-out accuracy" in a for a in one.assumptions)
    eight = read_question("does a larger group improve pass@8 on countdown?", served_models=ONE)
    assert eight.outcome == "heldout_accuracy"
    assert any("pass@8 is not measured" in a for a in eight.assumptions)


HINTED_AGENT = {"few_shot": 0, "system_prompt": "Answer.", "use_hint": False}


@pytest.mark.parametrize(
    ("question", "factor", "levels"),
    [
        ("does turning off the hint hurt my agent?", "workflow:use_hint", [True, False]),
        ("does turning the hint off hurt my agent?", "workflow:use_hint", [True, False]),
        ("does removing the hint help my agent?", "workflow:use_hint", [True, False]),
        ("does the hint help my agent?", "workflow:use_hint", [False, True]),
        (
            "does removing the system prompt hurt my agent?",
            "workflow:system_prompt",
            ["Answer.", ""],
        ),
    ],
)
def test_a_workflow_param_taken_away_is_the_treatment(question, factor, levels) -> None:
    """A PARAM switched off or removed: on (or the prompt as written) is the control."""
    reading = read_question(question, served_models=ONE, workflow_params=HINTED_AGENT)
    assert (reading.factor, reading.levels, reading.control) == (factor, levels, levels[0])


@pytest.mark.parametrize(
    ("question", "factor", "levels", "held"),
    [
        ("does group size 8 help chain_sum at lr 1e-5?", "group_size", [4, 8], {"lr": 1e-5}),
        ("does a KL penalty help on countdown at lr 5e-5?", "kl_coef", [0.0, 0.05], {"lr": 5e-5}),
        ("does a larger group help chain_sum with lr 3e-5?", "group_size", [4, 8], {"lr": 3e-5}),
        ("does lr 1e-4 help at a KL of 0.01 on chain_sum?", "lr", [2e-5, 1e-4], {"kl_coef": 0.01}),
        (
            "does RLOO beat GRPO with a group size of 8 on chain_sum?",
            "algorithm",
            ["grpo", "rloo"],
            {"group_size": 8},
        ),
        # the only setting named is the factor, not held
        ("does training at lr 1e-4 help chain_sum?", "lr", [2e-5, 1e-4], {}),
        # the default algorithm alone is the training named, not a factor beside the held one
        ("does GRPO help with a group size of 8?", "group_size", [4, 8], {}),
        ("is GRPO better with a KL of 0.1?", "kl_coef", [0.0, 0.1], {}),
        # a level off its default is the factor; a number before the setting's name
        ("does LoRA help with lr 1e-4?", "lora", ["full", 16], {"lr": 1e-4}),
        (
            "does a KL penalty help with 8 groups per step?",
            "kl_coef",
            [0.0, 0.05],
            {"batch_groups": 8},
        ),
        # an algorithm, a "when X is V" clause, a setting said fixed at a value, a sampling
        # setting, a leading clause set apart by a comma
        (
            "does a KL penalty help chain_sum under RLOO?",
            "kl_coef",
            [0.0, 0.05],
            {"algorithm": "rloo"},
        ),
        (
            "does a KL penalty still help when the group size is 16?",
            "kl_coef",
            [0.0, 0.05],
            {"group_size": 16},
        ),
        (
            "does weight decay 0.01 help chain_sum with lr set to 1e-4?",
            "weight_decay",
            [0.0, 0.01],
            {"lr": 1e-4},
        ),
        (
            "does group size 8 help chain_sum with kl fixed at 0.05?",
            "group_size",
            [4, 8],
            {"kl_coef": 0.05},
        ),
        (
            "does group size 8 help chain_sum at temperature 0.7?",
            "group_size",
            [4, 8],
            {"temperature": 0.7},
        ),
        ("at lr 5e-5, does kl 0.01 help countdown?", "kl_coef", [0.0, 0.01], {"lr": 5e-5}),
        (
            "holding the lr at 5e-5, is RLOO better than GRPO on chain_sum?",
            "algorithm",
            ["grpo", "rloo"],
            {"lr": 5e-5},
        ),
    ],
)
def test_a_setting_named_at_one_value_beside_the_factor_is_held_for_every_arm(
    question, factor, levels, held
) -> None:
    from researcher.planner.design_space import build_arms

    reading = read_question(question, served_models=ONE)
    assert (reading.factor, reading.levels, reading.held) == (factor, levels, held)
    for arm in build_arms(reading):
        for setting, value in held.items():
            where = arm.workflow_params if setting == "temperature" else arm.run
            assert where[setting] == value, arm.name


def test_a_setting_at_two_values_is_still_a_second_factor() -> None:
    with pytest.raises(UnreadableQuestion, match="varies one at a time"):
        read_question(
            "is lr 1e-4 with group size 8 better than lr 1e-5 with group size 4?", served_models=ONE
        )
    with pytest.raises(UnreadableQuestion, match="lr 5 is out of bounds"):
        read_question("does group size 8 help chain_sum at lr 5?", served_models=ONE)


@pytest.mark.parametrize(
    ("question", "levels", "min_effect"),
    [
        ("does group size 8 improve accuracy by at least 5 points on chain_sum?", [4, 8], 0.05),
        ("does group size 8 improve chain_sum accuracy by 5%?", [4, 8], 0.05),
        ("does lr 1e-4 improve chain_sum accuracy by 10%?", [2e-5, 1e-4], 0.1),
        ("does group size 8 help on chain_sum?", [4, 8], None),
    ],
)
def test_an_effect_the_question_names_is_the_smallest_effect_not_a_level(
    question, levels, min_effect
) -> None:
    from researcher.planner.wording import min_effect_for

    reading = read_question(question, served_models=ONE)
    assert reading.levels == levels and reading.min_effect == min_effect
    assert min_effect_for(reading, steps=20) == (min_effect or 0.05)


@pytest.mark.parametrize(
    ("question", "levels", "task"),
    [
        ("Can I cut max tokens to 64 without hurting chain_sum accuracy?", [128, 64], "chain_sum"),
        ("does limiting completions to 64 tokens hurt countdown?", [128, 64], "countdown"),
        ("does a max_tokens of 64 help chain_sum?", [32, 64], "chain_sum"),  # no cut: a raise
        ("does limiting completions to 16 tokens hurt countdown?", [48, 16], "countdown"),
    ],
)
def test_a_cut_to_more_than_the_tasks_default_is_still_a_cut(question, levels, task) -> None:
    reading = read_question(question, served_models=ONE)
    assert (reading.factor, reading.levels, reading.task) == ("max_tokens", levels, task)


AGENT_PARAMS = {"few_shot": 0, "system_prompt": "Answer with the number only.", "retries": 1,
                "temperature": 1.0, "tool": "calculator", "use_hint": False}  # fmt: skip


@pytest.mark.parametrize(
    ("question", "factor", "levels"),
    [
        ('does the default system prompt beat "Reply in words."?', "workflow:system_prompt",
         ["Reply in words.", "Answer with the number only."]),
        ("does reducing retries from 3 to 1 hurt?", "workflow:retries", [3, 1]),
        ("does lowering temperature from 1.5 to 1.0 hurt my agent?", "workflow:temperature", [1.5, 1.0]),
        ("does removing retries hurt my agent?", "workflow:retries", [1, 0]),
        ('does adding "Think carefully." to the system prompt help?', "workflow:system_prompt",
         ["Answer with the number only.", "Answer with the number only. Think carefully."]),
        ('compare system prompts "A short one." and "A long one." for my agent',
         "workflow:system_prompt", ["A short one.", "A long one."]),
        ("does 3 retries beat the default retries?", "workflow:retries", [1, 3]),
        ("does using 3 examples help my agent?", "workflow:few_shot", [0, 3]),
        ("does my agent need the hint?", "workflow:use_hint", [True, False]),
        ("which few_shot count is best for my agent?", "workflow:few_shot", [0, 1, 3]),
        ('does changing the tool from "search" to "calculator" help?', "workflow:tool",
         ["search", "calculator"]),
        ("does tool=python help?", "workflow:tool", ["calculator", "python"]),
        ('does an explicit system prompt ("Answer with the number only.") help compared to none?',
         "workflow:system_prompt", ["", "Answer with the number only."]),
    ],
)  # fmt: skip
def test_workflow_params_read_from_to_the_default_and_additions(question, factor, levels) -> None:
    reading = read_question(question, served_models=ONE, workflow_params=AGENT_PARAMS)
    assert (reading.factor, reading.levels, reading.control) == (factor, levels, levels[0])


def test_the_hypothesis_and_summary_say_the_held_settings_and_a_sweep_reads_in_order() -> None:
    from researcher.planner.wording import hypothesis_text

    reading = read_question("does RLOO beat GRPO on chain_sum at group size 8?", served_models=ONE)
    statement, _, _ = hypothesis_text(reading)
    assert statement.endswith("every arm at group_size 8.")
    assert "(every arm at group_size 8)" in reading.summary
    sweep = read_question("try group sizes 2/4/8/16 on countdown", served_models=ONE)
    assert "2 → 4 → 8 → 16" in hypothesis_text(sweep)[0]


def test_a_held_param_lora_rank_or_default_reaches_every_arm() -> None:
    from researcher.planner.design_space import LORA_LR, build_arms

    params = read_question("does group size 8 help at few_shot=3?", served_models=ONE,
                           workflow_params=AGENT)  # fmt: skip
    assert all(arm.workflow_params == {"few_shot": 3} for arm in build_arms(params))
    lora = read_question("does group size 8 help with LoRA rank 8?", served_models=ONE)
    for arm in build_arms(lora):
        assert arm.run["lora"] == {"r": 8, "alpha": 16} and arm.run["lr"] == LORA_LR
    lr = read_question("does lr 1e-4 help with LoRA rank 8?", served_models=ONE)
    assert [arm.run["lr"] for arm in build_arms(lr)] == [2e-5, 1e-4]  # the factor stays
    default = read_question("does group size 8 help at the default temperature?", served_models=ONE)
    assert any("temperature at its default" in a for a in default.assumptions)


def test_a_param_held_at_a_value_not_of_its_type_is_refused_saying_so() -> None:
    with pytest.raises(UnreadableQuestion, match="retries is a whole number"):
        read_question("does lr 1e-4 help with retries 2.5?", served_models=ONE,
                      workflow_params=AGENT)  # fmt: skip
    with pytest.raises(UnreadableQuestion, match="holds and varies numbers, flags and text"):
        read_question("does lr 1e-4 help with stops=3?", served_models=ONE,
                      workflow_params={"stops": ["a"]})  # fmt: skip


def test_a_held_flag_is_said_as_the_value_the_arms_get_not_the_word_written() -> None:
    reading = read_question("is RLOO as good as GRPO for my agent with the hint on?",
                            served_models=ONE, workflow_params=AGENT)  # fmt: skip
    assert reading.held == {"workflow:use_hint": True}
    assert any("use_hint True for every arm" in a for a in reading.assumptions)
    assert not any("'on' for every arm" in a for a in reading.assumptions)


def test_a_negated_question_says_what_supported_and_refuted_answer() -> None:
    reading = read_question("does RLOO not beat GRPO on chain_sum?", served_models=ONE)
    from researcher.planner.wording import hypothesis_text

    assert "The question is negated: 'supported' means rloo does raise" in reading.summary
    assert "asks the negation: 'supported' answers it no" in hypothesis_text(reading)[0]
    hurt = read_question("does a smaller lr not hurt chain_sum?", served_models=ONE)
    assert any("'not hurt' read as a non-inferiority test" in a for a in hurt.assumptions)


def test_lora_against_full_says_each_arm_trains_at_its_usual_lr_unless_one_is_held() -> None:
    from researcher.planner.design_space import build_arms
    from researcher.planner.wording import hypothesis_text

    usual = read_question("is LoRA rank 16 as good as full fine-tuning on chain_sum?",
                          served_models=ONE)  # fmt: skip
    assert any("each arm at its usual lr: LoRA 0.0001, full 2e-05" in a for a in usual.assumptions)
    assert [arm.run["lr"] for arm in build_arms(usual)] == [2e-5, 1e-4]
    assert "(each arm at its usual lr: LoRA 0.0001, full 2e-5)" in hypothesis_text(usual)[0]
    held = read_question("is LoRA rank 16 as good as full fine-tuning at lr 1e-4 on chain_sum?",
                         served_models=ONE)  # fmt: skip
    assert not any("usual lr" in a for a in held.assumptions)
    arms = build_arms(held)
    assert [arm.run["lr"] for arm in arms] == [1e-4, 1e-4]
    assert "usual higher" not in arms[1].description and "lr 0.0001" in arms[0].description


def test_a_tool_with_no_value_named_is_refused_with_an_example_of_a_tool() -> None:
    with pytest.raises(UnreadableQuestion) as refused:
        read_question("does the tool matter for my agent?", served_models=ONE,
                      workflow_params={"tool": "search", "max_turns": 4})  # fmt: skip
    message = str(refused.value)
    assert "does the <value> tool beat the search tool" in message
    assert "Think step by step" not in message and "lr 1e-4" not in message


def test_a_second_task_named_beside_a_run_setting_is_said_not_judged() -> None:
    # "help both A and B": a study of a run setting judges one task; the other is not dropped
    # in silence
    reading = read_question(
        "does group size 8 help both chain_sum and countdown?", served_models=ONE
    )
    assert reading.task == "chain_sum"
    assert any(a.startswith("countdown also named") for a in reading.assumptions)


def test_a_batch_the_question_fixes_reaches_every_arm_and_prices_the_steps() -> None:
    from researcher.plan import Framing, Hypothesis
    from researcher.planner.design_space import build_arms
    from researcher.planner.template import TemplatePlanner

    def arms(question: str) -> list[tuple[int, int]]:
        reading = read_question(question, served_models=ONE)
        return [(a.run["group_size"], a.run["batch_groups"]) for a in build_arms(reading)]

    assert arms("does 4 groups of 16 beat 16 groups of 4 on chain_sum?") == [(4, 16), (16, 4)]
    assert arms("does group size 16 beat 4 on chain_sum?") == [(4, 4), (16, 1)]
    assert arms("does lr 1e-4 help chain_sum with a batch of 32 episodes?") == [(4, 8), (4, 8)]
    assert arms("does 8 groups of 4 beat 4 groups of 4 on chain_sum?") == [(4, 4), (4, 8)]

    def steps(question: str) -> int:
        reading = read_question(question, served_models=ONE)
        framing = Framing(question=question, family="x", summary="", model=SMOL,
                          planner="template", reading=reading)  # fmt: skip
        hypothesis = Hypothesis(key="H1", statement="", prediction="", refuted_if="")
        design = TemplatePlanner().design(framing, hypothesis, budget_s=3600, seeds=2,
                                          step_seconds=10.0, notes=[])  # fmt: skip
        return design.steps

    # four times the episodes per step: a quarter of the steps in the same budget
    assert steps("does 4 groups of 16 beat 16 groups of 4 on chain_sum?") == pytest.approx(
        steps("does group size 16 beat 4 on chain_sum?") / 4, abs=1
    )


def test_a_second_outcome_named_is_said_not_passed_over() -> None:
    both = read_question(
        "Does group size 8 improve both accuracy and learning speed on chain_sum?",
        served_models=ONE,
    )
    assert both.outcome == "learning_speed"
    assert any(a.startswith("held-out accuracy also named") for a in both.assumptions)
    one = read_question("does lr 1e-4 learn faster on chain_sum?", served_models=ONE)
    assert not any("also named" in a for a in one.assumptions)


def test_a_flag_param_given_a_number_that_is_no_flag_is_refused_saying_so() -> None:
    with pytest.raises(UnreadableQuestion) as refused:
        read_question("does use_hint=2 help my agent?", served_models=ONE,
                      workflow_params={"use_hint": False, "few_shot": 0})  # fmt: skip
    assert "use_hint is a flag (default False): 2 is no value of it" in str(refused.value)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Does LoRA reduce GPU memory on chain_sum?", "'gpu memory' is no outcome"),
        ("Does a larger batch improve throughput on chain_sum?", "'throughput' read as cost"),
        ("does lr 1e-4 use more tokens on chain_sum?", "tokens named as the cost"),
    ],
)
def test_a_cost_or_memory_the_study_does_not_measure_as_written_is_said(question, said) -> None:
    reading = read_question(question, served_models=ONE)
    assert any(said in a for a in reading.assumptions), reading.assumptions


def test_the_default_named_alone_is_said_as_named() -> None:
    reading = read_question("does training for 20 steps help chain_sum?", served_models=ONE)
    assert reading.levels == [20, 40]
    assert "only the default max_steps named: 20 (control) vs 40" in reading.assumptions
    assert not any(a.startswith("no max_steps level named") for a in reading.assumptions)
