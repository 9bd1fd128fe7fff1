"""The run report: one HTML page per run (`tfx-audio report`, and the last step of
`tfx-audio run`) showing what went in, how training went, how the model does per
class and per kind of noise, and how its audio sounds (docs/operations.md, "Where outputs go")."""
from __future__ import annotations

import os
import re

from components.config import PipelineConfig
from pipeline import summary


def write(run: summary.RunSummary, config: PipelineConfig) -> str:
    """Writes the report of `run` under config.reports_dir/<run id>/; returns the page's path."""
    # Imported here: matplotlib and the sections' TF/TFMA imports cost seconds, which a
    # validation-only start-up of the CLI does not need to pay.
    from pipeline.report import data, evaluation, listening, page, training

    sections = [data.section(run), training.section(run), evaluation.section(run), listening.section(run, config)]
    out_dir = os.path.join(config.reports_dir, re.sub(r"[^\w.-]", "_", run.run_id))
    return page.write(out_dir, f"tfx-audio run {run.run_id} ({config.name})", verdict(run), sections)


def verdict(run: summary.RunSummary) -> str:
    """The page's headline: how the run ended."""
    failed = sorted(node for node, state in run.node_states.items() if state == "FAILED")
    if failed:
        anomalies = "; ".join(f"{split}: {', '.join(found)}" for split, found in sorted(run.anomalies.items()))
        return f"stopped: {', '.join(failed)} failed" + (f" (anomalies in {anomalies})" if anomalies else "")
    if "Evaluator" not in run.node_states:
        return "data validated; no model trained in this run"
    if run.blessed:
        return "blessed and pushed" if run.pushed else "blessed, not pushed"
    return "not blessed" + (": " + "; ".join(run.failed_checks) if run.failed_checks else "")
