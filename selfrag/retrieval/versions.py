"""Versions of one topic, read at index time: a document's date, what it says it replaces, and its sketch.

`facts(...)` reads one document; `link(...)` (supersession.py) turns the facts of a corpus into links.

- Date, first found of: the format's own date (front matter `date:`, an HTML `<meta name="date">`, a jsonl
  `date`); a labelled line near the top (`Updated:`, `Last updated:`, `Date:`, `Effective:`, `Published:`,
  `Revised:`) holding an ISO date, "15 January 2026", "January 15, 2026", "January 2026" or a year; a date
  or year in the title; a date or year in the file name. The file's mtime is never used: copying a folder
  changes it. A date that cannot exist (2026-02-30) is skipped with a note and the next source is tried.
  Precision is kept: "2026" and "2026-01" are dates too, compared only at the precision both have.
- Claims: "replaces ...", "supersedes ..." (the reference names the older version: a file name, a date such
  as "of May 2024", words of its title) and "replaced by ..." / "superseded by ..." (naming the newer one).
  Only the first `CLAIM_CHARS` characters are searched: such a sentence opens a revised document.
- Sketch: the smallest `SKETCH` hashes of the document's word sets (unigrams and word 3-shingles), so two
  documents' Jaccard similarity is estimated without keeping their text (bottom-k, Broder 1997).

Nothing here reads the clock: whether a date lies in the future is decided by `link`, given today's date.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

SCAN_CHARS = 2_000  # where a labelled date line is looked for
CLAIM_CHARS = 4_000  # where "replaces ..." sentences are looked for
SKETCH_CHARS = 20_000  # text sketched for near-duplicate detection
SKETCH = 64

MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DATE_PATTERNS = (
    ("ymd", re.compile(rf"(?<!\d){_YEAR}[-/.](\d{{1,2}})[-/.](\d{{1,2}})(?!\d)")),
    ("dmy", re.compile(rf"(?<!\w)(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\s*,?\s+{_YEAR}(?!\d)", re.I)),
    ("mdy", re.compile(rf"(?<!\w){_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,\s*{_YEAR}(?!\d)", re.I)),
    ("my", re.compile(rf"(?<!\w){_MONTH}\s+(?:of\s+)?{_YEAR}(?!\d)", re.I)),
    ("y", re.compile(rf"(?<![\w.]){_YEAR}(?!\d)")),  # not inside a word or an id ("k1998")
)
_LABEL = re.compile(
    r"^[\s>*_#|-]*(last[ -]updated|last[ -]modified|updated|revised|effective(?: date| from)?|published|dated?)"
    r"[*_]*\s*:[*_]*\s*(.+)$",
    re.I | re.M,
)
_CLAIM = re.compile(  # the reference runs to the end of the sentence; a dot inside a file name does not end it
    r"\b(replaces|supersedes|(?:is |was |has been )?(?:replaced|superseded) by)\s+((?:[^.;\n]|\.(?=\w)){1,160})", re.I
)
_FILE_REF = re.compile(r"[\w./-]+\.(?:md|markdown|txt|html?|jsonl|pdf)\b", re.I)
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has in is it its of on or that the this to was were will with our your "
    "version versions current new old older newer latest updated revised draft final policy document page".split()
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One sentence naming another version: `newer` is True for "replaces X" (this one is newer than X)."""

    newer: bool
    text: str  # the reference as written ("the late return policy of May 2024")


@dataclass(frozen=True, slots=True)
class Facts:
    """What one document says about its version; kept per document in `versions.json` and reused unchanged."""

    doc_id: str
    title: str
    date: str | None  # YYYY-MM-DD, YYYY-MM or YYYY; None when no source gave a real date
    date_from: str  # format | line | title | file name | "" (none)
    claims: tuple[Claim, ...]
    words: tuple[int, ...]  # bottom-k sketch of the content words
    shingles: tuple[int, ...]  # bottom-k sketch of the word 3-shingles
    notes: tuple[str, ...] = ()  # dates that could not exist, as "<where>: <what>"

    @property
    def topic(self) -> str:
        return topic_key(self.title)


def facts(doc_id: str, title: str, format_date: str | None, text: str) -> Facts:
    """The version facts of one document (its text as indexed, chunks joined)."""
    notes: list[str] = []
    stem = PurePosixPath(doc_id).stem
    labelled = [m.group(2) for m in _LABEL.finditer(text[:SCAN_CHARS])]
    sources = [("format", [format_date] if format_date else []), ("line", labelled[:3]), ("title", [title]),
               ("file name", [stem.replace("_", " ")])]  # fmt: skip
    date, date_from = None, ""
    for where, values in sources:
        for value in values:
            found, problem = find_date(value)
            if problem:
                notes.append(f"{where} {value.strip()[:40]!r}: {problem}")
            if found:
                date, date_from = found, where
                break
        if date:
            break
    claims = tuple(
        Claim(m.group(1).lower() in ("replaces", "supersedes"), " ".join(m.group(2).split()))
        for m in _CLAIM.finditer(text[:CLAIM_CHARS])
    )
    words = _WORD.findall(text[:SKETCH_CHARS].lower())
    content = [w for w in words if w not in STOPWORDS]
    shingles = [" ".join(words[i : i + 3]) for i in range(max(0, len(words) - 2))]
    return Facts(doc_id, title, date, date_from, claims, sketch(content), sketch(shingles), tuple(notes))


def find_date(text: str) -> tuple[str | None, str | None]:
    """(the first date in `text` at its precision, why a date-looking string was refused); either may be None.
    A refused full date (2026-02-30) does not fall back to its year: nothing inside its span is used."""
    candidates = [
        (match.start(), -len(match.group(0)), kind, match)
        for kind, pattern in _DATE_PATTERNS
        for match in pattern.finditer(text)
    ]
    problem, refused_until = None, -1
    for start, _, kind, match in sorted(candidates, key=lambda c: c[:2]):
        if start < refused_until:
            continue
        date = _as_date(kind, match.groups())
        if date is not None:
            return date, problem
        problem = problem or f"{match.group(0)} is not a real date; ignored"
        refused_until = match.end()
    return None, problem


def _as_date(kind: str, groups: tuple[str, ...]) -> str | None:
    if kind == "y":
        return groups[0]
    if kind == "my":
        return f"{int(groups[1]):04d}-{MONTHS[groups[0].lower()]:02d}"
    if kind == "ymd":
        year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
    elif kind == "dmy":
        day, month, year = int(groups[0]), MONTHS[groups[1].lower()], int(groups[2])
    else:
        month, day, year = MONTHS[groups[0].lower()], int(groups[1]), int(groups[2])
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def parts(date: str) -> tuple[int, ...]:
    """'2026-01-15' -> (2026, 1, 15); '2026-01' -> (2026, 1); '2026' -> (2026,)."""
    return tuple(int(p) for p in date.split("-"))


def compare(a: str | None, b: str | None) -> int | None:
    """-1, 0 or 1 comparing two dates at the precision both have; None when either is missing or they tie there
    while one is more precise (2026 vs 2026-03: unknown order)."""
    if not a or not b:
        return None
    pa, pb = parts(a), parts(b)
    n = min(len(pa), len(pb))
    if pa[:n] != pb[:n]:
        return -1 if pa[:n] < pb[:n] else 1
    return 0 if len(pa) == len(pb) else None


def matches(reference: str, date: str | None) -> bool:
    """Does `date` fall inside the date named by a reference ("2024", "2024-05")?"""
    return date is not None and parts(date)[: len(parts(reference))] == parts(reference)


def topic_key(title: str) -> str:
    """A title without dates, years, bracketed remarks and version words: 'Late returns (current policy)' ->
    'late returns', 'Fee schedule 2026' -> 'fee schedule'."""
    text = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", title.lower())
    for _, pattern in _DATE_PATTERNS:
        text = pattern.sub(" ", text)
    words = [w for w in _WORD.findall(text) if w not in STOPWORDS and not re.fullmatch(r"v?\d+", w)]
    return " ".join(stem_word(w) for w in words)


def stem_word(word: str) -> str:
    """A plural-blind form: 'returns' -> 'return' (enough to compare titles with references)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def reference_words(text: str) -> set[str]:
    return {stem_word(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and not w.isdigit()}


def file_refs(text: str) -> list[str]:
    return [m.group(0).lower() for m in _FILE_REF.finditer(text)]


def sketch(items: list[str]) -> tuple[int, ...]:
    hashes = {int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "big") for i in items}
    return tuple(sorted(hashes)[:SKETCH])


def similarity(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Estimated Jaccard similarity of two sketched sets (bottom-k over the union)."""
    if not a or not b:
        return 0.0
    union = sorted(set(a) | set(b))[:SKETCH]
    both = set(a) & set(b)
    return sum(1 for h in union if h in both) / len(union)
