"""researcher.report: Markdown + self-contained HTML + PNG figures from a ReportContext."""

from __future__ import annotations

import base64
import html
import os
import re

import matplotlib.image
import pytest

from researcher.analysis import analyse
from researcher.plan import Arm, Decision, Design, Framing, Reading, RunResult
from researcher.report import (
    HypothesisStatus,
    ReportContext,
    ReportEvent,
    ReportIntervention,
    ReproRun,
    write_report,
)
from researcher.report.write import fence

PNG = b"\x89PNG\r\n\x1a\n"
T0 = 1_790_000_000.0
QUESTION = "Does mixing tool use into arithmetic training help held-out arithmetic?"
SUBSTITUTION = (
    "The question asked about a 7B model; this gateway serves only smollm2-135m, "
    "so every run trained smollm2-135m instead."
)
RULE = "supported if the 95% CI of mixed − arithmetic-only lies above 0 and the difference ≥ 0.05"
NOTES = ["Please keep lr at 2e-5 <for now> & watch KL", "Seed 1 of mixed looked slow at step 3"]
CONCLUSION = (
    "Mixing in tool use raised held-out arithmetic accuracy by about 0.69 (95% CI 0.58 to 0.79)."
)


def outcomes(accuracy: float, items: int = 48) -> list[float]:
    solved = round(items * accuracy)
    return [1.0] * solved + [0.0] * (items - solved)


def make_design() -> Design:
    return Design(
        hypothesis="H1",
        arms=[
            Arm(
                name="arithmetic-only",
                role="control",
                description="arithmetic alone",
                tasks={"arithmetic": 1.0},
                run={"lr": 2e-5},
            ),
            Arm(
                name="mixed",
                role="treatment",
                description="arithmetic | tool use",
                tasks={"arithmetic": 0.5, "tool_use": 0.5},
                run={"lr": 2e-5},
            ),
        ],
        seeds=[0, 1],
        steps=4,
        eval_family="arithmetic",
        eval_episodes=48,
        decision_rule=RULE,
        budget_split={"train": 0.7, "eval": 0.2, "report": 0.1},
    )


def workflow_code(arm: str, seed: int) -> str:
    return (
        f"# workflow for {arm} seed {seed}\n"
        "def tasks(split='train'):\n    return [{'id': 'x', 'q': '1 < 2 && 3 > 2'}]\n\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )


def full_context() -> ReportContext:
    design = make_design()
    results = [
        RunResult(
            arm=arm,
            seed=s,
            run=f"h1-{arm}-s{s}",
            curve=[(step, base + spread * s + 0.1 * step) for step in range(1, 5)],
            eval_outcomes=outcomes(accuracy),
        )
        for arm, base, spread, accuracy in (
            ("arithmetic-only", 0.1, 0.02, 0.2),
            ("mixed", 0.3, 0.05, 0.9),
        )
        for s in (0, 1)
    ]
    results.append(
        RunResult(
            arm="mixed",
            seed=2,
            run="h1-mixed-s2",
            curve=[(1, 0.2)],
            status="failed",
            note="client exited with code 1 (ImportError)",
        )
    )
    return ReportContext(
        study_id="st-1",
        question=QUESTION,
        framing=Framing(
            question=QUESTION,
            family="task_mixing",
            summary="compare mixes",
            model_requested="7B",
            model="smollm2-135m",
            substitution=SUBSTITUTION,
            planner="template",
        ),
        planner="template (no planner LLM configured)",
        hypotheses=[
            HypothesisStatus(
                key="H1",
                statement="Mixing helps.",
                prediction="mixed > arithmetic-only",
                refuted_if="CI below 0.05",
                status="supported",
                evidence="+0.69 [0.58, 0.79]",
            )
        ],
        designs=[design],
        results=results,
        analyses=[analyse(design, results)],
        decision=Decision(action="conclude", reason="H1 supported", conclusion=CONCLUSION),
        events=[
            ReportEvent(at=T0 + 5, phase="frame", kind="framed", message="task_mixing"),
            ReportEvent(
                at=T0 + 65,
                phase="validate",
                kind="repaired",
                message="reward returned None; repaired",
                reason="traceback in rollout",
            ),
        ],
        interventions=[
            ReportIntervention(
                at=T0 + 120,
                actor="human:ana",
                kind="edit_run",
                payload={"run": "h1-mixed-s1", "lr": 1e-5},
                reason="KL spiking",
                status="applied",
            )
        ],
        notes=NOTES,
        runs=[
            ReproRun(
                arm=r.arm,
                seed=r.seed,
                run=r.run,
                settings={"lr": 2e-5, "seed": r.seed},
                code_version=f"sha256:{r.seed}abc",
                workflow_path=f"workflows/{r.run}.py",
                workflow_code=workflow_code(r.arm, r.seed),
            )
            for r in results
        ],
        problems=["validate: the first mixed workflow raised ImportError; repaired on try 2"],
        budget_s=1200,
        budget_used_s=1100,
        started_at=T0,
        finished_at=T0 + 1150,
        gateway_url="http://127.0.0.1:8400",
    )


def empty_context() -> ReportContext:
    return ReportContext(
        study_id="st-empty",
        question="Does anything happen?",
        framing=Framing(
            question="Does anything happen?",
            family="task_mixing",
            summary="-",
            model="tiny",
            planner="template",
        ),
        planner="template",
        budget_s=60,
        started_at=T0,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    ctx = full_context()
    return ctx, out, write_report(ctx, out)


def test_the_report_files_exist_and_the_figures_are_valid_pngs(written):
    _, out, files = written
    assert files.markdown == out / "report.md" and files.markdown.is_file()
    assert files.html == out / "report.html" and files.html.is_file()
    assert [p.name for p in files.figures] == [
        "reward_curves.png",
        "seed_curves.png",
        "heldout_accuracy.png",
    ]
    for png in files.figures:
        assert png.parent == out / "figures"
        assert png.read_bytes().startswith(PNG)
        assert matplotlib.image.imread(png).shape[0] > 100


def test_the_html_shows_question_conclusion_notes_substitution_rule_and_code(written):
    ctx, _, files = written
    page = html.unescape(files.html.read_text())
    for text in [QUESTION, CONCLUSION, SUBSTITUTION, RULE, *NOTES, "template (no planner LLM"]:
        assert text in page
    for run in ctx.runs:
        assert run.workflow_code in page
        assert run.code_version in page and run.workflow_path in page
    assert "client exited with code 1 (ImportError)" in page  # the failed run
    assert "ImportError; repaired on try 2" in page and "KL spiking" in page
    assert "reward returned None; repaired" in page  # the timeline


def test_the_html_is_escaped_and_self_contained(written):
    _, _, files = written
    raw = files.html.read_text()
    assert "&lt;for now&gt; &amp; watch KL" in raw
    assert "1 &lt; 2 &amp;&amp; 3 &gt; 2" in raw
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', raw)
    assert len(images) == 3 and all(base64.b64decode(i).startswith(PNG) for i in images)
    assert not re.search(r'src="(?!data:)', raw)  # nothing to fetch
    # the only links are to the study's own files (the workflows), relative to the report
    assert not re.search(r'href="(?!#|\.\./|workflows/)', raw)


def test_the_sections_come_in_order(written):
    _, _, files = written
    page = files.html.read_text()
    ids = [
        "planner",
        "conclusion",
        "hypotheses",
        "design",
        "results",
        "notes",
        "problems",
        "timeline",
        "reproduce",
        "budget",
    ]
    positions = [page.index(f'<section id="{i}">') for i in ids]
    assert positions == sorted(positions)
    md = files.markdown.read_text()
    headings = [
        "# " + QUESTION,
        "## Who planned it",
        "## Conclusion",
        "## Hypotheses",
        "## Design and the pre-registered decision rule",
        "## Results",
        "## Human notes",
        "## What went wrong along the way",
        "## Timeline",
        "## Reproduce",
        "## Budget",
    ]
    positions = [md.index(h) for h in headings]
    assert positions == sorted(positions)


def test_the_markdown_links_the_figures_and_carries_the_same_facts(written):
    ctx, out, files = written
    md = files.markdown.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links == [
        "figures/reward_curves.png",
        "figures/seed_curves.png",
        "figures/heldout_accuracy.png",
    ]
    assert all((out / link).is_file() for link in links)
    for text in [QUESTION, CONCLUSION, SUBSTITUTION, RULE, *NOTES]:
        assert text in md
    for run in ctx.runs:
        assert run.workflow_code.strip() in md
    assert "arithmetic \\| tool use" in md  # a pipe cannot break the arms table
    assert "| mixed − arithmetic-only | +0.688 |" in md
    assert "18m 20s of 20m (92%)" in md


def test_an_empty_study_still_renders_with_no_conclusion_and_no_data_figures(tmp_path):
    files = write_report(empty_context(), tmp_path)
    page = html.unescape(files.html.read_text())
    md = files.markdown.read_text()
    for text in (page, md):
        assert "Does anything happen?" in text
        assert "no conclusion: no experiment was designed (the study has not finished)" in text
        assert "No run was launched." in text
    for png in files.figures:
        assert png.read_bytes().startswith(PNG)


def test_a_design_without_results_or_analysis_renders(tmp_path):
    ctx = empty_context().model_copy(update={"designs": [make_design()]})
    files = write_report(ctx, tmp_path)
    md = files.markdown.read_text()
    assert "no conclusion: no run finished with held-out results" in md
    assert "| arithmetic-only | no finished runs | — |" in md


def test_a_refined_study_without_conclusion_says_why(tmp_path):
    ctx = full_context()
    ctx = ctx.model_copy(
        update={
            "analyses": [],
            "decision": Decision(action="refine", reason="the interval was too wide"),
        }
    )
    files = write_report(ctx, tmp_path)
    assert "no conclusion: the interval was too wide" in files.markdown.read_text()


def test_a_fence_outgrows_backticks_in_the_code():
    assert fence("print(1)") == "```"
    assert fence('s = """x"""\n# ````') == "`````"


@pytest.mark.slow
def test_two_designs_get_a_panel_each_and_a_section_each(tmp_path):
    ctx = full_context()
    follow_up = make_design().model_copy(
        update={
            "hypothesis": "H2",
            "arms": [a.model_copy(update={"name": f"{a.name}-long"}) for a in make_design().arms],
        }
    )
    results = [
        RunResult(arm=f"{arm}-long", seed=s, run=f"h2-{arm}-s{s}", eval_outcomes=outcomes(0.5))
        for arm in ("arithmetic-only", "mixed")
        for s in (0, 1)
    ]
    ctx = ctx.model_copy(
        update={
            "designs": [*ctx.designs, follow_up],
            "results": [*ctx.results, *results],
            "analyses": [*ctx.analyses, analyse(follow_up, results)],
        }
    )
    one_panel = matplotlib.image.imread(write_report(full_context(), tmp_path / "one").figures[1])
    files = write_report(ctx, tmp_path / "two")
    two_panels = matplotlib.image.imread(files.figures[1])
    assert two_panels.shape[0] > 1.8 * one_panel.shape[0]
    md = files.markdown.read_text()
    assert "### Held-out accuracy for H1" in md and "### Held-out accuracy for H2" in md
    assert "| mixed-long − arithmetic-only-long | +0.000 |" in md


def study_of(question: str, reading: Reading, design: Design, results: list[RunResult]):
    return empty_context().model_copy(
        update={
            "question": question,
            "framing": Framing(
                question=question,
                family="reading",
                summary=reading.summary,
                model="tiny",
                planner="template",
                reading=reading,
            ),  # fmt: skip
            "designs": [design],
            "results": results,
            "analyses": [analyse(design, results)],
            "finished_at": T0 + 600,
        }
    )


def kl_arm(name: str, role: str, kl: float) -> Arm:
    return Arm(name=name, role=role, description=f"KL {kl:g}", tasks={"learnable": 1.0},
               run={"kl_coef": kl}, level=kl)  # fmt: skip


@pytest.mark.slow
def test_a_learning_speed_study_shows_the_reading_the_outcome_and_the_auc(tmp_path):
    question = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"
    reading = Reading(
        factor="kl_coef", levels=[0.0, 0.5], control=0.0, task="learnable", tasks=["learnable"],
        outcome="learning_speed", direction="less",
        assumptions=["KL 0 is the control: only 0.5 named"],
        summary="kl_coef 0 vs 0.5 on learnable, judged on learning speed; slower is the hypothesis",
    )  # fmt: skip
    design = make_design().model_copy(update={
        "arms": [kl_arm("kl-0", "control", 0.0), kl_arm("kl-0.5", "treatment", 0.5)],
        "eval_family": "learnable", "steps": 8, "outcome": "learning_speed", "direction": "less",
    })  # fmt: skip
    results = [
        RunResult(arm=arm, seed=s, run=f"{arm}-s{s}", eval_outcomes=outcomes(0.5),
                  curve=[(t, min(1.0, rate * t + 0.01 * s)) for t in range(1, 9)])
        for arm, rate in (("kl-0", 0.2), ("kl-0.5", 0.05)) for s in (0, 1, 2)
    ]  # fmt: skip
    files = write_report(study_of(question, reading, design, results), tmp_path)
    md = files.markdown.read_text()
    page = html.unescape(files.html.read_text())
    for text in (md, page):
        assert "The question, as read" in text and "kl_coef" in text
        assert "KL 0 is the control: only 0.5 named" in text
        assert "learning speed (area under the training-reward curve over steps 1–8" in text
        assert "less — slower learning (a smaller area) is the hypothesis" in text
        assert "standardized difference (d)" in text
    assert md.index("## The question, as read") < md.index("## Who planned it")
    assert page.index('<section id="reading">') < page.index('<section id="planner">')
    assert "### Learning speed (reward AUC) for H1" in md
    assert "| kl-0.5 | 0.5 | KL 0.5 |" in md.replace("| treatment ", "")  # the level column
    assert [p.name for p in files.figures] == ["reward_curves.png", "seed_curves.png", "heldout_accuracy.png",
                                               "outcome.png"]  # fmt: skip
    assert "the legend gives each arm's learning speed" in md
    assert "Verdict: supported." in md


def test_an_equivalence_study_names_the_margin_and_the_tost_rule(tmp_path):
    question = "is LoRA rank 16 as good as full fine-tuning on arithmetic?"
    reading = Reading(factor="lora", levels=["full", 16], control="full", task="arithmetic",
                      outcome="heldout_accuracy", direction="equivalent", margin=0.1)  # fmt: skip
    arms = [Arm(name="full", role="control", description="full", tasks={"arithmetic": 1.0}, level="full"),
            Arm(name="lora-16", role="treatment", description="r=16", tasks={"arithmetic": 1.0},
                run={"lora": {"r": 16, "alpha": 32}}, level=16)]  # fmt: skip
    design = make_design().model_copy(
        update={"arms": arms, "direction": "equivalent", "margin": 0.1}
    )
    results = [RunResult(arm=a, seed=s, run=f"{a}-s{s}", eval_outcomes=outcomes(0.5, items=400))
               for a in ("full", "lora-16") for s in (0, 1, 2)]  # fmt: skip
    files = write_report(study_of(question, reading, design, results), tmp_path)
    md = files.markdown.read_text()
    assert "- **Margin:** ±0.1" in md
    assert "equivalent — equivalence within ±0.1 is the hypothesis" in md
    assert (
        "an equivalence test (two one-sided tests, TOST): supported if the 90% interval lies inside ±0.1"
        in md
    )
    assert "| supported (decision interval " in md  # the 90% interval the verdict used
    assert "### Held-out accuracy for H1" in md
    assert [p.name for p in files.figures] == [
        "reward_curves.png",
        "seed_curves.png",
        "heldout_accuracy.png",
    ]


def test_a_study_framed_before_readings_says_so(written):
    _, _, files = written
    assert "framed before questions were read" in files.markdown.read_text()


# -- how sure the report is, and how to reproduce it (issue 19, item 6) -------------------


def sure_context() -> ReportContext:
    """The full study as look 2 of 3 after a pilot, with dropped batches and checkpoints."""
    from researcher.plan import Pilot

    ctx = full_context()
    first = ctx.designs[0].model_copy(update={"seeds": [0], "look": 1, "max_looks": 3})
    pilot = Pilot(runs=["h1-arithmetic-only-s0"], steps=4, step_seconds=9.5, learned="learned",
                  evidence="training reward rose 0.1 → 0.4", seed_sd=0.04, item_sd=0.41,
                  retuned={"lr": [1e-5, 2e-5]})  # fmt: skip
    final = ctx.designs[0].model_copy(update={
        "hypothesis": "H2", "seeds": [0, 1], "look": 2, "max_looks": 3, "mde": 0.12,
        "mde_basis": "seed SD 0.04 and item SD 0.41 from the pilot, 2 seeds × 48 items",
        "pilot": pilot, "parallel_runs": 2})  # fmt: skip
    results = [r.model_copy(update={"dropped_batches": {"zero_variance": 2}})
               if r.run == "h1-arithmetic-only-s1" else r for r in ctx.results]  # fmt: skip
    runs = [run.model_copy(update={"workflow_path": f"/studies/st-1/workflows/{run.run}.py",
                                   "checkpoint": f"/gw/runs/{run.run}/export" if run.seed == 0 else None})
            for run in ctx.runs]  # fmt: skip
    analysis = analyse(final, results, look=2, max_looks=3)
    return ctx.model_copy(update={"designs": [first, final], "results": results, "runs": runs,
                                  "analyses": [analysis, analysis]})  # fmt: skip


@pytest.mark.slow
def test_the_answer_opens_the_report_and_a_stored_answer_wins(tmp_path):
    ctx = sure_context()
    md = write_report(ctx, tmp_path / "a").markdown.read_text()
    top = md.split("## The question, as read")[0]
    assert "**Yes: mixed gave higher held-out accuracy than arithmetic-only on arithmetic" in top
    stored = ctx.analyses[-1].model_copy(update={"answer": "No: a stored answer."})
    ctx = ctx.model_copy(update={"analyses": [ctx.analyses[0], stored]})
    files = write_report(ctx, tmp_path / "b")
    assert "**No: a stored answer.**" in files.markdown.read_text().split("## The question")[0]
    page = files.html.read_text()
    assert page.index('id="answer"') < page.index('<section id="reading">')


def test_the_report_states_the_mde_pilot_stopping_rule_looks_and_seeds(tmp_path):
    md = write_report(sure_context(), tmp_path).markdown.read_text()
    assert "(80% power at the last look): 0.12 — seed SD 0.04 and item SD 0.41" in md
    assert "| learned? | learned — training reward rose 0.1 → 0.4 |" in md
    assert "| seconds per training step | 9.5 (measured) |" in md
    assert "| seed-to-seed SD | 0.04 |" in md and "| item-to-item SD | 0.41 |" in md
    assert "| retuned | lr 1e-05 → 2e-05 |" in md
    assert "Kim–DeMets" in md and "up to 3 looks" in md
    assert (
        "- **Looks and seeds:** look 2 of up to 3; 2 seeds per arm planned at this look (0, 1)"
        in md
    )
    assert "- **Runs trained at once:** 2" in md


@pytest.mark.slow
def test_the_report_lists_dropped_batches_and_a_reproducibility_table(tmp_path):
    out = tmp_path / "report"
    files = write_report(sure_context(), out)
    md = files.markdown.read_text()
    assert "| `h1-arithmetic-only-s1` | arithmetic-only | 1 | 2 | 2 zero variance |" in md
    assert "researcher rerun st-1" in md
    row = next(line for line in md.splitlines() if line.startswith("| `h1-mixed-s0` |"))
    link = os.path.relpath("/studies/st-1/workflows/h1-mixed-s0.py", out)
    assert link.startswith("../") and f"| finished | — | [{link}]({link}) |" in row
    assert '`{"lr": 2e-05, "seed": 0}`' in row and "/gw/runs/h1-mixed-s0/export" in row
    failed = next(line for line in md.splitlines() if line.startswith("| `h1-mixed-s2` |"))
    assert "| failed |" in failed and failed.endswith("| — |")
    page = html.unescape(files.html.read_text())
    assert "researcher rerun st-1" in page and "/gw/runs/h1-mixed-s0/export" in page
    assert 'id="dropped"' in files.html.read_text()


def test_the_seed_curves_figure_has_one_line_per_run(tmp_path):
    from researcher.report import figures

    path = figures.seed_curves(sure_context(), tmp_path / "seeds.png")
    assert path.read_bytes().startswith(PNG)
    assert matplotlib.image.imread(path).shape[0] > 100


@pytest.mark.slow
def test_a_replayed_study_links_its_original(tmp_path):
    ctx = sure_context().model_copy(
        update={"replays": "st-0", "replays_report": "/studies/st-0/report/report.html"}
    )
    md = write_report(ctx, tmp_path).markdown.read_text()
    assert "This study replays study `st-0`'s final design ([its report](" in md


@pytest.mark.slow
def test_old_studies_without_the_new_fields_render_without_them(tmp_path):
    md = write_report(full_context(), tmp_path).markdown.read_text()
    assert "Minimum detectable effect" not in md and "**Pilot**" not in md
    assert "Batches trained nothing from" not in md and "replays study" not in md
    assert "- **Looks and seeds:** look 1 of up to 1" in md
    md = write_report(empty_context(), tmp_path / "empty").markdown.read_text()
    assert "researcher rerun" not in md and "**Yes" not in md


def test_the_reproducibility_table_says_how_each_run_ended_and_the_steps_it_trained(tmp_path):
    """A run the budget stopped is "stopped (why)" with "14 of 40" steps, never "finished"
    as the analysis (which scores its policy) calls it; `researcher status` says the same."""
    ctx = sure_context()
    spent = "its share of the training budget (300 s) is spent"
    runs = [
        run.model_copy(update={"settings": {**run.settings, "max_steps": 40},
                               "status": "stopped" if run.seed == 1 else "finished",
                               "steps_done": 14 if run.seed == 1 else 40,
                               "stop_reason": spent if run.seed == 1 else None})
        for run in ctx.runs
    ]  # fmt: skip
    md = write_report(ctx.model_copy(update={"runs": runs}), tmp_path).markdown.read_text()
    assert "| status | steps trained |" in md
    stopped = next(line for line in md.splitlines() if line.startswith("| `h1-mixed-s1` |"))
    assert f"| stopped ({spent}) | 14 of 40 |" in stopped
    finished = next(line for line in md.splitlines() if line.startswith("| `h1-mixed-s0` |"))
    assert "| finished | 40 of 40 |" in finished
    failed = next(line for line in md.splitlines() if line.startswith("| `h1-mixed-s2` |"))
    assert "| failed |" in failed  # the analysis found it failed: that wins


def test_a_design_whose_arms_train_their_own_steps_says_each_arms_steps(tmp_path):
    ctx = sure_context()
    final = ctx.designs[-1]
    arms = [a.model_copy(update={"run": {**a.run, "max_steps": 10 * (i + 1)}})
            for i, a in enumerate(final.arms)]  # fmt: skip
    designs = [ctx.designs[0], final.model_copy(update={"arms": arms})]
    md = write_report(ctx.model_copy(update={"designs": designs}), tmp_path).markdown.read_text()
    listed = ", ".join(f"{10 * (i + 1)} ({a.name})" for i, a in enumerate(final.arms))
    assert f"- **Training steps per run:** {listed}" in md
    assert f"- **Training steps per run:** {ctx.designs[0].steps}\n" in md  # one number
