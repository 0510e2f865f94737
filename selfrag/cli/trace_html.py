"""A Result's search tree as one self-contained HTML page, for `ask --trace-html` and chat's `/save`.

The page holds the question, the cited answer and its sources, then the beam search as a nested tree: each
beam's retrieval decision, and under it every candidate sentence it produced with its chunk, critique labels,
score and fate (kept, pruned, failed, gated, fallback); a chunk with injection markers carries a "suspicious"
badge naming them (a report: it was scored like any other); the candidates and beams of the returned answer are
marked as the final path. A footer carries usage and the stop reason.

What it does not do: fetch anything. Styles are inline, there is no script, no font or image by URL, and a
Content-Security-Policy forbids every network load. Every string from the model, the documents or the config
is escaped, so a `<script>` or a markdown image in a sentence shows as text.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..files import write_atomic
from ..result import CritiqueOut, Result, Source, TraceBeam, TraceCandidate
from ..text import clean_for_terminal

_CSS = """
:root{--bg:#f6f7f9;--card:#fff;--ink:#1d2330;--muted:#667085;--line:#d5dae1;--accent:#2563eb;--path:#f59e0b;
--kept:#16a34a;--pruned:#98a2b3;--failed:#dc2626;--gated:#d97706;--fallback:#7c3aed;--code:#eef1f5}
@media (prefers-color-scheme:dark){:root{--bg:#12151b;--card:#1b2029;--ink:#e6e9ef;--muted:#98a2b3;
--line:#343b48;--code:#252b36}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,"Liberation Sans",sans-serif}
main{max-width:1120px;margin:0 auto;padding:28px 24px 40px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 10px;color:var(--muted);text-transform:uppercase;
letter-spacing:.06em}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:13px}
code{background:var(--code);padding:1px 5px;border-radius:4px;white-space:nowrap}
.panel{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px;margin:12px 0}
.meta{color:var(--muted);font-size:13px}.meta b{color:var(--ink);font-weight:600}
.question{font-size:18px;font-weight:600}.gap{margin-top:12px}
.answer{font-size:17px;margin-top:6px}
.cite{font-size:11px;font-weight:700;vertical-align:super;color:var(--accent);text-decoration:none;margin-left:2px}
.sources{list-style:none;padding:0;margin:4px 0 0}.sources li{margin:8px 0}
.doc{white-space:pre-wrap;color:var(--muted);font-size:13px;max-height:7.5em;overflow:auto;margin:2px 0 0}
.legend{display:flex;flex-wrap:wrap;gap:8px;margin:6px 0 4px}
.badge{display:inline-block;font-size:11px;font-weight:700;letter-spacing:.04em;text-transform:uppercase;
padding:1px 7px;border-radius:999px;color:#fff;background:var(--muted);white-space:nowrap}
.b-kept{background:var(--kept)}.b-pruned{background:var(--pruned)}.b-failed{background:var(--failed)}
.b-gated{background:var(--gated)}.b-fallback{background:var(--fallback)}
.b-suspicious{background:#be185d}.b-path{background:var(--path);color:#3b2300}.b-stop{background:var(--accent)}
.b-flag{background:#7c3aed}.b-extracted{background:#0f766e}.written{color:var(--muted);font-size:13px;text-decoration:line-through}
.beam{margin:10px 0 4px;padding:6px 10px;border-radius:8px;background:var(--code);font-size:13px;
color:var(--ink);cursor:pointer}
.beam .id{font-weight:700}.beam.final-path{background:#fff4d6;outline:2px solid var(--path)}
@media (prefers-color-scheme:dark){.beam.final-path{background:#3a2c0a}}
.kids{margin:0 0 0 10px;padding:2px 0 2px 14px;border-left:2px solid var(--line)}
.sub{margin-left:26px}
.cand{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--pruned);border-radius:8px;
padding:8px 12px;margin:8px 0}
.cand.kept{border-left-color:var(--kept)}.cand.failed{border-left-color:var(--failed)}
.cand.gated{border-left-color:var(--gated)}.cand.fallback{border-left-style:double;border-left-width:7px}
.cand.pruned .text{color:var(--muted)}
.cand.failed{background:color-mix(in srgb,var(--failed) 6%,var(--card))}
.cand.gated{background:color-mix(in srgb,var(--gated) 7%,var(--card))}
.cand.final-path{border-color:var(--path);box-shadow:0 0 0 2px var(--path)}
.head{display:flex;flex-wrap:wrap;align-items:center;gap:8px;font-size:13px;color:var(--muted)}
.score{margin-left:auto;font-size:13px}.score b{color:var(--ink)}
.text{font-size:15px;margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.error{color:var(--failed);font-size:13px;white-space:pre-wrap;overflow-wrap:anywhere}
.labels{display:flex;flex-wrap:wrap;gap:6px;font-size:12px}
.lab{border:1px solid var(--line);border-radius:6px;padding:0 6px}.lab b{font-weight:700}
.lab .p{color:var(--muted)}
footer summary{cursor:pointer;font-size:13px}
footer{margin-top:28px;font-size:13px;color:var(--muted)}
.usage{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:6px 16px}
.usage b{color:var(--ink)}
"""

_CSP = (
    "default-src 'none'; img-src 'none'; font-src 'none'; connect-src 'none'; script-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()}'; "
    "base-uri 'none'; form-action 'none'"
)

_DECISIONS = {"yes": "retrieve", "no": "no retrieval", "continue": "reuse evidence"}
_LABELS = (("relevance", "IsRel"), ("support", "IsSup"), ("utility", "IsUse"))
_STATUS_ORDER = {"kept": 0, "pruned": 1, "gated": 2, "failed": 3}


def render_trace_html(result: Result) -> str:
    """The whole page for one answer; pure and deterministic."""
    body = "".join((_summary(result), _legend(), _tree(result), _footer(result)))
    title = _e(f"selfrag trace: {result.question[:80]}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{_CSS}</style></head>\n<body><main>{body}</main></body></html>\n"
    )


def write_trace_html(result: Result, path: str | os.PathLike[str]) -> Path:
    """Render the page, then write it atomically (the old file stays whole if anything fails)."""
    return write_atomic(path, render_trace_html(result))


def _e(value: object) -> str:
    """Escaped text: no markup, no controls, no bidi overrides or zero-width characters."""
    return html.escape(clean_for_terminal(str(value)), quote=True)


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


# ── top: question, answer, sources ──────────────────────────────────────────────────────────────────────────────


def _summary(result: Result) -> str:
    width, depth = result.config.get("beam_width", "?"), result.config.get("max_depth", "?")
    meta = (
        f"model <b>{_e(result.model or 'unknown')}</b> · beam width <b>{_e(width)}</b> · max depth <b>{_e(depth)}</b>"
        f" · {len(result.trace.steps)} steps · critique from <b>{_e(_estimators(result))}</b>"
        f" · confidence <b>{result.confidence:.2f}</b> · "
        f'<span class="badge b-stop">stop: {_e(result.stop_reason)}</span>'
    )
    return (
        f'<h1>Self-RAG search trace</h1><div class="meta">{meta}</div>'
        f'<section class="panel"><div class="meta">Question</div><div class="question">{_e(result.question)}</div>'
        f'<div class="meta gap">Answer</div><div class="answer">{_answer(result)}</div></section>'
        f"{_sources(result)}"
    )


def _estimators(result: Result) -> str:
    found = {c.critique.estimator for s in result.trace.steps for c in s.candidates if c.critique}
    return " + ".join(sorted(found)) or "–"


DECIDED_BY = {  # a short answer the documents decided, with no model call (engine.decide, engine.values)
    "dates": ": the two options' dates in the documents",
    "traits": ": what the question asks for, found in one option's own sentences only",
    "counts": ": how many of what the question counts each option's own sentences state, compared",
    "same": ": the peoples, years, families or US states the two names' own sentences give, compared",
    "both": ": what the question asks of both, found in each one's own sentences",
    "one": ": what the question asks of both, found in one's own sentences and not the other's",
    "stated": ": a clause of the documents holding every word the question asks, denied or not",
    "value": ": the value asked, as every clause of the documents holding the question's words states it",
}


def _answer(result: Result) -> str:
    if not result.segments and not result.lead:
        return f'<span class="meta">{_e(result.answer) or "(no answer)"}</span>'
    parts = []
    if result.lead:  # the short answer that opens the answer, and where it came from
        how = "the short answer" + DECIDED_BY.get(result.lead_from or "", "")
        alone = [] if result.segments else [s.n for s in result.sources]  # standing alone, it cites what decided it
        parts.append(f'<b title="{_e(how)}">{_cited(result.lead, alone)}</b>')
    for segment in result.segments:
        numbers = [] if segment.citation is None else [segment.citation, *segment.also]
        parts.append(_cited(segment.text, numbers))
    return " ".join(parts)


def _cited(text: str, numbers: list[int]) -> str:
    """The text, escaped, with links to its sources before its closing punctuation ("No [1, 2].")."""
    text = text.rstrip()
    if not numbers:
        return _e(text)
    end = len(text.rstrip(".!?…\"'”’)"))
    links = ", ".join(f'<a class="cite" href="#src-{n}">{n}</a>' for n in numbers)
    return f"{_e(text[:end])} [{links}]{_e(text[end:])}"


def _sources(result: Result) -> str:
    if not result.sources:
        return ""
    items = "".join(_source(source) for source in result.sources)
    return f'<section class="panel"><div class="meta">Sources</div><ul class="sources">{items}</ul></section>'


def _source(s: Source) -> str:
    origin = f' <span class="meta">{_e(s.source)}</span>' if s.source else ""
    return (
        f'<li id="src-{s.n}"><b>[{s.n}] {_e(s.title or s.doc_id)}</b> <code>{_e(s.doc_id)}#{s.chunk_id}</code>'
        f'{origin}<div class="doc">{_e(s.text)}</div></li>'
    )


def _legend() -> str:
    badges = [f'<span class="badge b-{s}">{s}</span>' for s in ("kept", "pruned", "failed", "gated", "fallback")]
    badges.append('<span class="badge b-path">★ final path</span>')
    note = "f: the sentence's critique score · aggregate: the beam's score with it, which pruning ranks"
    return f'<h2>Search tree</h2><div class="legend">{"".join(badges)}</div><div class="meta">{note}</div>'


# ── the tree: beam → its candidates → the beams they became → ... ───────────────────────────────────────────────


@dataclass(frozen=True)
class _Tree:
    beams: dict[str, tuple[int, TraceBeam]]  # beam id -> (step, its decision)
    children: dict[str, list[tuple[int, TraceCandidate]]]  # parent beam id -> (step, candidate)
    path: frozenset[str]
    cited: dict[str, int]  # chunk key -> citation number in the answer
    suspicious: dict[str, list[str]]  # chunk key -> injection markers in its text


def _tree(result: Result) -> str:
    steps = result.trace.steps
    if not steps:
        return '<p class="meta">No step was recorded.</p>'
    children: dict[str, list[tuple[int, TraceCandidate]]] = defaultdict(list)
    for step in steps:
        for candidate in step.candidates:
            children[candidate.parent].append((step.step, candidate))
    tree = _Tree(
        beams={b.beam: (s.step, b) for s in steps for b in s.beams},
        children=dict(children),
        path=frozenset(result.trace.final_path),
        cited={f"{s.doc_id}#{s.chunk_id}": s.n for s in result.sources},
        suspicious={key: why for s in steps for b in s.beams for key, why in b.suspicious.items()},
    )
    return "".join(_node(tree, beam.beam) for beam in steps[0].beams)


def _node(tree: _Tree, beam_id: str) -> str:
    """A beam's decision, then its candidates (final path first), each followed by the beam it became."""
    items = []
    for step, candidate in sorted(tree.children.get(beam_id, []), key=lambda sc: _rank(tree, sc[1])):
        items.append(_candidate(tree, step, candidate))
        child = candidate.child
        if child is not None and (child in tree.beams or child in tree.children):
            items.append(f'<div class="sub">{_node(tree, child)}</div>')
    kids = f'<div class="kids">{"".join(items)}</div>' if items else ""
    if beam_id not in tree.beams:
        return kids
    return f'<details open class="node">{_beam(tree, beam_id)}{kids}</details>'


def _rank(tree: _Tree, candidate: TraceCandidate) -> tuple[bool, int]:
    return candidate.child not in tree.path, _STATUS_ORDER.get(candidate.status, len(_STATUS_ORDER))


def _beam(tree: _Tree, beam_id: str) -> str:
    step, beam = tree.beams[beam_id]
    on_path = beam_id in tree.path
    bits = [f'<span class="id">beam {_e(beam_id)}</span>', f"step {step + 1}", _decision(beam)]
    if beam.query:
        bits.append(f"query <code>{_e(beam.query)}</code>")
    if beam.chunks:
        bits.append("chunks " + ", ".join(_chunk(tree, key) for key in beam.chunks))
    marker = ' <span class="badge b-path">★ final path</span>' if on_path else ""
    cls = "beam final-path" if on_path else "beam"
    return f'<summary class="{cls}" data-beam="{_e(beam_id)}">{" · ".join(bits)}{marker}</summary>'


def _decision(beam: TraceBeam) -> str:
    text = f"<b>{_e(_DECISIONS.get(beam.decision, beam.decision))}</b>"
    if beam.p_retrieve is not None:
        text += f" · P(retrieve) {beam.p_retrieve:.2f}"
    if beam.raw_label and beam.raw_label != beam.decision:
        text += f' <span class="meta">model said {_e(beam.raw_label)}</span>'
    return text


def _chunk(tree: _Tree, key: str | None) -> str:
    if key is None:
        return '<span class="meta">no evidence</span>'
    n = tree.cited.get(key)
    cite = f'<a class="cite" href="#src-{n}">[{n}]</a>' if n else ""
    why = tree.suspicious.get(key)
    flag = f' <span class="badge b-suspicious" title="{_e(", ".join(why))}">suspicious</span>' if why else ""
    return f"<code>{_e(key)}</code>{cite}{flag}"


_FLAG_TITLES = {
    "restates_question": "declined: it restates the question",
    "repeats_draft": "declined: it repeats a sentence already in the answer",
    "several_sentences": "cut to the one sentence worth keeping",
    "about_the_document": "declined: it speaks of the document, not the world",
    "no_amount": "declined: the question asks how many or how much and it states no amount",
    "unsupported": "declined: its support is under the abstention cut",
    "disowned": "declined: the model called it irrelevant and unsupported, and its beam had no other sentence",
    "superseded": "declined: its document is superseded by one also retrieved",
    "unstated": "declined: it states what its document does not hold, and no sentence of the document was its source",
    "quoted": "replaced by the sentence of its document it was drawn from (the model's stated what that one does not)",
}


def _candidate(tree: _Tree, step: int, c: TraceCandidate) -> str:
    on_path = c.child is not None and c.child in tree.path
    classes = ["cand", c.status, *(["fallback"] if c.fallback else []), *(["final-path"] if on_path else [])]
    badges = [f'<span class="badge b-{c.status}">{c.status}</span>']
    if c.fallback:
        badges.append('<span class="badge b-fallback">fallback</span>')
    if c.pooled:
        badges.append('<span class="badge b-pooled" title="written from all of the step\'s chunks">pooled</span>')
    if c.second_hop:
        badges.append('<span class="badge b-hop" title="pruned in its step, then added">second hop</span>')
    if c.extracted:
        title = "its document's own sentence, extracted beside the model's and rated like it (no call wrote it)"
        badges.append(f'<span class="badge b-extracted" title="{title}">extracted</span>')
    if c.asked_again:
        title = "asked for once more, the question after the document, after its chunk's first sentence restated it"
        badges.append(f'<span class="badge b-extracted" title="{title}">asked again</span>')
    if c.flag:  # why it was declined or cut, or that its document's own sentence replaced it
        badges.append(f'<span class="badge b-flag" title="{_e(_FLAG_TITLES.get(c.flag, c.flag))}">{_e(c.flag)}</span>')
    if on_path:
        badges.append('<span class="badge b-path">★ final path</span>')
    became = f"→ <b>{_e(c.child)}</b>" if c.child else ""
    score = ""
    if c.score is not None or c.aggregate is not None:
        score = f'<span class="score">f <b>{_num(c.score)}</b> · aggregate <b>{_num(c.aggregate)}</b></span>'
    head = " ".join([*badges, became, f"from {_e(c.parent)}", _chunk(tree, c.chunk), score])
    text = f'<div class="text">{_e(c.text)}</div>' if c.text else ""
    if c.written:
        text += f'<div class="written">the model wrote: {_e(c.written)}</div>'
    error = f'<div class="error">{_e(c.error)}</div>' if c.error else ""
    labels = _critique(c.critique) if c.critique else ""
    attrs = f'class="{" ".join(classes)}" data-status="{c.status}" data-step="{step}"'
    return f'<div {attrs}><div class="head">{head}</div>{text}{error}{labels}</div>'


def _critique(critique: CritiqueOut) -> str:
    values = {"relevance": critique.relevance, "support": critique.support, "utility": critique.utility}
    show_p = critique.estimator in ("logprobs", "reflection-tokens")  # reflection tokens: their own probabilities
    chips = [
        f'<span class="lab">{token} {_label(str(values[name]), critique.probs.get(name, {}) if show_p else {})}</span>'
        for name, token in _LABELS
        if values[name] is not None
    ]
    notes = []
    if critique.is_final:
        notes.append("ends the answer")
    if critique.quote_ok is False:
        notes.append("evidence quote not found in chunk")
    if critique.truncated:
        notes.append("some labels beyond top-k logprobs")
    if critique.seq_prob is not None:
        notes.append(f"sentence p {critique.seq_prob:.2f}")
    if critique.status != "ok":
        notes.append(f"critique {_e(critique.status)}")
    return f'<div class="labels">{"".join(chips)}<span class="meta">{" · ".join(notes)}</span></div>'


def _label(label: str, dist: dict[str, float]) -> str:
    """'<b>fully</b> 0.85 · partially 0.15': the chosen label first, then the others by probability."""
    chosen = f"<b>{_e(label)}</b>" + (f" {dist[label]:.2f}" if label in dist else "")
    others = sorted(((p, other) for other, p in dist.items() if other != label and p >= 0.005), reverse=True)
    return chosen + "".join(f' <span class="p">· {_e(other)} {p:.2f}</span>' for p, other in others)


# ── footer: usage and stop reason ───────────────────────────────────────────────────────────────────────────────


def _footer(result: Result) -> str:
    u = result.usage
    cells = [
        ("stop reason", result.stop_reason),
        ("LLM calls", u.llm_calls),
        ("rounds", u.rounds),
        ("steps", u.steps),
        ("prompt tokens", u.prompt_tokens),
        ("completion tokens", u.completion_tokens),
        ("total tokens", f"{u.total_tokens}{' (estimated)' if u.estimated else ''}"),
        ("cached tokens", u.cached_tokens),
        ("wall time", f"{u.wall_time:.2f} s"),
        ("retrieval frequency", f"{u.retrieval_frequency:.2f}"),
        ("re-asks", u.reasks),
        ("failed calls", u.failed_calls),
    ]
    reply = result.trace.lead_reply
    if reply is not None:  # what the short-answer call said, and whether it opens the answer
        if result.trace.lead_held:  # checked, then not printed: the model's answers of its kind are untrusted
            reply += " (held back: the model's short answers of this kind were more often wrong than right in training)"
        elif not result.lead:
            reply += " (not printed)"
        cells.append(("short-answer call replied", reply))
    grid = "".join(f"<div>{_e(name)} <b>{_e(value)}</b></div>" for name, value in cells)
    return (
        f'<footer class="panel"><div class="usage">{grid}</div>'
        f"{_details('prompt versions', result.trace.prompts.items())}"
        f"{_details('config', result.config.items())}</footer>"
    )


def _details(title: str, items: Iterable[tuple[str, object]]) -> str:
    rows = " · ".join(f"{_e(key)} <b>{_e(value)}</b>" for key, value in items)
    return f"<details><summary>{_e(title)}</summary><div>{rows}</div></details>" if rows else ""
