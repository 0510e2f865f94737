"""PNG plots (matplotlib, the optional `bench` extra; imported lazily, Agg backend, no display needed).

- `quality_vs_calls`: per dataset, the headline quality metric (QA: correct; claims: accuracy) with its 95 %
  interval against mean LLM calls per question, one point per system.
- `reliability_diagram`: accuracy per confidence bin against the diagonal, for the critique confidence and
  the similarity confidence of one run.
- `growth_plot`: correctness, critique confidence and similarity confidence against corpus size.
- `sweep_plot`: Self-RAG correct against the accuracy of the diagnostic oracle critic (1 - flip probability),
  with the plain-RAG line, and the break-even accuracy where the two cross (`break_even`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ConfigError('plots need matplotlib: pip install "selfrag[bench]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _log_ticks(ax: Any, ticks: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100)) -> None:
    """A log x axis labelled with plain numbers."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xscale("log")
    low, high = ax.get_xlim()
    ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if low <= t <= high] or list(ticks[:1])))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _headline(summary: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    metrics = summary["metrics"]
    return ("accuracy", metrics.get("accuracy")) if "accuracy" in metrics else ("correct", metrics.get("correct"))


def quality_vs_calls(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    name = "quality"
    for row in rows:
        name, metric = _headline(row["summary"])
        calls = row["summary"]["metrics"].get("llm_calls", {}).get("value")
        if not metric or metric.get("value") is None or calls is None:
            continue
        y, low, high = 100 * metric["value"], 100 * metric["low"], 100 * metric["high"]
        ax.errorbar([calls], [y], yerr=[[y - low], [high - y]], fmt="o", capsize=4)
        text = f"{row['label']} (n={row['summary']['n']})"
        ax.annotate(text, (calls, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    _log_ticks(ax)
    ax.set_xlabel("LLM calls per question (mean, log scale)")
    ax.set_ylabel(f"{name} (%), 95 % bootstrap interval")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def reliability_diagram(label: str, summary: dict[str, Any], path: Path) -> Path:
    """Two panels: accuracy per confidence bin against the diagonal, and the risk-coverage curve (AURC)."""
    plt = _pyplot()
    fig, (ax, risk) = plt.subplots(1, 2, figsize=(9.6, 4.8))
    for key, style in (("critique", "-"), ("similarity", ":")):
        calibration = summary["calibration"].get(key)
        if calibration and calibration.get("risk_coverage"):
            curve = calibration["risk_coverage"]
            risk.plot([c for c, _ in curve], [r for _, r in curve], style,
                      label=f"{key} confidence (AURC {calibration['aurc']:.3f})")  # fmt: skip
    risk.set_xlim(0, 1)
    risk.set_ylim(0, 1)
    risk.set_xlabel("coverage (share of answers kept, most confident first)")
    risk.set_ylabel("risk (share of kept answers that are wrong)")
    risk.set_title("risk-coverage", fontsize=10)
    risk.legend(fontsize=7, loc="lower right")
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    for key, marker in (("critique", "o-"), ("similarity", "s:")):
        calibration = summary["calibration"].get(key)
        if not calibration:
            continue
        bins = [b for b in calibration["bins"] if b["count"]]
        ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], marker,
                label=f"{key} confidence (ECE {calibration['ece']:.3f}, n={calibration['n']})")  # fmt: skip
        for b in bins:
            ax.annotate(str(b["count"]), (b["confidence"], b["accuracy"]), fontsize=7, xytext=(3, -9),
                        textcoords="offset points")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence (bin mean)")
    ax.set_ylabel("share correct")
    ax.set_title(f"reliability: {label}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return _save(plt, fig, path)


def growth_plot(summary: dict[str, Any], path: Path) -> Path:
    """Correctness and both confidences per system against corpus size (log) or stale copies (linear)."""
    plt = _pyplot()
    axis = summary.get("axis", "size")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for system in dict.fromkeys(c["system"] for c in summary["cells"]):
        cells = sorted((c for c in summary["cells"] if c["system"] == system), key=lambda c: c.get(axis, 0))
        xs = [c.get(axis, 0) for c in cells]
        for key, style, what in (("correct", "o-", "correct"), ("confidence", "s--", "critique conf."),
                                 ("similarity_confidence", "^:", "similarity conf.")):  # fmt: skip
            values = [(c.get(key) or c.get("accuracy" if key == "correct" else key) or {}).get("value") for c in cells]
            if all(v is None for v in values):
                continue
            ax.plot(xs, [None if v is None else 100 * v for v in values], style, label=f"{system}: {what}")
    if axis == "size":
        _log_ticks(ax, (100, 300, 1000, 3000, 10000))
        ax.set_xlabel("corpus size (chunks, log scale)")
    else:
        ax.set_xticks(sorted({c.get("stale", 0) for c in summary["cells"]}))
        ax.set_xlabel(f"conflicting near-duplicates per gold snippet (corpus {summary['sizes'][0]} + copies)")
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    what = "memory growth" if axis == "size" else "stale near-duplicates"
    ax.set_title(f"{what} on {summary['dataset']} ({summary['cells'][0]['n']} questions)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(plt, fig, path)


def _oracle_flip(label: str) -> float | None:
    match = re.search(r"\+oracle([0-9.]+)", label)
    return float(match.group(1)) if match else None


def _correct(row: dict[str, Any]) -> float:
    return 100 * row["summary"]["metrics"]["correct"]["value"]


def break_even(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The oracle sweep of one dataset: (critic accuracy, correct) points, plain RAG's correct, and the lowest
    accuracy at which Self-RAG reaches plain RAG (linear between measured points; None if it never does)."""
    rows = [r for r in rows if "correct" in r["summary"]["metrics"]]  # a run with no finished question has none
    sweep = sorted((1 - flip, _correct(r)) for r in rows if (flip := _oracle_flip(r["label"])) is not None)
    rag = next((_correct(r) for r in rows if r["label"] == "rag"), None)
    if not sweep or rag is None:
        return None
    crossing = None
    for (x0, y0), (x1, y1) in zip(sweep, sweep[1:], strict=False):
        if y0 < rag <= y1:
            crossing = x0 + (rag - y0) * (x1 - x0) / (y1 - y0)
            break
    if crossing is None and sweep[0][1] >= rag:
        crossing = sweep[0][0]
    return {"points": sweep, "rag": rag, "break_even": crossing}


def sweep_plot(dataset: str, rows: list[dict[str, Any]], path: Path) -> Path | None:
    found = break_even(rows)
    if found is None:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot([100 * x for x, _ in found["points"]], [y for _, y in found["points"]], "o-",
            label="Self-RAG with the oracle critic")  # fmt: skip
    ax.axhline(found["rag"], color="grey", linestyle="--", label=f"plain RAG ({found['rag']:.1f})")
    for row in rows:
        if _oracle_flip(row["label"]) is None and row["label"].startswith("selfrag"):
            ax.axhline(_correct(row), linestyle=":", linewidth=1, label=f"{row['label']} ({_correct(row):.1f})")
    even = found["break_even"]
    note = "never reaches plain RAG" if even is None else f"break-even at {100 * even:.0f} % critic accuracy"
    ax.set_xlabel("critic accuracy on ISREL and ISSUP (%; 100 - flip probability)")
    ax.set_ylabel("correct (%)")
    ax.set_title(f"{dataset}: what the critic must reach ({note})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(plt, fig, path)


def plot_runs(run_dirs: list[Path], out: Path) -> list[Path]:
    """Quality vs calls per dataset, a reliability diagram per run that has a critique confidence, and the
    oracle sweep of each dataset that has oracle runs beside a plain-RAG run."""
    from .score import score_run

    out.mkdir(parents=True, exist_ok=True)
    rows = [score_run(d) for d in run_dirs]
    written = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        group = [r for r in rows if r["dataset"] == dataset and "critic" not in r["summary"]]
        if group:
            written.append(quality_vs_calls(group, out / f"{dataset}-quality-vs-calls.png", dataset))
            sweep = sweep_plot(dataset, group, out / f"{dataset}-critic-sweep.png")
            if sweep is not None:
                written.append(sweep)
    for row in rows:
        if row["summary"]["calibration"].get("critique"):
            name = f"{row['dataset']}-{file_part(row['label'])}-reliability.png"
            written.append(reliability_diagram(f"{row['label']} on {row['dataset']}", row["summary"], out / name))
    return written


def file_part(label: str) -> str:
    """A run's label as part of a file name: "selfrag+evidence (unanswerable)" -> "selfrag_evidence_unanswerable"."""
    return re.sub(r"[^\w.-]+", "_", label).strip("_")


def load_growth(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
