"""The study report: Markdown and a self-contained HTML file with matplotlib figures.

    from researcher.report import ReportContext, write_report
    files = write_report(ctx, study_dir / "report")   # report.md, report.html, figures/*.png

`context` holds the typed record of everything a report shows, `figures` draws the plots,
`write` renders the Jinja2 templates in `prompts/reports/`. The package reads only that
record: the graph, the database and the gateway fill it in, and are unknown here.
"""

from researcher.report.context import (
    HypothesisStatus,
    ReportContext,
    ReportEvent,
    ReportIntervention,
    ReproRun,
)
from researcher.report.write import ReportFiles, write_report

__all__ = [
    "HypothesisStatus",
    "ReportContext",
    "ReportEvent",
    "ReportIntervention",
    "ReportFiles",
    "ReproRun",
    "write_report",
]
