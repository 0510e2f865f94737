"""`selfrag calibrate`: the evidence scorer fitted for one model, on the user's own corpus.

The shipped weights were fitted on the embedded 135M model's labels; another model's labels mean something else,
so its weights are fitted on its own candidates, over the corpus it will answer from:

    1. questions  a seeded sample of the index's chunks, one question per chunk with its short answer copied from
                  the chunk, made the first of three ways that gives a usable pair: the model writes both
                  (prompts/bench/calibrate_question.toml); else the chunk's own short answer is taken
                  (`answer_spans`: a number or amount, else a name, with the sentence stating it) and the model
                  writes only the question that sentence answers with it (calibrate_question_for); else that
                  sentence with the answer left blank is the question (`blank`: a model too small to write a
                  question is still calibrated, on questions whose wording is the document's). A pair is unusable
                  when the question is no question, names nothing of what it was written about, or gives its answer
                  away, or when the answer is not in the chunk or longer than a short phrase. Each chunk's outcome
                  is appended to <work>/questions.jsonl as it finishes, so a resumed run asks only what is left.
                  With a questions file (`--questions`: the user's own questions with their answers, shaped like
                  those the engine will be asked, so the answer's confidence is fitted on questions as hard as
                  theirs) nothing is written: each question is placed on the chunk that states its answer and
                  names most of it (`locate`), one question per chunk, a seeded sample of `limit` of them.
    2. answers    the engine over those questions (the benchmark runner: a record appended per question, a
                  progress line, resumable), with the evidence scorer and the shipped weights, the short answer on
                  and no abstention cut, so every step's candidates are written and rated; then the same questions
                  with their chunk held out (`Dataset.without_gold`), in folds that each keep at least three
                  quarters of the chunks. A question that another chunk answers too (it holds the answer and half
                  of what the question names beside it) is not asked held out.
    3. fit        the candidates labelled against each question's chunk and answer (`bench.judgments`) and fitted
                  as `selfrag critic fit` fits judged rows (`fit.critic.fit_critic`: both heads, the support
                  threshold, the answers head, the confidence map), but the abstention cut on answers rated out of
                  fold (`cross_fitted_cut`: heads fitted on the other questions); the answer's confidence
                  on both runs' answers as `selfrag bench fit-confidence` fits it, with the model's check of each
                  answer (`engine.check`, one call each, <work>/checks.jsonl) as an input where it lowers the
                  held-out log loss (`check_predicts`); the short answer's counts as
                  `selfrag bench fit-lead` counts them (the documents' own decisions keep the shipped counts: those
                  count rules, not the model); then the model block and what the weights were fitted on.

Refused in one line (UsageError) before anything is written, existing weights untouched: a corpus of fewer than
`MIN_DOCUMENTS` documents, fewer than `MIN_QUESTIONS` usable questions, judged candidates of one class for a head,
a damaged questions file, a work folder of another calibration. An endpoint that fails stops the run (LLMError):
what finished is kept, and a resumed run goes on from there. A reply that never validates is the chunk's, not the
endpoint's: the next way of making its question is tried (asked again, the model would write it again). A run
resumed with another limit keeps the answers to the questions both limits ask (`carry_over`). The weights are
written once, atomically, at the end.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import random
import re
import shutil
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from ..config import Config
from ..engine import check
from ..engine.calibration import ANSWERED_FEATURES, LEAD_RUNS, MAX_FILE_BYTES, CriticModel, load_critic_model
from ..engine.context import Deps, Run, run_all
from ..engine.evidence import sentences, terms
from ..engine.fitted import FittedFor
from ..errors import MODEL_FAILURES, FatalLLMError, InputError, LLMError, UsageError
from ..files import write_atomic
from ..fit.answers import answered_all
from ..fit.critic import KEEP, check_predicts, cross_fitted_cut, fit_answered, fit_critic, with_lead_counts
from ..fit.lead import lead_counts
from ..llm.base import ChatModel
from ..result import DECIDED
from ..retrieval import as_searcher
from ..schema import Chunk, Meter
from ..text import neutralise_document
from . import datasets as ds
from .judgments import rows_from_records
from .metrics import answer_in, normalize_answer
from .progress import Progress
from .runner import RunOptions, folder_lock, run_benchmark
from .samples import SampleWriter, read_samples
from .systems import BENCH_DEFAULTS, BenchPrompts

MIN_DOCUMENTS = 2  # one document's chunks cannot teach a chunk about something else from the question's own
MIN_QUESTIONS = 20  # fewer usable questions than this cannot fit the heads, the map and the cut
DEFAULT_LIMIT = 60  # chunks asked about (a seeded sample)
MIN_CHUNK_CHARS = 40  # a chunk shorter than a sentence is not asked about
MAX_ANSWER_WORDS = 8  # a short answer: a name, number, date or phrase, not a sentence
QUESTION_ENDS = ("?", "？", "؟", ";", "\u037e")  # a question mark, in the scripts that have one (Greek: ";")
# a chunk's own short answers: an amount or a number (a unit after it is not taken: the word after a number is as
# often a verb, "15 can"), or a capitalised name that is not a sentence's first word
_NUMBER = re.compile(r"[$€£¥]?\d(?:[\d,.:/-]*\d)?%?")
_NAME = re.compile(r"(?<!^)(?<![.!?:]\s)\b[A-Z][\w'’-]{2,}(?:\s+[A-Z][\w'’-]+)*")
HELD_OUT = 4  # a fold of held-out questions takes at most 1/HELD_OUT of the corpus' chunks out
# the engine as calibrated: the benchmark's settings, the short answer on, the evidence scorer with the shipped
# weights, no abstention cut (every step's candidates are written and rated; the cut is what is fitted)
RUN_SETTINGS: dict[str, Any] = {
    **BENCH_DEFAULTS,
    "lead": True,
    "scorer": "evidence",
    "abstain_below": 0.0,
    "nonce_seed": "selfrag-calibrate",
}


@dataclass(frozen=True, slots=True)
class Corpus:
    """The index's chunks, read once: what questions are asked about and answered from."""

    path: Path
    chunks: tuple[Chunk, ...]
    documents: int

    @property
    def fingerprint(self) -> str:
        text = "".join(f"{chunk.key}\0{chunk.text}\0" for chunk in self.chunks)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        return {
            "index": str(self.path),
            "documents": self.documents,
            "chunks": len(self.chunks),
            "fingerprint": self.fingerprint,
        }


@dataclass(frozen=True, slots=True)
class Calibration:
    """One `selfrag calibrate`: the corpus, the model it is for, where the weights go, how many chunks to ask
    about (a sample seeded by `seed`), and whether an earlier run's work folder (`work`) is continued."""

    corpus: Corpus
    fitted_for: FittedFor
    out: Path
    limit: int = DEFAULT_LIMIT
    seed: int = 0
    resume: bool = False
    questions: QuestionsFile | None = None  # the user's own questions, asked instead of writing one per chunk
    keep: float = KEEP  # the share of right answers the abstention cut keeps; the fit alone reads it

    @property
    def work(self) -> Path:
        return self.out.with_name(self.out.name + ".work")

    def plan(self) -> dict[str, Any]:
        """What the work folder's records depend on: a resumed run must ask the same."""
        said = {"model": self.fitted_for.model, "endpoint": self.fitted_for.endpoint}
        asked = {"questions": self.questions.fingerprint} if self.questions else {}
        return {**said, "corpus": self.corpus.fingerprint, "limit": self.limit, "seed": self.seed, **asked}


@dataclass(frozen=True, slots=True)
class Question:
    """One chunk's question and its short answer, copied from the chunk."""

    chunk: str
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class QuestionsFile:
    """The user's own questions asked (`given_questions`): those of the file placed on their chunks, the file and
    a fingerprint of its bytes."""

    path: Path
    questions: tuple[Question, ...]
    fingerprint: str
    left: tuple[tuple[str, int], ...] = ()  # why the others met on the way were left out, and how many each

    def describe(self) -> str:
        """The questions asked, and those left out on the way, for the progress line."""
        left = "; ".join(f"{count} {why}" for why, count in self.left)
        return f"{len(self.questions)} questions of {self.path}" + (f" (left out: {left})" if left else "")


@dataclass(frozen=True, slots=True)
class Calibrated:
    """What a calibration wrote, and what it cost: the chat calls it counted (this process's and the records'
    of earlier ones), over what (`asked`: "24 chunks", "60 questions of FILE")."""

    model: CriticModel
    calls: int
    asked: str


def read_corpus(path: Path) -> Corpus:
    """The index at `path`; UsageError when it holds fewer than MIN_DOCUMENTS documents."""
    from ..retrieval.index import Index

    index = Index.load(path)
    corpus = Corpus(path, tuple(index.loop_over_chunks()), index.document_count)
    if corpus.documents < MIN_DOCUMENTS:
        raise UsageError(
            f"{path} holds {corpus.documents} document; calibrating needs at least {MIN_DOCUMENTS}, so that a "
            "chunk about something else can be told from the question's own: index more documents"
        )
    return corpus


def sample(corpus: Corpus, limit: int, seed: int) -> list[Chunk]:
    """The chunks asked about: those long enough to ask about, a seeded sample of `limit`, in index order."""
    chunks = [chunk for chunk in corpus.chunks if len(chunk.text.strip()) >= MIN_CHUNK_CHARS]
    if limit < len(chunks):
        order = list(range(len(chunks)))
        random.Random(seed).shuffle(order)
        chunks = [chunks[i] for i in sorted(order[:limit])]
    return chunks


def calibrate(plan: Calibration, chat: ChatModel, *, calls: int = 0, stream: TextIO) -> Calibrated:
    """Questions, answers, the fit (the module docstring); the weights written to `plan.out` at the end.
    `calls`: the chat calls already made for it (the probe)."""
    plan.work.mkdir(parents=True, exist_ok=True)
    with folder_lock(plan.work):
        earlier = _check_work(plan)
        if plan.questions is None:
            chunks = sample(plan.corpus, plan.limit, plan.seed)
            print(f"selfrag calibrate: a question for each of {len(chunks)} chunks", file=stream, flush=True)
            outcomes = asyncio.run(_ask_all(chat, chunks, plan.work / "questions.jsonl", stream))
            questions = usable(outcomes, plan.work / "questions.jsonl", len(chunks))
            said = f"{len(chunks)} chunks"
        else:
            outcomes, questions = {}, list(plan.questions.questions)
            said = f"{len(questions)} questions of {plan.questions.path}"
            print(f"selfrag calibrate: {plan.questions.describe()}", file=stream, flush=True)
        if earlier is not None:
            kept = carry_over(plan.work, questions)
            print(f"selfrag calibrate: continuing the calibration of --limit {earlier} with --limit {plan.limit}: "
                  f"{kept} answers kept; the questions held out are asked again (other chunks are held out now)",
                  file=stream, flush=True)  # fmt: skip
            _record(plan)
        asked = calibration_set(plan.corpus, questions)
        runs = [("answerable", asked), *held_out(asked, questions)]
        records: dict[str, list[dict[str, Any]]] = {}
        for number, (name, dataset) in enumerate(runs, 1):
            what = "" if name == "answerable" else ", their chunk held out"
            print(f"selfrag calibrate: answering {len(dataset.examples)} questions{what} ({number}/{len(runs)})",
                  file=stream, flush=True)  # fmt: skip
            records[name] = _answer(dataset, chat, plan.work / name, stream)
        checks, checked = asyncio.run(_check_all(chat, records, plan.work / "checks.jsonl", stream))
        records = {
            name: [{**r, **checks.get(f"{name}/{r['id']}", {})} for r in found] for name, found in records.items()
        }
        model = fit(plan, questions, records)
        text = model.to_json()
        if len(text) > MAX_FILE_BYTES:
            raise InputError("the fitted weights are larger than a weights file may be")
        plan.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(plan.out, text)
        write_atomic(plan.work / "done.json", json.dumps({"weights": str(plan.out), **plan.plan()}) + "\n")
    spent = calls + sum(int(o.get("calls", 0)) for o in outcomes.values())
    spent += sum(int((r.get("usage") or {}).get("requests_sent", 0)) for rs in records.values() for r in rs)
    spent += checked
    return Calibrated(model, spent, said)


def _check_work(plan: Calibration) -> int | None:
    """A work folder is continued only with `resume`, and only for the same plan but perhaps another limit; the
    earlier limit when it differs (the plan is recorded once the folder is carried over, `carry_over`), else None
    (the plan is recorded now)."""
    record = plan.work / "calibration.json"
    if record.exists():
        try:
            before = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise UsageError(f"{record} is damaged: remove {plan.work} to calibrate afresh") from None
        if not plan.resume:
            raise UsageError(
                f"{plan.work} holds an earlier calibration: pass --resume to continue it (or fit again from it), "
                "or remove the folder to calibrate afresh"
            )
        differs = [key for key, value in plan.plan().items() if before.get(key) != value and key != "limit"]
        if differs:
            said = ", ".join(f"{key} {before.get(key)!r} there, {plan.plan()[key]!r} now" for key in differs)
            raise UsageError(f"{plan.work} was made for another calibration ({said}): remove it, or give another --out")
        if before.get("limit") != plan.limit:
            return int(before["limit"])
    _record(plan)
    return None


def _record(plan: Calibration) -> None:
    write_atomic(plan.work / "calibration.json", json.dumps(plan.plan(), indent=1) + "\n")


def carry_over(work: Path, questions: Sequence[Question]) -> int:
    """A work folder continued with another limit: the seeded samples of any two limits are one the start of the
    other, and a question asked with its chunk is asked over the whole index whatever the limit, so the answers
    of the questions still asked are kept (how many is returned) and the runner takes the folder as its own again;
    the held-out runs are removed, since the chunks held out change with the questions."""
    folder, asked = work / "answerable", {q.chunk: q.question for q in questions}
    records, _ = read_samples(folder / "samples.jsonl", repair=True)
    kept = [r for key, r in records.items() if asked.get(key) == r.get("question")]
    if folder.is_dir():
        lines = (json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in kept)
        write_atomic(folder / "samples.jsonl", "".join(lines))
        (folder / "config.json").unlink(missing_ok=True)  # the runner's record of the earlier limit's dataset
    for old in sorted(work.glob("held-out-*")):
        shutil.rmtree(old)
    return len(kept)


# -- 1. questions --------------------------------------------------------------------------------------------


async def _ask_all(chat: ChatModel, chunks: Sequence[Chunk], path: Path, stream: TextIO) -> dict[str, dict[str, Any]]:
    """Each chunk's outcome, by chunk key, in `chunks` order: read back from `path` where settled (asked, or left
    out), asked now (and appended) where not; LLMError when some failed at the endpoint (asked again on resume)."""
    done, _ = read_samples(path, repair=True)  # a torn last line is cut; a damaged one elsewhere: InputError
    for key, record in done.items():
        question, answer = record.get("question"), record.get("answer")
        if record["status"] == "ok" and not (
            isinstance(question, str) and question and isinstance(answer, str) and answer
        ):
            raise UsageError(f"{path}: the record of chunk {key!r} has no question or answer; remove that line")
    todo = [chunk for chunk in chunks if (done.get(chunk.key) or {}).get("status") in (None, "failed")]
    progress = Progress(len(chunks), len(chunks) - len(todo), stream)
    writer, prompts = SampleWriter(path), BenchPrompts()

    async def one(chunk: Chunk) -> dict[str, Any]:
        record = await ask_question(chat, prompts, chunk)
        writer.write(record)
        progress.update({**record, "status": "failed" if record["status"] == "failed" else "ok"})
        return record

    asked = await _each(chat, [one(chunk) for chunk in todo], progress, writer)
    outcomes = {chunk.key: done[chunk.key] for chunk in chunks if chunk.key in done}
    outcomes |= {record["id"]: record for record in asked}
    failed = [record for record in outcomes.values() if record["status"] == "failed"]
    if failed:
        raise LLMError(
            f"{len(failed)} of {len(chunks)} questions failed at the endpoint (last: {failed[-1]['error']}); "
            "run again with --resume to ask them"
        )
    return {chunk.key: outcomes[chunk.key] for chunk in chunks}


async def _each(
    chat: ChatModel, asking: Sequence[Coroutine[Any, Any, dict[str, Any]]], progress: Progress, writer: SampleWriter
) -> list[dict[str, Any]]:
    """The outcomes of `asking`, all in flight at once; the progress line, the writer and the chat closed after,
    however it ends."""
    try:
        return await run_all(asking)
    finally:
        progress.close()
        writer.close()
        close = getattr(chat, "aclose", None)
        if close is not None:
            await close()


def bare_run(chat: ChatModel, prompts: BenchPrompts, question: str = "") -> Run:
    """A run that searches nothing, for one call about a text calibrate holds (a chunk to ask about, an answer to
    check), with calibrate's fixed document delimiters."""
    searcher = as_searcher(None)  # type: ignore[arg-type]  # nothing is searched
    return Run(Deps(chat, searcher, prompts), Config(nonce_seed="selfrag-calibrate"), question, "", Meter(), b"cal")


async def ask_question(chat: ChatModel, prompts: BenchPrompts, chunk: Chunk) -> dict[str, Any]:
    """One chunk's record: "ok" with its question and answer, "unusable" with why (not asked again), or "failed"
    at the endpoint (asked again on resume). A fatal endpoint error is raised. The three ways a question is made
    are tried in turn (the module docstring); `made` says which one gave it, and why the ones before did not."""
    run = bare_run(chat, prompts)
    block = run.document_values("calibrate", chunk)
    spans = answer_spans(chunk.text)
    random.Random(chunk.key).shuffle(spans)
    tried: list[str] = []
    try:
        reply, why = await _written(run, "calibrate_question", **block)
        question, answer = (reply.question.strip(), reply.answer.strip()) if reply else ("", "")
        why = why or unusable_because(question, answer, chunk.text, chunk.text)
        if why and spans:
            tried.append(f"the model's own pair: {why}")
            answer, sentence = spans[0]
            nonce = block["nonce"]
            values = {"sentence": neutralise_document(sentence, nonce), "answer": neutralise_document(answer, nonce)}
            reply, why = await _written(run, "calibrate_question_for", **values, **block)
            question = reply.question.strip() if reply else ""
            why = why or unusable_because(question, answer, chunk.text, sentence)
    except FatalLLMError:
        raise
    except LLMError as error:
        failed = {"status": "failed", "error": f"{type(error).__name__}: {error}", "calls": run.meter.llm_calls}
        return {"id": chunk.key, **failed}
    if why and spans:
        tried.append(f"the model's question to the chunk's answer: {why}")
        made = [(blank(span, sentence), span) for span, sentence in spans]
        question, answer = next(((q, a) for q, a in made if not unusable_because(q, a, chunk.text)), made[0])
        why = unusable_because(question, answer, chunk.text)
    meter = run.meter
    record = {"id": chunk.key, "question": question, "answer": answer, "calls": meter.llm_calls}
    record |= {"made": ["the model's pair", "the model's question", "a blank"][len(tried)], "tried": tried}
    record["usage"] = {"total_tokens": meter.prompt_tokens + meter.completion_tokens}  # for the progress line
    return {**record, "status": "unusable", "why": why} if why else {**record, "status": "ok"}


async def _written(run: Run, prompt: str, **values: str) -> tuple[Any, str | None]:
    """The model's reply, or why it gave none: a reply that does not validate, a refusal or a chunk too long for
    its context is this chunk's (the next way is tried, and asking again would get the same), not the endpoint's."""
    try:
        return (await run.ask(prompt, critic=False, logprobs=False, **values)).value, None
    except MODEL_FAILURES as error:
        return None, f"no usable reply ({type(error).__name__}: {error})"


def blank(answer: str, sentence: str) -> str:
    """The question a chunk's sentence makes with its short answer left blank (a model that writes no question)."""
    return f'What goes in the blank in "{sentence.replace(answer, "___", 1)}"?'


def answer_spans(text: str) -> list[tuple[str, str]]:
    """The short answers a chunk states, each with the sentence stating it: its amounts and numbers when there are
    any, else its capitalised names (a sentence's first word is no name)."""
    numbers, names = [], []
    for sentence in sentences(text):
        sentence = " ".join(sentence.split())
        numbers += [(match.group(), sentence) for match in _NUMBER.finditer(sentence)]
        names += [(match.group(), sentence) for match in _NAME.finditer(sentence)]
    return numbers or names


def unusable_because(question: str, answer: str, text: str, about: str = "") -> str:
    """Why a (question, answer) pair about `text` cannot label candidates, or "" when it can; `about`: the text
    the question was written about, of which it must name some word ("What is the answer?" names nothing)."""
    if not question or not answer:
        return "an empty question or answer"
    if not question.rstrip(" \"'”’»)").endswith(QUESTION_ENDS):
        return "no question (no question mark at its end)"
    if about and not terms(question) & terms(about):
        return "the question names nothing of its document"
    if len(answer.split()) > MAX_ANSWER_WORDS:
        return f"an answer of more than {MAX_ANSWER_WORDS} words"
    if not answer_in(text, [answer]):
        return "the answer is not in its chunk"
    if answer_in(question, [answer]):
        return "the question gives its answer away"
    return ""


def usable(outcomes: Mapping[str, Mapping[str, Any]], path: Path, chunks: int) -> list[Question]:
    """The usable questions (their records checked as read, `_ask_all`); UsageError when fewer than MIN_QUESTIONS."""
    questions = [Question(key, r["question"], r["answer"]) for key, r in outcomes.items() if r["status"] == "ok"]
    if len(questions) < MIN_QUESTIONS:
        left = chunks - len(questions)
        raise UsageError(
            f"{len(questions)} usable questions of {chunks} chunks ({left} left out: see {path}); calibrating needs "
            f"at least {MIN_QUESTIONS}: raise --limit, or index more text"
        )
    return questions


def given_questions(path: Path, corpus: Corpus, limit: int, seed: int) -> QuestionsFile:
    """The questions file at `path` read (`read_questions`) and a seeded sample of `limit` placed on the corpus's
    chunks (`placed`); UsageError for a damaged file or too few placed questions, before any call."""
    data, rows = read_questions(path)
    questions, left = placed(path, rows, corpus, limit, seed)
    return QuestionsFile(path, tuple(questions), hashlib.sha256(data).hexdigest()[:16], left)


def read_questions(path: Path) -> tuple[bytes, list[tuple[int, str, tuple[str, ...]]]]:
    """The questions file at `path`, its bytes and its rows (line number, question, answers): JSON lines, each an
    object with a "question" and its short "answer" (or "answers", a list; blank lines are skipped). UsageError
    naming the file and line for anything else."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as error:
        raise UsageError(f"cannot read the questions file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text (a questions file is JSON lines)") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise UsageError(f"{path} line {number}: not a JSON object") from None
        answers = row.get("answers", [row.get("answer")]) if isinstance(row, dict) else None
        question = row.get("question") if isinstance(row, dict) else None
        if not (isinstance(question, str) and question.strip()):
            raise UsageError(f'{path} line {number}: no "question" (each line needs a question and its "answer")')
        if not (isinstance(answers, list) and answers and all(isinstance(a, str) and a.strip() for a in answers)):
            raise UsageError(f'{path} line {number}: no "answer" (a string) or "answers" (a list of strings)')
        rows.append((number, " ".join(question.split()), tuple(" ".join(a.split()) for a in answers)))
    if not rows:
        raise UsageError(f"{path} holds no questions")
    return data, rows


def placed(
    path: Path, rows: Sequence[tuple[int, str, tuple[str, ...]]], corpus: Corpus, limit: int, seed: int
) -> tuple[list[Question], tuple[tuple[str, int], ...]]:
    """A seeded sample of `limit` of the file's questions, each on its chunk (`locate`), one question per chunk,
    in file order, and why those met on the way were left out (how many each, most first); UsageError, saying
    why, when fewer than MIN_QUESTIONS can be placed."""
    texts = padded(corpus.chunks)
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    chosen: dict[str, tuple[int, Question]] = {}
    left: dict[str, int] = {}
    for index in order:
        if len(chosen) == limit:
            break
        number, question, answers = rows[index]
        found, why = locate(question, answers, corpus.chunks, texts)
        if found is not None and found.chunk in chosen:
            found, why = None, "asked of a chunk another question of the file is asked of"
        if found is None:
            left[why] = left.get(why, 0) + 1
        else:
            chosen[found.chunk] = (number, found)
    questions = [question for _, question in sorted(chosen.values())]
    counted = tuple(sorted(left.items(), key=lambda kv: -kv[1]))
    if len(questions) < MIN_QUESTIONS:
        why = "; ".join(f"{count} {reason}" for reason, count in counted)
        raise UsageError(
            f"{len(questions)} of the questions in {path} could be placed on a chunk of the index (left out: "
            f"{why or 'none'}); calibrating needs at least {MIN_QUESTIONS}: give more questions, or the index "
            "they were written on"
        )
    return questions, counted


def locate(
    question: str, answers: Sequence[str], chunks: Sequence[Chunk], texts: Mapping[str, str]
) -> tuple[Question | None, str]:
    """A question of the user's on its chunk: of the chunks that state one of its answers (`texts`: `padded`), the
    one that names most of what the question asks (the first in the index on a tie), with the first answer it
    states; or None and why it cannot label candidates (no chunk states an answer: a yes/no question's answer is in
    no chunk; or the pair is unusable as a written one would be)."""
    for answer in answers:
        wanted = f" {normalize_answer(answer)} "
        holding = [chunk for chunk in chunks if wanted.strip() and wanted in texts[chunk.key]]
        if holding:
            asked = terms(question) - terms(answer)
            chunk = max(holding, key=lambda c: len(asked & terms(c.text)))  # max keeps the first of equals
            why = unusable_because(question, answer, chunk.text, chunk.text)
            return (None, why) if why else (Question(chunk.key, question, answer), "")
    return None, "no chunk states its answer"


# -- 2. answers ----------------------------------------------------------------------------------------------


def calibration_set(corpus: Corpus, questions: Sequence[Question]) -> ds.Dataset:
    """The questions over the corpus as a benchmark dataset: each one's gold chunk is the chunk it was written
    from, its gold answer the short answer copied from it."""
    examples = tuple(ds.Example(q.chunk, q.question, (q.answer,), gold_chunks=(q.chunk,)) for q in questions)
    asked = hashlib.sha256(json.dumps([[q.chunk, q.question, q.answer] for q in questions]).encode()).hexdigest()
    return ds.Dataset(
        "calibrate",
        "qa",
        str(corpus.path),
        {"questions": asked, "corpus": corpus.fingerprint},
        examples,
        corpus.chunks,
        {chunk.key: (chunk.text,) for chunk in corpus.chunks},
        total=len(examples),
        notes=("selfrag calibrate: one question per sampled chunk, its answer copied from the chunk",),
    )


def held_out(asked: ds.Dataset, questions: Sequence[Question]) -> list[tuple[str, ds.Dataset]]:
    """The questions again with their chunk out of the corpus, in folds that each take at most 1/HELD_OUT of the
    chunks out (so the corpus stays the corpus); a question that another chunk answers too is left out (asked
    without its chunk, it could still be answered)."""
    texts = padded(asked.corpus)
    alone = [
        example
        for example, q in zip(asked.examples, questions, strict=True)
        if not answered_elsewhere(q, asked.corpus, texts)
    ]
    per = max(1, len(asked.corpus) // HELD_OUT)
    count = -(-len(alone) // per)
    folds = [replace(asked, examples=tuple(alone[number::count])).without_gold() for number in range(count)]
    return [(f"held-out-{number + 1}", fold) for number, fold in enumerate(folds) if fold.examples]


def padded(chunks: Sequence[Chunk]) -> dict[str, str]:
    """Each chunk's text normalised as answers are and padded with spaces, by chunk key: an answer is stated in a
    chunk when its own padded form occurs in this."""
    return {chunk.key: f" {normalize_answer(chunk.text)} " for chunk in chunks}


def answered_elsewhere(question: Question, corpus: Sequence[Chunk], texts: Mapping[str, str]) -> bool:
    """Whether a chunk other than the question's own answers it too (`texts`: each chunk's text normalised and
    padded with spaces): holds the answer and at least half of what the question names beside it. A year or a
    name that another chunk holds about something else does not answer the question; the same fact told twice
    does."""
    answer = f" {normalize_answer(question.answer)} "
    asked = terms(question.question) - terms(question.answer)
    return any(
        2 * len(asked & terms(chunk.text)) >= len(asked)
        for chunk in corpus
        if chunk.key != question.chunk and answer in texts[chunk.key]
    )


def _answer(dataset: ds.Dataset, chat: ChatModel, folder: Path, stream: TextIO) -> list[dict[str, Any]]:
    """The engine over `dataset` (the benchmark runner, into `folder`, resumed where it has records); the
    records of its questions. LLMError when the run did not complete or a question failed at the endpoint."""
    options = RunOptions(
        "calibrate", "selfrag", Config(**RUN_SETTINGS), run_dir=folder, resume=True, jobs=4, environ={}, given=dataset
    )
    report = run_benchmark(options, chat=chat, stream=stream)
    records, _ = read_samples(folder / "samples.jsonl", repair=False)
    wanted = [records[e.id] for e in dataset.examples if e.id in records]
    outage = [r for r in wanted if r.get("failure") == "endpoint"]
    if report.status != "complete" or outage:
        why = report.message or f"{len(outage)} questions failed at the endpoint (last: {outage[-1]['error']})"
        raise LLMError(f"{why}; run again with --resume to continue")
    return wanted


async def _check_all(
    chat: ChatModel, records: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, stream: TextIO
) -> tuple[dict[str, dict[str, Any]], int]:
    """The model's check of each answer the runs gave (`engine.check`, as the engine asks it where the weights read
    it), by "<run>/<id>", and the calls made now: read back from `path` where made, asked now (and appended) where
    not. LLMError when some failed at the endpoint (asked again on resume); a model that cannot pose the prompt
    gives none, for good."""
    done, _ = read_samples(path, repair=True)
    answers = {
        f"{name}/{r['id']}": r
        for name, found in records.items()
        for r in found
        if r.get("status") == "ok" and not r.get("abstained") and r.get("segments")
    }
    said = {key: " ".join(str(segment["text"]) for segment in r["segments"]) for key, r in answers.items()}
    done = {key: made for key, made in done.items() if key in said and made.get("answer") == said[key]}
    todo = [key for key in answers if key not in done]  # a run asked again (`carry_over`) gave other answers
    print(f"selfrag calibrate: the model checks {len(answers)} answers ({len(todo)} to ask)", file=stream, flush=True)
    progress = Progress(len(answers), len(answers) - len(todo), stream)
    writer, prompts = SampleWriter(path), BenchPrompts()

    async def one(key: str) -> dict[str, Any]:
        run = bare_run(chat, prompts, answers[key]["question"])
        checked = await check.check(run, said[key])
        failed = checked.outage
        meter = run.meter
        outcome: dict[str, Any] = {"id": key, "status": "failed" if failed else "ok", "answer_check": checked.credit}
        outcome |= {"answer": said[key], "said": checked.said, "calls": meter.llm_calls}
        outcome["usage"] = {"total_tokens": meter.prompt_tokens + meter.completion_tokens}
        if not failed:
            writer.write(outcome)
        progress.update(outcome)
        return outcome

    asked = await _each(chat, [one(key) for key in todo], progress, writer)
    failed = [outcome for outcome in asked if outcome["status"] == "failed"]
    if failed:
        raise LLMError(
            f"{len(failed)} of {len(answers)} checks failed at the endpoint (last: {failed[-1]['said']}); run again "
            "with --resume to ask them"
        )
    made = {**done, **{outcome["id"]: outcome for outcome in asked}}
    calls = sum(int(outcome.get("calls", 0)) for outcome in asked)
    return {key: {"answer_check": outcome.get("answer_check")} for key, outcome in made.items()}, calls


# -- 3. fit --------------------------------------------------------------------------------------------------


def fit(plan: Calibration, questions: Sequence[Question], records: Mapping[str, list[dict[str, Any]]]) -> CriticModel:
    """The weights from the runs' records (the module docstring); UsageError when the judged candidates cannot fit
    them (too few, or one class for a head)."""
    chunks = {chunk.key: chunk for chunk in plan.corpus.chunks}
    rows = []
    for name, found in records.items():
        rows += rows_from_records(found, chunks, answerable=name == "answerable")
    held = sum(1 for name, found in records.items() if name != "answerable" for r in found if r["status"] == "ok")
    try:
        model = fit_critic(rows, {"source": f"selfrag calibrate over {plan.corpus.path}"})
    except InputError as error:
        raise UsageError(f"cannot fit weights from these runs: {error}") from None
    cut = cross_fitted_cut(rows, plan.keep)
    model = replace(model, abstain_threshold=cut.cut, fitted_on={**model.fitted_on, "abstain_cut": cut.describe()})
    model = with_answered(model, [r for found in records.values() for r in found])
    answers = records["answerable"]
    counted = {kind: n for kind, n in lead_counts(answers).items() if kind not in DECIDED}
    shipped = load_critic_model()
    model = with_lead_counts(model, shipped)  # the documents' decisions: counted over a pool, with no model
    lead = counted | {kind: n for kind, n in model.lead.items() if kind in DECIDED}
    fitted_on = {
        **model.fitted_on,
        LEAD_RUNS: f"selfrag calibrate: {len(answers)} answers of {plan.fitted_for.model}",
        "corpus": plan.corpus.describe(),
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "sizes": {"questions": len(questions), "unanswerable_questions": held, "rows": len(rows)},
    }
    if plan.questions is not None:
        fitted_on["questions_file"] = {"path": str(plan.questions.path), "fingerprint": plan.questions.fingerprint}
    return replace(model, lead=lead, fitted_on=fitted_on, fitted_for=plan.fitted_for)


def with_answered(model: CriticModel, records: Sequence[Mapping[str, Any]]) -> CriticModel:
    """`model` with the answer's confidence fitted on the answers the runs gave, with and without their chunk,
    that its abstention cut lets through (`selfrag bench fit-confidence`: the answered head reads an answer's
    ratings under these heads and its length). The runs asked with no cut; an answer the cut turns into an
    abstention is no answer the confidence speaks for, and counting the held-out questions' ones would pull it
    under the right rate of answers given. The map of P(supported) alone stands where those answers are too few
    or all right or all wrong, and the weights say so."""
    checked = answered_all(records, model, given=True, checked=True)
    reads, said = check_predicts(checked)
    answers = checked if reads else [(inputs[: len(ANSWERED_FEATURES)], right) for inputs, right in checked]
    source = f"selfrag calibrate's answers; the model's check {'read' if reads else 'not read'} ({said})"
    try:
        return fit_answered(model, answers, source)[0]
    except InputError as error:  # too few answers, or all right or all wrong
        return replace(model, fitted_on={**model.fitted_on, "answered": f"none (the map stands): {error}"})
