"""Scoring: metrics from sample records alone, never calling a model. The runner calls `summarize` at the
end of a run and `benchmarks/score.py` / `selfrag bench score` call it again on `samples.jsonl`, so a resumed
run, a re-scored run and an uninterrupted run report the same numbers.

Failed questions count: quality metrics (match, EM, F1, correct, accuracy, macro-F1) score them as wrong and
keep them in the denominator; `*_answered` variants leave them out. Evidence, confidence and cost metrics
are means over the questions where they are defined (n is reported with each).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..labels import Support
from . import metrics as m
from .samples import read_samples

RATE_METRICS = (
    "match",
    "em",
    "f1",
    "correct",
    "correct_answered",
    "accuracy",
    "accuracy_answered",
    "macro_f1",
    "coverage",
    "evidence_mass",
    "cited_share",
    "citation_precision",
    "citation_recall",
    "confidence",
    "similarity_confidence",
    "retrieval_frequency",
    "abstained",
)
FLAGS = ("restates_question", "repeats_draft", "several_sentences", "unsupported")  # declined or cut candidates
# counted in a run only where one of its candidates has it (older runs never do)
LATER_FLAGS = ("about_the_document", "no_amount", "unstated", "quoted")
COST_METRICS = ("llm_calls", "total_tokens", "rounds", "wall_time", "model_seconds")


def qa_values(record: dict[str, Any]) -> dict[str, float]:
    ok = record["status"] == "ok"
    prediction, golds = record.get("prediction") or "", record.get("answers") or []
    if not ok:
        return {"match": 0.0, "em": 0.0, "f1": 0.0, "correct": 0.0}
    return {
        "match": m.lenient_match(prediction, golds),
        "em": m.exact_match(prediction, golds),
        "f1": m.token_f1(prediction, golds),
        "correct": m.answer_in(prediction, golds),
    }


def is_correct(record: dict[str, Any], task: str) -> float:
    if record["status"] != "ok":
        return 0.0
    if task == "claim":
        return float(record.get("label") == record.get("gold_label"))
    return m.answer_in(record.get("prediction") or "", record.get("answers") or [])


def evidence_values(record: dict[str, Any]) -> dict[str, float | None]:
    if record["status"] != "ok" or record.get("retrieved") is None:
        return dict.fromkeys(("coverage", "evidence_mass", "cited_share", "citation_precision", "citation_recall"))
    citations = record.get("citations") or []
    precision, recall = m.citation_support(record.get("cited_sentences") or [], record.get("gold_sentences") or [])
    if not citations:
        precision = None
    return {
        "coverage": m.coverage(record["retrieved"], record.get("gold_chunks") or []),
        "evidence_mass": m.evidence_mass(citations, record.get("gold_chunks") or []),
        "cited_share": float(bool(citations)),
        "citation_precision": precision,
        "citation_recall": recall,
    }


def summarize(
    records: Sequence[dict[str, Any]], *, task: str, labels: Sequence[str] = (), seed: int = 0
) -> dict[str, Any]:
    """Every metric with a bootstrap 95 % interval, calibration, and critic agreement when pairs exist."""
    records = list(records)
    ok = [r for r in records if r["status"] == "ok"]
    columns: dict[str, list[float | None]] = {}

    def put(name: str, values: Iterable[float | None]) -> None:
        columns[name] = list(values)

    correct = [is_correct(r, task) for r in records]
    answered = [c if r["status"] == "ok" else None for c, r in zip(correct, records, strict=True)]
    if task == "qa":
        per = [qa_values(r) for r in records]
        for name in ("match", "em", "f1", "correct"):
            put(name, (p[name] for p in per))
        put("correct_answered", answered)
    else:
        put("accuracy", correct)
        put("accuracy_answered", answered)
    evidence = [evidence_values(r) for r in records]
    for name in ("coverage", "evidence_mass", "cited_share", "citation_precision", "citation_recall"):
        put(name, (e[name] for e in evidence))
    put("confidence", (r.get("confidence") if r["status"] == "ok" else None for r in records))
    put("similarity_confidence", (r.get("similarity_confidence") if r["status"] == "ok" else None for r in records))
    usage = [r.get("usage") or {} for r in records]
    put(
        "retrieval_frequency",
        (u.get("retrieval_frequency") if r["status"] == "ok" else None for u, r in zip(usage, records, strict=True)),
    )
    for name in COST_METRICS:
        put(name, (u.get(name) for u in usage))
    if any(r.get("abstained") is not None for r in records):
        put("abstained", (float(r["abstained"]) if r.get("abstained") is not None else None for r in records))
    flagged = [_flags(r) for r in records]
    for flag in (*FLAGS, *LATER_FLAGS):
        counts = [f.get(flag) for f in flagged]
        if any(counts) if flag in LATER_FLAGS else any(c is not None for c in counts):
            put(f"flag_{flag}", counts)
    if any(r.get("unstated") is not None for r in records):  # last: a run recorded before it was counted keeps
        # its other columns' bootstrap seeds (each column's seed is its place), so it still checks equal
        put("unstated", (float(bool(r["unstated"])) if _counts_unstated(r) else None for r in records))
    results: dict[str, Any] = {}
    for offset, (name, values) in enumerate(columns.items()):
        if any(v is not None for v in values):
            value, low, high, n = m.bootstrap_mean(values, seed=seed + offset)
            results[name] = {"value": value, "low": low, "high": high, "n": n}
    if task == "claim" and records:
        golds = [r.get("gold_label") for r in records]
        preds = [r.get("label") if r["status"] == "ok" else None for r in records]

        def macro(idx: Sequence[int]) -> float:
            return m.macro_f1([golds[i] for i in idx], [preds[i] for i in idx], labels)

        value, low, high = m.bootstrap_statistic(len(records), macro, seed=seed + 97)
        results["macro_f1"] = {"value": value, "low": low, "high": high, "n": len(records)}
    summary: dict[str, Any] = {
        "n": len(records),
        "ok": len(ok),
        "failed": len(records) - len(ok),
        "metrics": results,
        "calibration": calibration(records, correct),
        "cache_hits": sum(int(u.get("cache_hits", 0)) for u in usage),
        "requests_sent": sum(int(u.get("requests_sent", 0)) for u in usage),
    }
    if any("by_prompt" in u for u in usage):
        summary["by_prompt"] = by_prompt(usage)
    critic = critic_agreement(records, seed=seed)
    if critic:
        summary["critic"] = critic
    return summary


def by_prompt(usage: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Replies and tokens per question for each prompt, means over the questions (a question that never asked a
    prompt counts 0 for it)."""
    totals: dict[str, list[int]] = {}
    for u in usage:
        for name, (calls, tokens) in (u.get("by_prompt") or {}).items():
            total = totals.setdefault(name, [0, 0])
            total[0], total[1] = total[0] + int(calls), total[1] + int(tokens)
    n = max(len(usage), 1)
    return {name: {"calls": round(c / n, 3), "tokens": round(t / n, 1)} for name, (c, t) in sorted(totals.items())}


def _flags(record: dict[str, Any]) -> dict[str, float]:
    """How many candidates of the question were declined or cut, per reason (empty without candidates)."""
    candidates = record.get("candidates")
    if record["status"] != "ok" or not candidates:
        return {}
    return {flag: float(sum(c.get("flag") == flag for c in candidates)) for flag in (*FLAGS, *LATER_FLAGS)}


def _counts_unstated(record: dict[str, Any]) -> bool:
    """An answered question whose record lists its unstated facts (an abstention states none to count)."""
    return record["status"] == "ok" and record.get("unstated") is not None and not record.get("abstained")


def calibration(records: Sequence[dict[str, Any]], correct: Sequence[float]) -> dict[str, Any]:
    out = {}
    for key, field in (("critique", "confidence"), ("similarity", "similarity_confidence")):
        pairs = [
            (float(r[field]), c)
            for r, c in zip(records, correct, strict=True)
            if r["status"] == "ok" and r.get(field) is not None
        ]
        if not pairs:
            continue
        confidences, outcomes = [p[0] for p in pairs], [p[1] for p in pairs]
        out[key] = {
            "ece": m.ece(confidences, outcomes),
            "auroc": m.auroc(confidences, [bool(o) for o in outcomes]),  # does it rank correct answers higher?
            "aurc": m.aurc(confidences, outcomes),  # area under risk-coverage: lower is better
            "risk_coverage": [[round(c, 4), round(r, 4)] for c, r in _thinned(m.risk_coverage(confidences, outcomes))],
            "n": len(pairs),
            "bins": [asdict(b) for b in m.reliability_bins(confidences, outcomes)],
        }
    return out


def _thinned(points: list[tuple[float, float]], most: int = 50) -> list[tuple[float, float]]:
    """At most `most` points of a curve, evenly spread, the last one kept."""
    if len(points) <= most:
        return points
    step = len(points) / most
    return [points[min(len(points) - 1, round((i + 1) * step) - 1)] for i in range(most)]


def critic_agreement(records: Sequence[dict[str, Any]], *, seed: int = 0) -> dict[str, Any] | None:
    """ISSUP against gold support labels: balanced accuracy, AUROC of s_sup, precision/recall/F1 of
    'supported' (fully or partially), with intervals from resampling questions (pairs stay together)."""
    groups = [r.get("pairs") or [] for r in records if r["status"] == "ok" and r.get("pairs")]
    if not groups:
        return None

    def flat(idx: Iterable[int]) -> list[dict[str, Any]]:
        return [p for i in idx for p in groups[i]]

    def stat(fn: Callable[[list[dict[str, Any]]], float | None]) -> dict[str, Any]:
        value, low, high = m.bootstrap_statistic(len(groups), lambda idx: fn(flat(idx)), seed=seed, samples=500)
        return {"value": value, "low": low, "high": high}

    def balanced(pairs: list[dict[str, Any]]) -> float | None:
        return m.balanced_accuracy([p["gold_supported"] for p in pairs], [_predicted(p) for p in pairs])

    def area(pairs: list[dict[str, Any]]) -> float | None:
        return m.auroc([p.get("p_supported", p["s_sup"]) for p in pairs], [p["gold_supported"] for p in pairs])

    pairs = flat(range(len(groups)))
    tp = sum(p["gold_supported"] and _predicted(p) for p in pairs)
    fp = sum(not p["gold_supported"] and _predicted(p) for p in pairs)
    fn = sum(p["gold_supported"] and not _predicted(p) for p in pairs)
    tn = len(pairs) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    by_label: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = by_label.setdefault(p.get("gold_label", ""), {"fully": 0, "partially": 0, "no": 0})
        row[p["support"]] = row.get(p["support"], 0) + 1
    return {
        "pairs": len(pairs),
        "balanced_accuracy": stat(balanced),
        "auroc_s_sup": stat(area),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "support_by_gold_label": by_label,
        "defaulted": sum(p.get("status") == "defaulted" for p in pairs),
        "estimators": sorted({p.get("estimator", "") for p in pairs}),
    }


def _predicted(pair: dict[str, Any]) -> bool:
    """The critic's verdict: the scorer's (P(supported) over its threshold) where recorded, else the label."""
    if "supported" in pair:
        return bool(pair["supported"])
    return pair["support"] in (Support.FULLY.value, Support.PARTIALLY.value)


# -- reading a run folder and printing tables ------------------------------------------------------------


def score_run(run_dir: str | Path) -> dict[str, Any]:
    """The summary of a run folder, recomputed from config.json and samples.jsonl (read-only)."""
    folder = Path(run_dir)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    records, _ = read_samples(folder / "samples.jsonl", repair=False)
    dataset = config["dataset"]
    summary = summarize(records.values(), task=dataset["task"], labels=dataset.get("labels", ()), seed=config["seed"])
    return {"label": run_label(config), "dataset": dataset["name"], "summary": summary}


def run_label(config: dict[str, Any]) -> str:
    """A run's name in tables: its system, and whether its corpus lost the gold evidence or it ran on training ids."""
    label = config["system"]["label"] + (" (unanswerable)" if config.get("corpus", {}).get("unanswerable") else "")
    return label + (" (train)" if config.get("sample", {}).get("split") == "train" else "")


def _fmt(metric: dict[str, Any] | None, *, percent: bool) -> str:
    if not metric or metric.get("value") is None:
        return "–"
    scale = 100 if percent else 1
    value, low, high = (metric[k] * scale if metric.get(k) is not None else None for k in ("value", "low", "high"))
    digits = 1 if percent or abs(value) >= 10 else 2  # type: ignore[arg-type]
    if low is None or high is None or not percent:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _cell(summary: dict[str, Any], column: str) -> str:
    """One table cell. A run served mostly from the request cache gets no seconds per question: its wall time
    is replay time, and the calls' recorded latencies overlap (they queued together), so neither is a cost."""
    if column == "wall_time" and summary.get("cache_hits", 0) > summary.get("requests_sent", 0):
        return "cached"
    return _fmt(summary["metrics"].get(column), percent=column not in COST_METRICS)


EVIDENCE_AND_COST = (
    "coverage",
    "evidence_mass",
    "citation_precision",
    "citation_recall",
    "confidence",
    "retrieval_frequency",
    "llm_calls",
    "total_tokens",
    "wall_time",
)
QA_COLUMNS = ("match", "em", "f1", "correct", "abstained", *EVIDENCE_AND_COST[:4], "unstated", *EVIDENCE_AND_COST[4:])
CLAIM_COLUMNS = ("accuracy", "macro_f1", *EVIDENCE_AND_COST)
HEADERS = {
    "match": "match",
    "em": "EM",
    "f1": "F1",
    "correct": "correct",
    "accuracy": "acc",
    "macro_f1": "macro-F1",
    "coverage": "coverage",
    "evidence_mass": "ev. mass",
    "citation_precision": "cite P",
    "citation_recall": "cite R",
    "confidence": "conf",
    "retrieval_frequency": "ret. freq",
    "llm_calls": "calls/q",
    "total_tokens": "tokens/q",
    "wall_time": "s/q",
    "abstained": "abst.",
    "unstated": "unstated",
}


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """One table per dataset: a row per run, percentages with 95 % intervals, costs as means."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        group = [r for r in rows if r["dataset"] == dataset]
        answer_rows = [r for r in group if "critic" not in r["summary"]]
        critic_rows = [r for r in group if "critic" in r["summary"]]
        if answer_rows:
            task_is_claim = "accuracy" in answer_rows[0]["summary"]["metrics"]
            columns = CLAIM_COLUMNS if task_is_claim else QA_COLUMNS
            out.append(f"### {dataset}\n")
            out.append(
                "| system | n | failed | "
                + " | ".join(HEADERS[c] for c in columns)
                + " | ECE | declined r/p/c/u(/d/a/n/q) |"
            )
            out.append("|---" * (len(columns) + 5) + "|")
            for r in answer_rows:
                s = r["summary"]
                cells = [_cell(s, c) for c in columns]
                ece = s["calibration"].get("critique", {}).get("ece")
                out.append(
                    f"| {r['label']} | {s['n']} | {s['failed']} | "
                    + " | ".join(cells)
                    + f" | {'–' if ece is None else f'{ece:.3f}'} | {_declined(s)} |"
                )
            out.append("")
        for r in critic_rows:
            c = r["summary"]["critic"]
            out.append(f"### {dataset}: critic agreement (ISSUP vs gold)\n")
            out.append("| pairs | balanced acc. | AUROC s_sup | precision | recall | F1 | defaulted |")
            out.append("|---|---|---|---|---|---|---|")
            pr = "–" if c["precision"] is None else f"{100 * c['precision']:.1f}"
            rc = "–" if c["recall"] is None else f"{100 * c['recall']:.1f}"
            out.append(
                f"| {c['pairs']} | {_fmt(c['balanced_accuracy'], percent=True)} | "
                f"{_fmt(c['auroc_s_sup'], percent=True)} | {pr} | {rc} | {100 * c['f1']:.1f} | {c['defaulted']} |"
            )
            out.append("")
    return "\n".join(out)


def _declined(summary: dict[str, Any]) -> str:
    """Candidates declined or cut over the run, by reason: question restated / draft repeated / several
    sentences cut to one / unsupported / about the document / no amount where one was asked ("–" for systems
    without candidates; the later reasons only up to the last one the run counted)."""
    metrics, n = summary["metrics"], summary["n"]
    counts = [metrics.get(f"flag_{flag}") for flag in FLAGS]
    if all(c is None for c in counts):
        return "–"
    later = [metrics.get(f"flag_{flag}") for flag in LATER_FLAGS]
    while later and later[-1] is None:
        later.pop()
    return "/".join(str(round((c or {}).get("value", 0.0) * (c or {}).get("n", n))) for c in [*counts, *later])


def calibration_table(rows: Sequence[dict[str, Any]]) -> str:
    """Per run: correctness beside the mean of each confidence and its expected calibration error, with in
    brackets the ECE a calibrated engine with the same confidences would show on average (`calibrated_ece`)."""
    header = (
        "| dataset | system | n | correct | critique conf. | ECE | AUROC | AURC "
        "| similarity conf. | ECE | AUROC | AURC |"
    )
    out = [header, "|---" * 12 + "|"]
    for r in rows:
        s = r["summary"]
        if "critic" in s:
            continue
        quality = s["metrics"].get("correct") or s["metrics"].get("accuracy")
        cells = []
        for metric, key in (("confidence", "critique"), ("similarity_confidence", "similarity")):
            ece, area, risk, bins = (
                s["calibration"].get(key, {}).get(name) for name in ("ece", "auroc", "aurc", "bins")
            )
            noise = m.calibrated_ece(bins) if bins else None
            said = "–" if ece is None else f"{ece:.3f}" + ("" if noise is None else f" ({noise:.3f})")
            cells += [_fmt(s["metrics"].get(metric), percent=True), said]
            cells.append("–" if area is None else f"{area:.2f}")
            cells.append("–" if risk is None else f"{risk:.3f}")
        out.append(
            f"| {r['dataset']} | {r['label']} | {s['n']} | {_fmt(quality, percent=True)} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out)
