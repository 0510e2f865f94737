"""Parsing decoded text into documents: plain text, Markdown, HTML and JSON lines.

- .txt: the text; title = file name without suffix.
- .md/.markdown: optional `---` front matter (`title:`, `date:` lines; no YAML library, other keys ignored),
  title = front matter, else the first `# ` heading in the first 4 KiB, else the file name.
- .html/.htm: visible text via the stdlib `html.parser`; script, style, noscript, template, svg, iframe and
  object content is dropped; block tags become line breaks; title from `<title>`; date from a
  `<meta name="date">` (or article:published_time, dc.date, pubdate) tag.
- .jsonl: one document per line with `id` (or BEIR's `_id`) and `text`, optional `title`, `date`, `source`;
  other fields go to `meta`. A bad line raises InputError naming the file and line.

Dates are normalised to YYYY-MM-DD (time of day dropped). Text is NFC-normalised with `\\n` line ends.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import PurePosixPath

from ..errors import InputError

_RESERVED = {"id", "_id", "title", "text", "date", "source"}
_BRACKET = re.compile(r"[<>]")


@dataclass(frozen=True, slots=True)
class Document:
    """One document as read from disk, before chunking."""

    doc_id: str
    text: str
    title: str = ""
    source: str = ""
    date: str | None = None  # ISO calendar date, YYYY-MM-DD
    meta: Mapping[str, object] = field(default_factory=dict)
    encoding: str = "utf-8"


def normalise(text: str) -> str:
    """`\\n` line ends and NFC."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


MAX_PDF_PAGES = 2000


def pdf_document(data: bytes, doc_id: str, source: str) -> Document | str:
    """The text of a PDF (pypdf, an optional extra), or the reason it was skipped."""
    try:
        import pypdf
    except ImportError:
        return "PDF support needs pypdf: pip install 'selfrag[pdf]'"
    import io
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed files are reported as a skip, not as noise
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            return "encrypted PDF"
        if len(reader.pages) > MAX_PDF_PAGES:
            return f"PDF has more than {MAX_PDF_PAGES} pages"
        text = "\n\n".join((page.extract_text() or "").strip() for page in reader.pages)
        title = str((reader.metadata or {}).get("/Title") or "")
    except Exception as error:  # pypdf raises many types on broken files; any of them only skips the file
        return f"unreadable PDF ({type(error).__name__})"
    return Document(doc_id, normalise(text).strip(), title or PurePosixPath(doc_id).stem, source, None, encoding="pdf")


def parse_text(kind: str, text: str, doc_id: str, source: str, encoding: str) -> Document:
    """One document from a decoded .txt ("text"), .md ("markdown") or .html ("html") file."""
    stem = PurePosixPath(doc_id).stem
    if kind == "html":
        title, body, date = html_to_text(text)
        return Document(doc_id, body.strip(), title or stem, source, date, encoding=encoding)
    title, date = "", None
    if kind == "markdown":
        title, date, text = _front_matter(text)
        title = title or _first_heading(text)
    return Document(doc_id, text.strip(), title or stem, source, date, encoding=encoding)


def _front_matter(text: str) -> tuple[str, str | None, str]:
    if not text.startswith("---\n"):
        return "", None, text
    end = text.find("\n---", 4, 4 + 16384)
    if end < 0:
        return "", None, text
    fields = dict(
        (key.strip().lower(), value.strip().strip("\"'"))
        for key, sep, value in (line.partition(":") for line in text[4:end].splitlines())
        if sep
    )
    body = text[end + 4 :].split("\n", 1)[1] if "\n" in text[end + 4 :] else ""
    return fields.get("title", ""), parse_date(fields.get("date"), lenient=True), body


def _first_heading(text: str) -> str:
    match = re.search(r"^#[ \t]+(.*)$", text[:4096], re.M)
    return match.group(1).rstrip(" \t#").strip() if match else ""


def parse_date(value: object, *, lenient: bool = False) -> str | None:
    """An ISO date or datetime as YYYY-MM-DD; None when absent. Bad values raise ValueError (None if lenient)."""
    if value is None or value == "":
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        text = value.strip()
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
        return dt.datetime.fromisoformat(text).date().isoformat()
    except ValueError:
        if lenient:
            return None
        raise


class _HtmlText(HTMLParser):
    SKIP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
    BLOCK = frozenset(
        "p div br li ul ol h1 h2 h3 h4 h5 h6 tr table section article header footer pre blockquote dd dt hr".split()
    )
    DATE_META = frozenset({"date", "article:published_time", "dc.date", "pubdate", "publication_date"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.date: str | None = None
        self.skip = 0
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "title":
            self.in_title = True
        elif tag == "meta":
            values = {k: v or "" for k, v in attrs}
            if (values.get("name") or values.get("property", "")).lower() in self.DATE_META and not self.date:
                self.date = parse_date(values.get("content"), lenient=True)
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "title":
            self.in_title = False
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        (self.title if self.in_title else self.parts).append(data)


def html_to_text(html: str) -> tuple[str, str, str | None]:
    """(title, visible text, date from a <meta> tag) of an HTML page."""
    parser = _HtmlText()
    parser.feed(_defuse(html))
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return " ".join("".join(parser.title).split()), text.strip(), parser.date


def _defuse(html: str) -> str:
    """Escape every `<` that another `<` follows before any `>`: such a `<` cannot open a tag.

    Python's html.parser (3.11.7 here) rescans to the next `>` from every `<`, so input like "</</</..." is
    quadratic (400 kB took 22 s; cf. CVE-2025-6069). After this pass each stretch is scanned once: linear.
    """
    pieces, start = [], 0
    brackets = [(m.start(), m.group()) for m in _BRACKET.finditer(html)] + [(len(html), "<")]
    for (at, char), (_, following) in pairwise(brackets):
        if char == "<" and following == "<":
            pieces += [html[start:at], "&lt;"]
            start = at + 1
    pieces.append(html[start:])
    return "".join(pieces)


def parse_jsonl(text: str, source: str, *, encoding: str = "utf-8") -> list[Document]:
    """Documents from JSON lines with `id` (or `_id`) and `text`; any bad line raises InputError naming it."""
    documents: list[Document] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        document = _jsonl_document(line, f"{source}:{number}", source, encoding)
        if document.doc_id in first_line:
            raise InputError(
                f"{source}:{number}: duplicate id {document.doc_id!r} (first on line {first_line[document.doc_id]});"
                " give every line a unique id"
            )
        first_line[document.doc_id] = number
        documents.append(document)
    return documents


def _jsonl_document(line: str, where: str, source: str, encoding: str) -> Document:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
        raise InputError(f"{where}: not valid JSON ({reason}); fix or remove that line") from error
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object with 'id' and 'text'; fix or remove that line")
    doc_id = record.get("id", record.get("_id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id).strip() == "":
        raise InputError(f"{where}: missing 'id' (a non-empty string or integer); every line needs a unique id")
    body, title = record.get("text"), record.get("title", "")
    if not isinstance(body, str) or not isinstance(title, (str, type(None))):
        raise InputError(f"{where}: 'text' (and 'title', if given) must be strings")
    try:
        date = parse_date(record.get("date"))
    except ValueError as error:
        raise InputError(f"{where}: 'date' {record.get('date')!r} is not an ISO date such as 2026-04-01") from error
    origin = record.get("source")
    meta = {k: v for k, v in record.items() if k not in _RESERVED}
    return Document(
        str(doc_id),
        normalise(body).strip(),
        normalise(title or "").strip(),
        origin if isinstance(origin, str) and origin else source,
        date,
        meta,
        encoding,
    )
