"""Dataset loaders: a folder in the layout of ../shared/datasets in, typed examples and a retrieval corpus out.

Each loader reads one folder (so a user can point it at another copy in the same layout), checks ids (a
missing, non-string or duplicate id is an InputError naming the file and line), and returns a `Dataset`:
examples with gold answers or labels and gold evidence ids, and the corpus as `Chunk`s. Ids of evidence:

    chunk key      "<doc_id>#<chunk_id>"   (what the engine cites)
    sentence id    "<chunk key>/<n>"       (n-th sentence of that chunk, from 0)

Choices the issue left open, made here and recorded in `Dataset.notes`:
- SciFact uses the 300 labelled `claims_test` claims; a claim's gold chunks are its cited documents (the
  qrels), its gold sentences the rationale sentences. One chunk per abstract.
- CLIMATE-FEVER drops the 154 DISPUTED claims (no single gold label); labels map SUPPORTS -> SUPPORT,
  REFUTES -> CONTRADICT, NOT_ENOUGH_INFO -> NEI. The pool is the 5,240 distinct evidence sentences.
- HaluEval has no id field: the id is the 0-based line number. Its 9,936 distinct knowledge snippets are the
  pool; a question's own snippet is its gold chunk. It has no sentence-level gold.
- HaluEval hops: HaluEval's questions over its knowledge cut where one document's sentences run into the next
  with no space ("...19th century.First for Women is ..."): each part its own chunk (`k<n>#<part>`), so a
  two-hop question needs two chunks, as a HotpotQA one does. A development set shaped like HotpotQA, whose smoke
  set has no training split; its gold chunks are the question's parts. It has no critic pairs (HaluEval's judge
  an answer against the whole snippet).
- HotpotQA smoke: one chunk per paragraph (title = document id), gold sentences from `supporting_facts`.
- PopQA, PubHealth, ARC-Challenge: the paper's short-form files, each question with its own pre-retrieved
  passages (`Dataset.presets`); the format and how each question is posed: shortform.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..engine.questions import question_kind
from ..errors import InputError
from ..schema import Chunk
from .shortform import CLOSED, pose

CLAIM_LABELS = ("SUPPORT", "CONTRADICT", "NEI")
CLIMATE_LABELS = {"SUPPORTS": "SUPPORT", "REFUTES": "CONTRADICT", "NOT_ENOUGH_INFO": "NEI"}
FOLDERS = {
    "scifact": "scifact",
    "halueval": "halueval_qa",
    "halueval_hops": "halueval_qa",
    "climate_fever": "climate_fever",
    "hotpotqa_smoke": "hotpotqa_smoke",
    "popqa": "popqa",
    "pubhealth": "pubhealth",
    "arc_challenge": "arc_challenge",
}

STALE_GOLD_DATE = "2026-01-01"


@dataclass(frozen=True, slots=True)
class EvidencePair:
    """One (statement, document) pair with a gold support judgement, for critic agreement."""

    chunk: str  # chunk key of the document
    statement: str  # the sentence the critic judges against the document
    supported: bool  # gold: does the document support the statement?
    gold_label: str = ""  # the dataset's own label for the pair


@dataclass(frozen=True, slots=True)
class Example:
    id: str
    question: str  # the question, or the claim for claim tasks
    answers: tuple[str, ...] = ()  # gold answers (QA)
    label: str | None = None  # gold label (claims): SUPPORT | CONTRADICT | NEI
    gold_chunks: tuple[str, ...] = ()
    gold_sentences: tuple[str, ...] = ()
    pairs: tuple[EvidencePair, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    name: str
    task: str  # qa | claim
    path: str
    files: Mapping[str, str]  # file name -> sha256
    examples: tuple[Example, ...]
    corpus: tuple[Chunk, ...]
    sentences: Mapping[str, tuple[str, ...]]  # chunk key -> its sentences (for citation alignment)
    labels: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    total: int = 0  # examples before sampling
    presets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # question -> its own passages (shortform)
    # the list seeded samples are drawn from, where it holds more than `examples`: a training split's questions
    # that another dataset reports (`load`) keep their places in it, so no seeded sample changes, but are never
    # returned; empty when it is `examples`
    drawn_from: tuple[Example, ...] = ()

    @property
    def sha256(self) -> str:
        """One checksum over the files read (name and hash of each, in name order)."""
        joined = "".join(f"{name}:{digest}\n" for name, digest in sorted(self.files.items()))
        return hashlib.sha256(joined.encode()).hexdigest()

    def sample(self, limit: int | None, seed: int) -> Dataset:
        """A seeded sample of `limit` examples, kept in file order; all of them when limit is None or larger.
        Samples are nested: with one seed, the sample of 30 is part of the sample of 100 (a seeded shuffle,
        then the first `limit`), so a run can be extended and its cached answers reused."""
        if limit is not None and limit < 1:
            raise InputError(f"--limit must be at least 1, got {limit}")
        pool = self.drawn_from or self.examples
        if limit is None or limit >= len(pool):
            return self
        order = list(range(len(pool)))
        random.Random(seed).shuffle(order)
        kept = {example.id for example in self.examples}
        chosen = tuple(pool[i] for i in sorted(order[:limit]) if pool[i].id in kept)
        return replace(self, examples=chosen, drawn_from=())

    def of_kind(self, kind: str | None) -> Dataset:
        """Only the questions of one kind (`engine.questions.question_kind`: yes_no, choice, factoid), before
        sampling: what one kind of answer needs can be fitted on enough of them. QA datasets only."""
        if kind is None:
            return self
        if self.task != "qa":
            raise InputError(f"--kind needs a QA dataset (questions), not {self.name}")
        examples = tuple(example for example in self.examples if question_kind(example.question) == kind)
        if not examples:
            raise InputError(f"{self.name} has no {kind} question in this split")
        pool = tuple(example for example in self.drawn_from if question_kind(example.question) == kind)
        return replace(self, examples=examples, total=len(examples), drawn_from=pool)

    def only(self, ids: Sequence[str] | None) -> Dataset:
        """Only the examples with these ids, in file order: some questions of a sample asked again. The corpus is
        left as it is, so each is asked over what the whole sample is asked over (with its corpus cut, stale copies
        or gold taken out); InputError names an id the sample does not hold."""
        if ids is None:
            return self
        held = {example.id for example in self.examples}
        missing = [id_ for id_ in ids if id_ not in held]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise InputError(f"--ids: {missing[0]!r}{more} is not a question of this sample; check --limit and --seed")
        wanted = set(ids)
        return replace(self, examples=tuple(example for example in self.examples if example.id in wanted))

    def with_corpus_size(self, size: int, seed: int) -> Dataset:
        """The corpus cut to `size` chunks: every gold chunk of the examples, then seeded random distractors."""
        gold = {key for example in self.examples for key in example.gold_chunks}
        gold |= {pair.chunk for example in self.examples for pair in example.pairs}
        keep = [chunk for chunk in self.corpus if chunk.key in gold]
        if size < len(keep):
            raise InputError(f"corpus size {size} is below the {len(keep)} gold chunks of the sampled examples")
        others = [chunk for chunk in self.corpus if chunk.key not in gold]
        extra = random.Random(seed).sample(others, min(size - len(keep), len(others)))
        chosen = {chunk.key for chunk in keep + extra}
        corpus = tuple(chunk for chunk in self.corpus if chunk.key in chosen)
        sentences = {key: value for key, value in self.sentences.items() if key in chosen}
        return replace(self, corpus=corpus, sentences=sentences)

    def with_stale_copies(self, copies: int, *, dated: bool = False) -> Dataset:
        """The corpus plus `copies` conflicting near-duplicates of each example's gold snippet: the snippet
        with the right answer cut out and the dataset's hallucinated answer appended, each copy marked as a
        different revision. They are not gold. Needs examples with a right and a hallucinated answer (HaluEval);
        an example whose answer does not occur in its snippet gets no copies. `dated`: the gold snippet is
        dated `STALE_GOLD_DATE` and copy n one year earlier per n (stale = older), the text unchanged."""
        if copies < 0:
            raise InputError(f"--stale must be 0 or more, got {copies}")
        texts, extra, golds = self.chunk_texts(), [], {}
        for example in self.examples:
            right = next((p for p in example.pairs if p.gold_label == "right"), None)
            wrong = next((p for p in example.pairs if p.gold_label == "hallucinated"), None)
            if right is None or wrong is None:
                raise InputError(f"{self.name} has no hallucinated answers: stale copies need HaluEval")
            gold = texts[right.chunk]
            if not right.statement or right.statement not in gold.text:
                continue
            base = " ".join(gold.text.replace(right.statement, " ").split())
            for number in range(copies):
                text = f"(Revision {number + 2}.) {base} {wrong.statement}"
                date = f"{int(STALE_GOLD_DATE[:4]) - number - 1}{STALE_GOLD_DATE[4:]}" if dated else gold.date
                extra.append(replace(gold, doc_id=f"{gold.doc_id}-stale{number + 1}", text=text, date=date))
            if dated and copies:
                golds[gold.key] = replace(gold, date=STALE_GOLD_DATE)
        corpus = tuple(golds.get(chunk.key, chunk) for chunk in self.corpus)
        return replace(self, corpus=corpus + tuple(extra))

    def without_gold(self) -> Dataset:
        """The same questions made unanswerable: every gold chunk of the examples (and every copy of its text)
        is taken out of the corpus, so a system that answers anyway answers from nothing. QA datasets only."""
        if self.task != "qa":
            raise InputError(f"--unanswerable needs a QA dataset (gold answers), not {self.name}")
        gold = {key for example in self.examples for key in example.gold_chunks}
        texts = {chunk.text for chunk in self.corpus if chunk.key in gold}
        corpus = tuple(chunk for chunk in self.corpus if chunk.key not in gold and chunk.text not in texts)
        sentences = {key: value for key, value in self.sentences.items() if key not in gold}
        notes = (*self.notes, f"unanswerable: {len(self.corpus) - len(corpus)} gold chunks removed from the corpus")
        return replace(self, corpus=corpus, sentences=sentences, notes=notes)

    def chunk_texts(self) -> dict[str, Chunk]:
        return {chunk.key: chunk for chunk in self.corpus}


def default_root(environ: Mapping[str, str] | None = None) -> Path:
    """$SELFRAG_DATASETS, else ../shared/datasets beside the source checkout."""
    env = os.environ if environ is None else environ
    if env.get("SELFRAG_DATASETS"):
        return Path(env["SELFRAG_DATASETS"])
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


SPLITS = ("all", "train")
TEST_POOL = 500  # halueval / climate_fever: the first 500 of the seed-0 shuffle are reserved for reporting


def load(name: str, path: str | Path | None = None, split: str = "all") -> Dataset:
    """The dataset `name` from folder `path` (default: its folder under `default_root()`).

    `split` "all" is every labelled example (what reported samples are drawn from). "train" is for fitting and
    never overlaps a reported sample: SciFact's train claims; for HaluEval and CLIMATE-FEVER, which have no
    split of their own, every example outside the test pool (the first `TEST_POOL` of the seed-0 shuffle,
    which holds every seed-0 sample of up to 500), less the questions another dataset reports (`REPORTED_BY`:
    11 of HaluEval's are HotpotQA smoke questions); the HotpotQA smoke set has no training examples."""
    if name not in LOADERS:
        raise InputError(f"unknown dataset {name!r}; known: {', '.join(LOADERS)}")
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    folder = Path(path) if path is not None else default_root() / FOLDERS[name]
    if not folder.is_dir():
        raise InputError(f"dataset folder {folder} does not exist: pass --data PATH (the layout of ../shared/datasets)")
    if split == "all":
        return LOADERS[name](folder)
    if name == "scifact":
        return load_scifact(folder, claims="claims_train.jsonl")
    if name == "hotpotqa_smoke":
        raise InputError("hotpotqa_smoke has no training split (all 100 questions are the test set)")
    dataset = LOADERS[name](folder)
    reserved = {example.id for example in dataset.sample(TEST_POOL, 0).examples}
    kept = tuple(example for example in dataset.examples if example.id not in reserved)
    notes, asked = [*dataset.notes, "split train: outside the test pool"], set[str]()
    for other in REPORTED_BY.get(name, ()):
        theirs = _questions_of(other, folder.parent / FOLDERS[other])
        if theirs is None:
            notes.append(f"split train: no {other} beside {folder}, so its questions could not be withheld")
        asked |= theirs or set()
    usable = tuple(example for example in kept if _asked(example.question) not in asked)
    if len(usable) == len(kept):
        return replace(dataset, examples=kept, total=len(kept), notes=tuple(notes))
    notes.append(f"split train: {len(kept) - len(usable)} question(s) another dataset reports withheld")
    return replace(dataset, examples=usable, total=len(usable), notes=tuple(notes), drawn_from=kept)


# a dataset's questions that another one reports are never fitted on: HaluEval's questions come from HotpotQA,
# and 11 of them are questions of the HotpotQA smoke set
REPORTED_BY = {"halueval": ("hotpotqa_smoke",), "halueval_hops": ("hotpotqa_smoke",)}


def _asked(question: str) -> str:
    return " ".join(question.lower().split())


def _questions_of(name: str, folder: Path) -> set[str] | None:
    """The questions of dataset `name` in `folder` as `_asked` writes them; None when the folder is missing."""
    if not folder.is_dir():
        return None
    return {_asked(example.question) for example in LOADERS[name](folder).examples}


# -- reading and checking ----------------------------------------------------------------------------


class _Files:
    """Reads files of one dataset folder and remembers their checksums."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hashes: dict[str, str] = {}

    def read(self, name: str) -> bytes:
        path = self.folder / name
        try:
            data = path.read_bytes()
        except OSError as error:
            raise InputError(f"cannot read {path}: {error.strerror or error}") from None
        self.hashes[name] = hashlib.sha256(data).hexdigest()
        return data

    def jsonl(self, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
        for number, line in enumerate(self.read(name).decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise InputError(f"{self.folder / name} line {number} is not JSON: {error}") from None
            if not isinstance(record, dict):
                raise InputError(f"{self.folder / name} line {number} is not a JSON object")
            yield number, record

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except ValueError as error:
            raise InputError(f"{self.folder / name} is not JSON: {error}") from None


def check_ids(ids: Iterable[tuple[Any, str]], where: str) -> None:
    """Every id a non-empty string, no two alike; `ids` yields (id, location) pairs."""
    seen: dict[str, str] = {}
    for value, location in ids:
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: {location} has a missing or non-string id ({value!r}); every record needs one")
        if value in seen:
            raise InputError(f"{where}: id {value!r} appears twice ({seen[value]} and {location}); ids must be unique")
        seen[value] = location


def _field(record: Mapping[str, Any], key: str, where: str, kind: type = str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind):
        raise InputError(f"{where}: field {key!r} is missing or not a {kind.__name__}")
    return value


def _split_sentences(sentences: Sequence[str]) -> tuple[str, ...]:
    return tuple(s.strip() for s in sentences)


# -- the four datasets -------------------------------------------------------------------------------


def load_hotpotqa_smoke(folder: Path) -> Dataset:
    files = _Files(folder)
    questions = files.json("questions.json")
    corpus_raw = files.json("corpus.json")
    if not isinstance(questions, list) or not isinstance(corpus_raw, dict):
        raise InputError(f"{folder}: questions.json must be a list and corpus.json an object")
    check_ids(
        ((q.get("_id") if isinstance(q, dict) else None, f"question {i}") for i, q in enumerate(questions)),
        str(folder / "questions.json"),
    )
    chunks, sentences = [], {}
    for title, parts in corpus_raw.items():
        if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
            raise InputError(f"{folder / 'corpus.json'}: paragraph {title!r} is not a list of sentences")
        chunk = Chunk(title, 0, "".join(parts), title=title, source="hotpotqa")
        chunks.append(chunk)
        sentences[chunk.key] = _split_sentences(parts)
    examples = []
    for i, q in enumerate(questions):
        where = f"{folder / 'questions.json'} question {i}"
        facts = _field(q, "supporting_facts", where, list)
        gold_sentences, gold_chunks = [], []
        for fact in facts:
            title, n = fact[0], fact[1]
            key = f"{title}#0"
            if key not in sentences:
                raise InputError(f"{where}: supporting fact {title!r} is not in corpus.json")
            if key not in gold_chunks:
                gold_chunks.append(key)
            if 0 <= n < len(sentences[key]):
                gold_sentences.append(f"{key}/{n}")
        meta = {"type": str(q.get("type", "")), "level": str(q.get("level", ""))}
        examples.append(
            Example(
                q["_id"],
                _field(q, "question", where),
                (_field(q, "answer", where),),
                None,
                tuple(gold_chunks),
                tuple(gold_sentences),
                (),
                meta,
            )
        )
    return Dataset(
        "hotpotqa_smoke",
        "qa",
        str(folder),
        files.hashes,
        tuple(examples),
        tuple(chunks),
        sentences,
        total=len(examples),
        notes=("one chunk per paragraph; gold sentences from supporting_facts",),
    )


def load_scifact(folder: Path, claims: str = "claims_test.jsonl") -> Dataset:
    files = _Files(folder)
    corpus_rows = list(files.jsonl("corpus.jsonl"))
    check_ids(((r.get("_id"), f"line {n}") for n, r in corpus_rows), str(folder / "corpus.jsonl"))
    chunks, sentences = [], {}
    for n, row in corpus_rows:
        where = f"{folder / 'corpus.jsonl'} line {n}"
        chunk = Chunk(row["_id"], 0, _field(row, "text", where), title=str(row.get("title") or ""), source="scifact")
        chunks.append(chunk)
        parts = row.get("sentences")
        sentences[chunk.key] = _split_sentences(parts if isinstance(parts, list) else [chunk.text])
    rows = list(files.jsonl(claims))
    check_ids(((r.get("_id"), f"line {n}") for n, r in rows), str(folder / claims))
    examples = []
    for n, row in rows:
        where = f"{folder / claims} line {n}"
        label = _field(row, "label", where)
        if label not in CLAIM_LABELS:
            raise InputError(f"{where}: label {label!r} is not one of {', '.join(CLAIM_LABELS)}")
        cited = [f"{d}#0" for d in _field(row, "cited_doc_ids", where, list)]
        gold_sentences = []
        for doc_id, evidence in (row.get("evidence") or {}).items():
            key = f"{doc_id}#0"
            count = len(sentences.get(key, ()))
            gold_sentences += [f"{key}/{i}" for i in evidence.get("sentences", []) if 0 <= i < count]
        examples.append(Example(row["_id"], _field(row, "text", where), (), label, tuple(cited), tuple(gold_sentences)))
    notes = (
        f"{claims.removesuffix('.jsonl')} ({len(examples)} labelled claims); gold chunks = cited documents; "
        "one chunk per abstract",
        "sentence indices outside an abstract (claim 261) are dropped",
    )
    return Dataset(
        "scifact",
        "claim",
        str(folder),
        files.hashes,
        tuple(examples),
        tuple(chunks),
        sentences,
        CLAIM_LABELS,
        notes,
        len(examples),
    )


def load_climate_fever(folder: Path) -> Dataset:
    files = _Files(folder)
    rows = list(files.jsonl("climate-fever.jsonl"))
    check_ids(((r.get("claim_id"), f"line {n}") for n, r in rows), str(folder / "climate-fever.jsonl"))
    pool: dict[str, Chunk] = {}
    examples, disputed = [], 0
    for n, row in rows:
        where = f"{folder / 'climate-fever.jsonl'} line {n}"
        evidences = _field(row, "evidences", where, list)
        pairs, gold = [], []
        claim = _field(row, "claim", where)
        for evidence in evidences:
            evidence_id = _field(evidence, "evidence_id", where)
            chunk = Chunk(
                evidence_id,
                0,
                _field(evidence, "evidence", where),
                title=str(evidence.get("article", "")),
                source="climate_fever",
            )
            pool.setdefault(evidence_id, chunk)
            label = str(evidence.get("evidence_label", ""))
            pairs.append(EvidencePair(chunk.key, claim, label == "SUPPORTS", label))
            if label in ("SUPPORTS", "REFUTES"):
                gold.append(chunk.key)
        raw = row.get("claim_label")
        if raw == "DISPUTED":
            disputed += 1
            continue
        if raw not in CLIMATE_LABELS:
            raise InputError(f"{where}: claim_label {raw!r} is unknown")
        golds = tuple(dict.fromkeys(gold))
        sentences = tuple(f"{key}/0" for key in golds)
        examples.append(Example(row["claim_id"], claim, (), CLIMATE_LABELS[raw], golds, sentences, tuple(pairs)))
    chunks = tuple(pool.values())
    notes = (
        f"{disputed} DISPUTED claims dropped; SUPPORTS->SUPPORT, REFUTES->CONTRADICT, NOT_ENOUGH_INFO->NEI",
        "pool = distinct evidence sentences; gold = the claim's SUPPORTS/REFUTES sentences",
    )
    return Dataset(
        "climate_fever",
        "claim",
        str(folder),
        files.hashes,
        tuple(examples),
        chunks,
        {c.key: (c.text,) for c in chunks},
        CLAIM_LABELS,
        notes,
        len(examples),
    )


def load_halueval(folder: Path) -> Dataset:
    files = _Files(folder)
    snippets: dict[str, Chunk] = {}
    examples = []
    for n, row in files.jsonl("qa.jsonl"):
        where = f"{folder / 'qa.jsonl'} line {n}"
        knowledge = _field(row, "knowledge", where)
        chunk = snippets.get(knowledge)
        if chunk is None:
            chunk = snippets[knowledge] = Chunk(f"k{len(snippets)}", 0, knowledge, source="halueval")
        right, wrong = _field(row, "right_answer", where), _field(row, "hallucinated_answer", where)
        pairs = (EvidencePair(chunk.key, right, True, "right"), EvidencePair(chunk.key, wrong, False, "hallucinated"))
        examples.append(Example(str(n - 1), _field(row, "question", where), (right,), None, (chunk.key,), (), pairs))
    chunks = tuple(snippets.values())
    notes = ("id = 0-based line number; pool = distinct knowledge snippets; gold = the question's own snippet",)
    return Dataset(
        "halueval",
        "qa",
        str(folder),
        files.hashes,
        tuple(examples),
        chunks,
        {c.key: (c.text,) for c in chunks},
        (),
        notes,
        len(examples),
    )


# where one document's sentences run into the next in a HaluEval snippet: a sentence's end with no space before
# a capital (a lower-case letter, digit or closing mark before the stop, so "S.A. Smash" is not cut)
_GLUED = re.compile(r"""(?<=[a-z0-9)\]"'%][.!?])(?=["']?[A-Z])""")


def load_halueval_hops(folder: Path) -> Dataset:
    """HaluEval with each knowledge snippet cut into the documents it was glued from (`_GLUED`)."""
    whole = load_halueval(folder)
    parts: dict[str, Chunk] = {}
    examples = []
    for example in whole.examples:
        snippet = whole.sentences[example.gold_chunks[0]][0]
        doc = example.gold_chunks[0].partition("#")[0]
        gold = []
        for n, text in enumerate(part.strip() for part in _GLUED.split(snippet)):
            if text:
                chunk = parts.setdefault(text, Chunk(doc, n, text, source="halueval"))
                gold.append(chunk.key)
        # no critic pairs: a right or hallucinated answer is judged against the whole snippet (`halueval`)
        examples.append(replace(example, gold_chunks=tuple(dict.fromkeys(gold)), pairs=()))
    chunks = tuple(parts.values())
    notes = (
        "id = 0-based line number; pool = the snippets' parts, cut where one document runs into the next with no "
        "space; gold = the question's own parts",
    )
    return replace(
        whole,
        name="halueval_hops",
        examples=tuple(examples),
        corpus=chunks,
        sentences={c.key: (c.text,) for c in chunks},
        notes=notes,
    )


def load_shortform(folder: Path, task: str) -> Dataset:
    """The short-form file of `folder` (its one `*.jsonl`) as a Dataset with per-question passages (the format
    and the posing: shortform.py)."""
    files = sorted(folder.glob("*.jsonl"))
    if len(files) != 1:
        raise InputError(f"{folder}: expected the one .jsonl file of the {task} task, found {len(files)} .jsonl files")
    reader = _Files(folder)
    records = list(reader.jsonl(files[0].name))
    where = str(files[0])
    ids = [(str(r["id"]) if r.get("id") is not None else str(n), f"line {n}") for n, r in records]
    check_ids(ids, where)
    examples, corpus, presets = [], [], {}
    for (number, record), (example_id, _) in zip(records, ids, strict=True):
        line = f"{where} line {number}"
        question, answers = pose(task, record, line)
        contexts = record.get("ctxs", record.get("top_contexts"))
        if not isinstance(contexts, list):
            raise InputError(f"{line}: field 'ctxs' is missing or not a list")
        keys = []
        for rank, ctx in enumerate(contexts):
            if not isinstance(ctx, dict) or not isinstance(ctx.get("text"), str):
                raise InputError(f"{line}: ctxs[{rank}] needs a `text` string")
            chunk = Chunk(f"{example_id}-ctx{rank}", 0, ctx["text"], title=str(ctx.get("title") or ""), source=task)
            corpus.append(chunk)
            keys.append(chunk.key)
        presets[question] = tuple(keys)
        meta = {"closed": "yes"} if task in CLOSED else {}
        examples.append(Example(example_id, question, answers, meta=meta))
    return Dataset(
        task,
        "qa",
        str(folder),
        reader.hashes,
        tuple(examples),
        tuple(corpus),
        {chunk.key: (chunk.text,) for chunk in corpus},
        total=len(examples),
        notes=("retrieval: each question's own pre-retrieved ctxs from the file, in file order (not BM25)",),
        presets=presets,
    )


LOADERS = {
    "scifact": load_scifact,
    "halueval": load_halueval,
    "halueval_hops": load_halueval_hops,
    "climate_fever": load_climate_fever,
    "hotpotqa_smoke": load_hotpotqa_smoke,
    "popqa": partial(load_shortform, task="popqa"),
    "pubhealth": partial(load_shortform, task="pubhealth"),
    "arc_challenge": partial(load_shortform, task="arc_challenge"),
}
