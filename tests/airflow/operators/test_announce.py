"""save_report's metrics are the summary.json it wrote (issue 54): what only the step knew, such as the GC's
own leftovers it removed (``leftovers_bytes_removed``), is among them."""

from __future__ import annotations

from lakefs_gc.contract import StepInputs, UncommittedResult
from lakefs_gc.report.figures import run_figures
from lakefs_gc.report.marks import read_summary
from lakefs_gc.steps.save_report import save_report
from lakefs_gc.storage import LocalStorage
from tests.airflow.helpers import context
from tests.support.contract import make_context

RUN = "ft00000000000000cur0"


def test_the_metrics_are_the_written_summary_s_leftovers_included(tmp_path, monkeypatch):
    from lakefs_gc_airflow import observability
    from lakefs_gc_airflow.operators import SaveReportOperator

    root = tmp_path / "blockstore"
    st = LocalStorage(root / "repo")
    st.uri = "local://repo"
    ctx = make_context("local://repo", local_root=str(root), work_dir=str(tmp_path / "work"))
    inputs = StepInputs(ctx, {"mark_uncommitted": UncommittedResult(run_id=RUN, locations=(), pages=1)})
    save_report(st, inputs)
    written = read_summary(st, RUN)
    assert written is not None
    assert written.leftovers_removed_marks is not None  # the step expired the leftovers (none to remove)
    sent: dict[str, float] = {}
    monkeypatch.setattr(observability, "emit_metrics", lambda repository, figures: sent.update(figures) or [])
    SaveReportOperator(task_id="save_report").announce(context({}), inputs, st)
    assert sent == run_figures(written)
    assert sent["leftovers_bytes_removed"] == 0
