"""Which document is current: versions of one topic linked at index time, preferred at retrieval.

Index time (`link`), over the facts of the whole corpus (versions.py), every run (like duplicate collapse):

- Explicit links: "X replaces Y" links Y → X when Y can be found: a file name in the reference, else a document
  of the same topic or whose title shares the reference's words, dated inside the date it names ("of May
  2024", "the 2025 ..."); without a date in the reference, only older documents of the same topic qualify.
  A claim is a document speaking about others, so it counts only when it could not be abused (each refusal a
  note): Y has the same topic key as X (naming a file is not enough on its own); X is dated when Y is; X's date
  is not in the future. A document whose claims would retire documents of two or more other topics is
  reported and none of its claims is obeyed.
- Topic links: two documents with the same topic key (title without dates and version words) whose words
  overlap (estimated Jaccard >= `SAME_TOPIC`) and whose dates are stated (front matter or metadata, an
  `Updated:` line), or any two dated near-duplicates (3-shingle Jaccard >= `NEAR_DUPLICATE`), are linked
  older → newer. A year in a title or file name does not make a topic link: "1998 FIFA World Cup" and "2002
  FIFA World Cup" are two events, not two versions. Undated documents are never linked by topic.
- Bad input, each a note in the report and a safe choice: a date in the future (after the day of indexing +
  `FUTURE_TOLERANCE`) is an error in the document: it orders nothing and the document supersedes nothing; two
  documents that each claim to replace the other lose both claims (their dates decide); a claim that
  contradicts the dates (an older document "replacing" a newer one) is dropped; a cycle of links is broken by
  dropping the links inside it.
- Pinned folders (`supersede_from`, e.g. only `policies/`): when given, only a document in one of them may be
  the newer side of any link; the links it refuses are notes.

Stored as `versions.json` in the index generation (checksummed by its manifest): the facts of each document
keyed by its file's sha256 (reused when the file did not change), the links with why each applies (`reasons`,
which `selfrag doctor` lists), the pinned folders, and the notes.

Retrieval time (`Versions.prefer_current`): among the candidates, a chunk of a superseded document yields to
the first chunk of a newer version of it: that chunk moves up to its place, and the superseded one follows.
Nothing is dropped; `mark` tells each chunk where its document stands, which sources and prompts show.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..schema import Chunk, Hit, Version
from .store import open_current, unusable
from .versions import (
    Claim,
    Facts,
    compare,
    facts,
    file_refs,
    find_date,
    matches,
    reference_words,
    similarity,
)

VERSIONS = "versions.json"
VERSIONS_FORMAT = 1
SAME_TOPIC = 0.2  # word-set similarity two same-titled documents need to count as versions of each other
NEAR_DUPLICATE = 0.6  # shingle similarity that makes two documents versions whatever their titles
MAX_VERSIONS_BYTES = 256 * 2**20
FUTURE_TOLERANCE = dt.timedelta(days=1)  # a date up to a day after the day of indexing is not "in the future"
STATED = ("format", "line")  # date sources that say when a document was written, not what it is about


@dataclass(frozen=True, slots=True)
class Link:
    older: str
    newer: str
    why: str  # "claim" (one says so), "dates" (each claims the other), "topic" (same title) or "near-duplicate"
    reason: str = field(default="", compare=False)  # why it applies, in words (doctor lists it)


@dataclass(frozen=True, slots=True)
class Table:
    """The links of one corpus and what was refused on the way; `facts` is kept for the next run."""

    facts: Mapping[str, tuple[str, Facts]]  # doc_id -> (file sha256, facts)
    links: tuple[Link, ...]
    notes: tuple[str, ...]
    today: str
    supersede_from: tuple[str, ...] = ()  # folders whose documents may supersede ("": any)

    def dates(self) -> dict[str, str]:
        """doc_id -> full date, for documents whose format gave none (chunks carry it for freshness)."""
        return {
            doc: f.date
            for doc, (_, f) in self.facts.items()
            if f.date and len(f.date) == 10 and f.date_from != "format" and doc not in self._future
        }

    @property
    def _future(self) -> set[str]:
        return {doc for doc, (_, f) in self.facts.items() if _in_future(f.date, self.today)}

    def to_bytes(self) -> bytes:
        body = {
            "versions": VERSIONS_FORMAT,
            "today": self.today,
            "facts": {doc: {"sha256": sha, **asdict(f)} for doc, (sha, f) in self.facts.items()},
            "links": [[link.older, link.newer, link.why] for link in self.links],
            "reasons": [[link.older, link.newer, link.reason] for link in self.links],
            "supersede_from": list(self.supersede_from),
            "notes": list(self.notes),
        }
        return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def known_facts(data: bytes | None) -> dict[str, tuple[str, Facts]]:
    """The facts of a previous run's `versions.json` (empty when it is missing or cannot be read: all are
    read again, which only costs time)."""
    if not data:
        return {}
    try:
        body = json.loads(data)
        if body.get("versions") != VERSIONS_FORMAT:
            return {}
        return {doc: (row.pop("sha256"), _facts(row)) for doc, row in body["facts"].items()}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return {}


def _facts(row: dict[str, Any]) -> Facts:
    claims = tuple(Claim(bool(c["newer"]), str(c["text"])) for c in row.pop("claims"))
    facts = Facts(**{**row, "claims": claims, "words": tuple(row["words"]), "shingles": tuple(row["shingles"]),
                     "notes": tuple(row["notes"])})  # fmt: skip
    if not isinstance(facts.doc_id, str) or not all(isinstance(h, int) for h in facts.words + facts.shingles):
        raise TypeError("malformed facts")
    return facts


def link(
    facts: Mapping[str, tuple[str, Facts]],
    today: dt.date,
    *,
    supersede_from: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> Table:
    """Link the versions of a corpus (see the module docstring). `today` is the day of indexing, passed in: what
    lies beyond it by more than `FUTURE_TOLERANCE` is in the future. `supersede_from` (folders, normalised by
    `config.supersede_folders`) pins where a newer version may be, matched against each document's file
    (`files`: doc_id -> file key, by default the doc_id)."""
    day = today.isoformat()
    by_doc = {doc: f for doc, (_, f) in facts.items()}
    notes = [f"{doc}: {note}" for doc, f in sorted(by_doc.items()) for note in f.notes]
    future = {doc for doc, f in by_doc.items() if _in_future(f.date, day)}
    notes += [f"{doc}: its date {by_doc[doc].date} is after the day of indexing ({day}), an error in the "
              "document: it orders no versions and supersedes nothing" for doc in sorted(future)]  # fmt: skip
    dates = {doc: (None if doc in future else f.date) for doc, f in by_doc.items()}
    claimed = _claimed(by_doc, dates, future, notes)
    topical = _topical(by_doc, dates)
    explicit = {(link.older, link.newer) for link in claimed}
    links = claimed + [t for t in topical if (t.older, t.newer) not in explicit and (t.newer, t.older) not in explicit]
    links = _pinned(links, tuple(supersede_from), files or {}, notes)
    links = _acyclic(links, notes)
    ordered = tuple(sorted(links, key=lambda k: (k.older, k.newer)))
    return Table(dict(facts), ordered, tuple(notes), day, tuple(supersede_from))


def _in_future(date: str | None, today: str) -> bool:
    if not date:
        return False
    return compare(date, (dt.date.fromisoformat(today) + FUTURE_TOLERANCE).isoformat()) == 1


def _claimed(
    by_doc: Mapping[str, Facts], dates: Mapping[str, str | None], future: set[str], notes: list[str]
) -> list[Link]:
    """The links the documents' claims make, each claim checked by `_refused` and every refusal a note."""
    stems: dict[str, list[str]] = {}
    for doc in by_doc:
        name = doc.rsplit("/", 1)[-1].lower()
        stems.setdefault(name, []).append(doc)
        stems.setdefault(name.rsplit(".", 1)[0], []).append(doc)
    pairs: dict[tuple[str, str], tuple[str, str]] = {}  # (older, newer) -> (claimant, the claim as written)
    for doc, f in sorted(by_doc.items()):
        found = [(c, other) for c in f.claims for other in _resolve(doc, c.text, by_doc, dates, stems, older=c.newer)]
        if not found:
            continue
        if doc in future:
            named = _names(o for _, o in found)
            notes.append(f"{doc}: its claims about {named} are ignored: its date is in the future")
            continue
        retired = sorted({by_doc[o].topic for c, o in found if c.newer and not _same_topic(by_doc[o], f)})
        if len(retired) > 1:
            notes.append(
                f"{doc}: would retire documents of {len(retired)} other topics ({_topics(retired)}) besides its own "
                f"({_topics([f.topic])}); reported, not obeyed: none of its claims counts"
            )
            continue
        for claim, other in found:
            refusal = _refused(doc, other, claim, by_doc, dates)
            if refusal:
                notes.append(f"{doc}: says it {_verb(claim)} {other}, but {refusal}; the claim is ignored")
                continue
            older, newer = (other, doc) if claim.newer else (doc, other)
            pairs.setdefault((older, newer), (doc, claim.text))
    links = []
    for (older, newer), (claimant, text) in sorted(pairs.items()):
        dated = _dated(dates[older], dates[newer])
        topic = _topics([by_doc[newer].topic])
        if (newer, older) in pairs:  # both say they are versions of one another: the dates say which is newer
            if older < newer:
                notes.append(f"{older} and {newer} each claim to replace the other; their dates decide")
            if compare(dates[older], dates[newer]) == -1:
                reason = f"each says it replaces the other; same topic {topic}; {dated}"
                links.append(Link(older, newer, "dates", reason))
            continue
        if compare(dates[older], dates[newer]) == 1:
            notes.append(
                f"{claimant}: says {newer} replaces {older}, but {older} is dated later ({dates[older]} > "
                f"{dates[newer]}); the claim is ignored"
            )
            continue
        said = "it replaces" if claimant == newer else "it is replaced by"
        links.append(Link(older, newer, "claim", f"{claimant} says {said} {text!r}; same topic {topic}; {dated}"))
    return links


def _refused(doc: str, other: str, claim: Claim, by_doc: Mapping[str, Facts], dates: Mapping[str, str | None]) -> str:
    """Why `doc`'s claim about `other` cannot count ("" when it can): a claim speaks for its own topic only, and
    an undated document cannot place itself against a dated one."""
    if not _same_topic(by_doc[doc], by_doc[other]):
        return f"{other} is about another topic ({_topics([by_doc[other].topic])}, not {_topics([by_doc[doc].topic])})"
    if dates[doc] is None and dates[other] is not None:
        return f"{doc} has no date and {other} is dated {dates[other]}"
    return ""


def _same_topic(a: Facts, b: Facts) -> bool:
    return bool(a.topic) and a.topic == b.topic


def _verb(claim: Claim) -> str:
    return "replaces" if claim.newer else "is replaced by"


def _names(docs: Iterable[str]) -> str:
    return ", ".join(sorted(set(docs)))


def _topics(topics: Iterable[str]) -> str:
    return ", ".join(repr(t) if t else "no topic" for t in topics)


def _dated(older: str | None, newer: str | None) -> str:
    if older and newer:
        return f"dated {older} -> {newer}"
    return f"dated {newer}, the other undated" if newer else "both undated"


def _pinned(links: list[Link], folders: tuple[str, ...], files: Mapping[str, str], notes: list[str]) -> list[Link]:
    """The links whose newer document lies in one of `folders` (all of them when none is pinned)."""
    if not folders:
        return links
    kept = []
    for k in links:
        where = files.get(k.newer, k.newer)
        if any(where.startswith(folder + "/") for folder in folders):
            kept.append(k)
        else:
            notes.append(
                f"{k.newer} would supersede {k.older} ({k.why}), but only documents under "
                f"{', '.join(f + '/' for f in folders)} may supersede; not applied"
            )
    return kept


def _resolve(
    doc: str,
    text: str,
    by_doc: Mapping[str, Facts],
    dates: Mapping[str, str | None],
    stems: Mapping[str, list[str]],
    *,
    older: bool,
) -> list[str]:
    """The documents a claim's reference names (never `doc` itself)."""
    named = [d for ref in file_refs(text) for key in (ref.rsplit("/", 1)[-1], ref) for d in stems.get(key, [])]
    named += [  # a file name without its suffix, written as a word: "fees-2025"
        d for word in text.lower().split() if not word.isalpha() for d in stems.get(word.strip(",:()'\""), [])
    ]
    if named:
        return sorted(set(named) - {doc})
    when, _ = find_date(text)
    words, topic = reference_words(text), by_doc[doc].topic
    found = []
    for other, f in by_doc.items():
        if other == doc:
            continue
        title = set(f.topic.split())
        same = bool(topic) and f.topic == topic
        if not (same or (title and len(title & words) * 2 >= len(title))):
            continue
        if when is not None:
            if matches(when, dates[other]):
                found.append(other)
        elif same and compare(dates[other], dates[doc]) == (-1 if older else 1):
            found.append(other)
    return sorted(found)


def _topical(by_doc: Mapping[str, Facts], dates: Mapping[str, str | None]) -> list[Link]:
    dated = sorted(doc for doc in by_doc if dates[doc])
    groups: dict[str, list[str]] = {}
    for doc in dated:
        if by_doc[doc].topic:
            groups.setdefault(by_doc[doc].topic, []).append(doc)
    pairs: dict[tuple[str, str], str] = {}
    for members in groups.values():
        stated = [doc for doc in members if by_doc[doc].date_from in STATED]
        for i, a in enumerate(stated):
            for b in stated[i + 1 :]:
                if similarity(by_doc[a].words, by_doc[b].words) >= SAME_TOPIC:
                    pairs.setdefault((a, b), "topic")
    buckets: dict[int, list[str]] = {}
    for doc in dated:
        for h in by_doc[doc].shingles[:4]:  # near-duplicates share some of their smallest hashes
            buckets.setdefault(h, []).append(doc)
    for members in buckets.values():
        for i, a in enumerate(members[:200]):
            for b in members[i + 1 : 200]:
                if (a, b) not in pairs and similarity(by_doc[a].shingles, by_doc[b].shingles) >= NEAR_DUPLICATE:
                    pairs[(a, b)] = "near-duplicate"
    links = []
    for (a, b), why in sorted(pairs.items()):
        order = compare(dates[a], dates[b])
        if order in (-1, 1):
            older, newer = (a, b) if order == -1 else (b, a)
            alike = f"same topic {_topics([by_doc[a].topic])}, similar words" if why == "topic" else why + " texts"
            links.append(Link(older, newer, why, f"{alike}; {_dated(dates[older], dates[newer])}"))
    return links


def _acyclic(links: list[Link], notes: list[str]) -> list[Link]:
    """The links minus those inside a cycle (Tarjan's strongly connected components), each cycle noted."""
    graph: dict[str, list[str]] = {}
    for k in links:
        graph.setdefault(k.older, []).append(k.newer)
        graph.setdefault(k.newer, [])
    component = _components(graph)
    cyclic = {c for c in set(component.values()) if sum(1 for v in component.values() if v == c) > 1}
    for c in sorted(cyclic):
        members = sorted(d for d, v in component.items() if v == c)
        notes.append(f"the supersession links of {', '.join(members)} form a cycle; none of them is superseded")
    return [k for k in links if not (component[k.older] == component[k.newer] and component[k.older] in cyclic)]


def _components(graph: Mapping[str, list[str]]) -> dict[str, int]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = index[node]
                    if member == node:
                        break
    return component


class Versions:
    """The links of an index, ready for retrieval."""

    def __init__(self, links: Iterable[Link], dates: Mapping[str, str | None]) -> None:
        self.newer: dict[str, set[str]] = {}
        self.older: dict[str, set[str]] = {}
        for k in links:
            self.newer.setdefault(k.older, set()).add(k.newer)
            self.older.setdefault(k.newer, set()).add(k.older)
        self.dates = dict(dates)
        self._after = {doc: self._reach(doc) for doc in self.newer}

    def _reach(self, doc: str) -> frozenset[str]:
        seen, todo = set(), [doc]
        while todo:
            for n in self.newer.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return frozenset(seen)

    def __bool__(self) -> bool:
        return bool(self.newer)

    @classmethod
    def from_bytes(cls, data: bytes) -> Versions:
        """ValueError when `versions.json` is malformed."""
        try:
            body = json.loads(data)
            if body.get("versions") != VERSIONS_FORMAT:
                raise ValueError(f"unknown versions format {body.get('versions')!r}")
            links = [Link(str(a), str(b), str(w)) for a, b, w in body["links"]]
            dates = {str(d): row.get("date") for d, row in body["facts"].items()}
            today = str(body["today"])
            return cls(links, {d: (None if _in_future(v, today) else v) for d, v in dates.items()})
        except (KeyError, TypeError, AttributeError, RecursionError) as error:
            raise ValueError(f"malformed {VERSIONS}: {error}") from error

    def superseded_by(self, doc: str) -> tuple[str, ...]:
        """The current versions that replace `doc` (empty when it is current), newest first."""
        heads = [d for d in self._after.get(doc, ()) if not self.newer.get(d)]
        return tuple(sorted(heads, key=lambda d: (self.dates.get(d) or "", d), reverse=True))

    def prefer_current(self, hits: Sequence[Hit]) -> list[Hit]:
        """Hits where each superseded chunk yields to the best chunk of a newer version among them."""
        order = list(hits)
        for _ in range(len(order) ** 2 + 1):  # each move puts a newer version first; the links are acyclic
            moved = False
            for i, hit in enumerate(order):
                after = self._after.get(hit.chunk.doc_id)
                if not after:
                    continue
                later = next((j for j in range(i + 1, len(order)) if order[j].chunk.doc_id in after), None)
                if later is not None and not any(order[j].chunk.doc_id in after for j in range(i)):
                    order.insert(i, order.pop(later))
                    moved = True
                    break
            if not moved:
                break
        return order

    def mark(self, chunk: Chunk) -> Chunk:
        """The chunk with its `version` set when its document has other versions."""
        doc = chunk.doc_id
        if doc not in self.newer and doc not in self.older:
            return chunk
        newer = self.superseded_by(doc)
        older = tuple(sorted(self.older.get(doc, ())))
        date = self.dates.get(doc)
        return replace(chunk, version=Version(not newer, date, newer, older))

    def marked(self, hits: Sequence[Hit]) -> list[Hit]:
        return [Hit(self.mark(h.chunk), h.score) for h in hits]


def load_versions(path: str | Path) -> Versions | None:
    """The version links of the index at `path`; None when it has none (an index built before versions, or a
    corpus without linked versions). RetrievalError when the file is there but unusable."""
    generation = open_current(path)
    if VERSIONS not in generation.manifest["files"]:
        return None
    try:
        versions = Versions.from_bytes(generation.read(VERSIONS, limit=MAX_VERSIONS_BYTES))
    except ValueError as error:
        raise unusable(path, str(error)) from error
    return versions or None


def describe_version(version: Version | None) -> str:
    """A document's standing as the prompts show it."""
    if version is None:
        return "no other versions known"
    dated = f", dated {version.date}" if version.date else ""
    if version.newer:
        return f"superseded{dated}: replaced by {', '.join(version.newer)}; its facts may be out of date"
    return f"current{dated}; it replaces {', '.join(version.older)}"


def corpus_versions(chunks: Iterable[Chunk], today: dt.date) -> Versions:
    """The versions of an in-memory corpus (benchmarks build their index from chunks, not from files); `today` is
    the day the corpus is indexed."""
    texts: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        texts.setdefault(chunk.doc_id, []).append(chunk)
    found = {
        doc: ("", facts(doc, parts[0].title, parts[0].date, "\n".join(c.text for c in parts)))
        for doc, parts in texts.items()
    }
    table = link(found, today)
    return Versions(table.links, {doc: f.date for doc, (_, f) in found.items()})
