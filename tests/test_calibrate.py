"""`selfrag calibrate` end to end over a loopback endpoint: questions written per chunk, answered with and without
their chunk, the weights fitted and written where `selfrag ask` finds them for that model; a run stopped by the
endpoint resumes where it stopped; bad input is refused in one line and leaves existing weights alone."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import selfrag
from selfrag.bench.calibrate import Corpus, Question, answer_spans, calibration_set, held_out, locate, padded
from selfrag.cli import main
from selfrag.engine.calibration import load_critic_model
from selfrag.engine.fitted import place
from selfrag.schema import Chunk
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

# 24 documents of two sentences; each one's question is answered by a word of its own (a year or a name that no
# other document holds), in the first sentence for half of them and in the second for the others
PLACES = ["Arvo", "Belt", "Corin", "Dalm", "Esk", "Fenn", "Garro", "Holt", "Ilse", "Jura", "Kell", "Lom",
          "Mirt", "Ness", "Orla", "Pell", "Quen", "Rask", "Sorn", "Tave", "Ulm", "Vree", "Wend", "Yarl"]  # fmt: skip
DOCS: dict[str, tuple[str, str, str]] = {}  # file -> (text, question, answer)
for n, town in enumerate(PLACES):
    year, builder = str(1901 + n), f"Mason{chr(65 + n)}ov"
    bridge = f"The {town} bridge was built in {year} across the river."
    named = f"Its architect was {builder}, who also drew the old {town} mill."
    text, (question, answer) = (
        (f"{bridge} {named}", (f"In which year was the {town} bridge built?", year))
        if n % 2 == 0
        else (f"{named.replace('Its', f'The {town} bridge')} {bridge.replace(f'The {town} bridge', 'It')}",
              (f"Who was the architect of the {town} bridge?", builder))
    )  # fmt: skip
    DOCS[f"{town.lower()}.md"] = (text, question, answer)


def writer(answers: dict[str, str] | None = None, sentence: str | None = None, second: str = "I cannot tell."):  # type: ignore[no-untyped-def]
    """A loopback model: asked for a question about a document, it gives that document's question and answer
    (or `answers[file]`); asked for the question to a given answer, it writes `second` with "{answer}" and
    "{town}" filled in; otherwise it replies as `echo_responder` does (or writes `sentence` every time)."""

    def reply(body: dict[str, Any]) -> str:
        fmt = body.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name", "")
        user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        if name in ("CalibrateQuestionReply", "JudgeQuestionReply"):
            file = re.search(r'id="([^"#]+)#', user).group(1)  # type: ignore[union-attr]
            _, question, answer = DOCS[file]
            if name == "JudgeQuestionReply":
                given = re.search(r"answers with: (.+)", user).group(1)  # type: ignore[union-attr]
                return json.dumps({"question": second.format(answer=given, town=file.removesuffix(".md").title())})
            return json.dumps({"question": question, "answer": (answers or {}).get(file, answer)})
        said = json.loads(echo_responder(body))
        if sentence is not None and "sentence" in said:
            said |= {"sentence": sentence, "evidence": sentence}
        return json.dumps(said)

    return reply


def build_index(folder: Path, *, first_sentence: bool = False, plain: bool = False) -> Path:
    """The 24 documents indexed (`first_sentence`: each cut to the sentence that answers its question; `plain`:
    lower-cased and without digits, so no number or name is left to make a blank of)."""
    folder.mkdir()
    for name, (text, _, answer) in DOCS.items():
        text = next(s for s in text.split(". ") if answer in s) if first_sentence else text
        (folder / name).write_text(re.sub(r"\d", "", text.lower()) if plain else text)
    out = folder.with_name(folder.name + "-index")
    assert main(["index", str(folder), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def corpus_index(tmp_path):
    return build_index(tmp_path / "docs")


@pytest.fixture(autouse=True)
def no_retries(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SELFRAG_MAX_RETRIES", "0")  # an endpoint that fails fails at once


def calibrate(index: Path, server: FakeOpenAIServer, *extra: str) -> list[str]:
    return ["calibrate", "--index", str(index), "--base-url", server.base_url, "--limit", "24", *extra]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_calibrate_fits_weights_for_the_model_and_ask_picks_them_up(corpus_index, capsys):
    with FakeOpenAIServer(responder=writer()) as server:
        assert main(calibrate(corpus_index, server)) == 0
        captured = capsys.readouterr()
        calls = len(server.stats.authorizations)  # every HTTP request the server saw: probe, models, chat
        asked = sum(1 for b in server.stats.bodies if "CalibrateQuestionReply" in json.dumps(b))
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
        said = re.search(r"; (\d+) calls for (\d+) chunks$", captured.out.strip())
        assert said and (int(said[1]), int(said[2])) == (calls, 24), captured.out  # the cost, counted exactly
        assert asked == 24
        assert "[24/24]" in captured.err and "selfrag calibrate: answering 24 questions (1/" in captured.err
        assert main(["ask", DOCS["arvo.md"][1], "--index", str(corpus_index), "--base-url", server.base_url,
                     "--json", "--abstain-below", "0"]) == 0  # fmt: skip
        answered = capsys.readouterr()
    model = load_critic_model(weights)
    assert model.fitted_for is not None and model.fitted_for.model == "fake-model"
    assert model.fitted_for.endpoint == server.base_url and model.fitted_for.identity  # the server's fingerprint
    info = model.fitted_on
    assert info["corpus"]["documents"] == 24 and info["corpus"]["chunks"] == 24 and info["corpus"]["fingerprint"]
    assert info["corpus"]["index"] == str(corpus_index) and info["date"].endswith("+00:00")
    assert info["sizes"]["questions"] == 24 and info["sizes"]["unanswerable_questions"] == 24
    assert info["sizes"]["rows"] == info["rows"] > 24
    assert model.relevant != load_critic_model().relevant  # fitted anew, not the shipped heads
    # the answer's confidence is fitted on the answers the cut lets through: here every held-out question's answer
    # is abstained on and every answer given is right, so the map of P(supported) stands, and the weights say why
    assert model.answered is None and "abstains on 24 of 24 unanswerable" in info["abstain_cut"]
    assert (
        info["answered"]
        == "none (the map stands): every one of the 24 answers is right; the answer confidence needs both"
    )
    assert "yes_no" not in model.lead  # the 135M model's own counts are not carried over to another model
    result = json.loads(answered.out)
    assert f"weights {weights}, fitted for fake-model at {server.base_url}" in result["trace"]["policies"]
    assert result["config"]["scorer"] == "evidence" and "warning" not in answered.err
    print(f"calibrate: {calls} calls for 24 chunks")  # the README's figure (pytest -s shows it)


def test_weights_of_one_model_warn_once_when_another_answers(corpus_index, capsys, tmp_path):
    out = tmp_path / "fake-model.json"
    with FakeOpenAIServer(responder=writer()) as server:
        assert main(calibrate(corpus_index, server, "--out", str(out))) == 0
    assert "--scorer-weights" in capsys.readouterr().err  # written elsewhere: how to use them
    with FakeOpenAIServer(responder=writer(), model="qwen2.5:7b") as other:
        argv = ["ask", DOCS["arvo.md"][1], "--index", str(corpus_index), "--base-url", other.base_url]
        assert main([*argv, "--json"]) == 0  # found for no model here: the paper's scorer
        assert json.loads(capsys.readouterr().out)["config"]["scorer"] == "paper"
        assert main([*argv, "--scorer-weights", str(out)]) == 0  # named: used, with one warning line
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("selfrag: warning:")]
    assert len(warnings) == 1 and "fitted for fake-model at http://127.0.0.1:" in warnings[0]
    assert "not qwen2.5:7b" in warnings[0]


def _fail_after(server: FakeOpenAIServer, requests: int, inner):  # type: ignore[no-untyped-def]
    """`inner`, until the server has answered `requests` chat requests: from then on every request gets a 500."""

    def reply(body: dict[str, Any]) -> str:
        if server.stats.requests >= requests:
            server.fault = "500"
        return inner(body)

    return reply


def test_a_model_that_cannot_pick_a_short_answer_is_asked_only_for_the_question_to_the_chunks_own(corpus_index, capsys):
    """A small model copies a whole sentence as its answer: the chunk's own number is taken as the answer, with its
    sentence, and the model writes only the question; the questions that are questions are used."""
    long = {file: text for file, (text, _, _) in DOCS.items()}  # the whole document as the "short answer"
    model = writer(answers=long, second="In which year was the {town} bridge built?")
    with FakeOpenAIServer(responder=model) as server:
        assert main(calibrate(corpus_index, server)) == 0
        seconds = [b for b in server.stats.bodies if "JudgeQuestionReply" in json.dumps(b)]
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
    capsys.readouterr()
    assert len(seconds) == 24  # one second call per chunk whose pair was unusable
    records = [
        json.loads(line)
        for line in (weights.parent / (weights.name + ".work") / "questions.jsonl").read_text().splitlines()
    ]
    years = {str(1901 + n) for n in range(24)}
    assert all(r["status"] == "ok" and r["answer"] in years for r in records)
    assert all(r["made"] == "the model's question" and "more than 8 words" in r["tried"][0] for r in records)
    assert all(r["calls"] == 2 for r in records)
    assert load_critic_model(weights).fitted_on["sizes"]["questions"] == 24


@pytest.mark.parametrize(
    ("second", "why"),
    [
        ("The {town} bridge is old.", "no question"),
        ("Was it {answer}?", "gives its answer away"),
        ("What is the answer to this question?", "names nothing of its document"),
    ],
    ids=["statement", "gives-away", "names-nothing"],
)
def test_where_the_model_writes_no_usable_question_its_sentence_with_the_answer_blanked_is_asked(
    corpus_index, capsys, second, why
):
    """A model too small to write a question: the chunk's sentence with its number left blank is the question."""
    long = {file: text for file, (text, _, _) in DOCS.items()}
    with FakeOpenAIServer(responder=writer(answers=long, second=second)) as server:
        assert main(calibrate(corpus_index, server)) == 0
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
    capsys.readouterr()
    lines = (weights.parent / (weights.name + ".work") / "questions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert all(r["status"] == "ok" and r["made"] == "a blank" and why in r["tried"][1] for r in records)
    arvo = next(r for r in records if r["id"] == "arvo.md#0")
    assert arvo["question"] == 'What goes in the blank in "The Arvo bridge was built in ___ across the river."?'
    assert arvo["answer"] == "1901" and arvo["calls"] == 2


def test_a_reply_that_never_validates_is_the_chunks_failure_and_its_blank_is_asked(corpus_index, capsys):
    """A model whose question replies never parse (cut off, say): the chunk gets its blank, not a failure that
    every --resume would meet again."""
    long = {file: text for file, (text, _, _) in DOCS.items()}
    model = writer(answers=long)

    def cut_off(body: dict[str, Any]) -> str:
        return '{"question": "In which year' if "JudgeQuestionReply" in json.dumps(body) else model(body)

    with FakeOpenAIServer(responder=cut_off) as server:
        assert main(calibrate(corpus_index, server)) == 0
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
    capsys.readouterr()
    lines = (weights.parent / (weights.name + ".work") / "questions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert all(r["status"] == "ok" and r["made"] == "a blank" for r in records)
    assert all("no usable reply (CritiqueError" in r["tried"][1] for r in records)


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("Late bikes cost $15 a day. Disputes go in within 30 days.", ["$15", "30"]),
        ("The fee rose 2.5% in 2026, from 10:00 on 1/3.", ["2.5%", "2026", "10:00", "1/3"]),
        ("Bikes are kept at the Depot on Tannery Lane. Ask Anna Berg.", ["Depot", "Tannery Lane", "Anna Berg"]),
        ("Members vote. Nothing here is counted.", []),
    ],
    ids=["amounts", "numbers", "names-when-no-number", "none"],
)
def test_a_chunks_own_short_answers_are_its_numbers_else_its_names(text, spans):
    found = answer_spans(text)
    assert [span for span, _ in found] == spans
    assert all(span in sentence and sentence in text for span, sentence in found)


def test_an_endpoint_that_fails_mid_run_leaves_the_weights_alone_and_resume_goes_on(corpus_index, capsys):
    with FakeOpenAIServer(responder=writer()) as server:
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
        weights.parent.mkdir(parents=True)
        weights.write_text(load_critic_model().to_json())  # weights from before: untouched by a failed run
        before = digest(weights)
        server.responder = _fail_after(server, 80, writer())  # the questions and a few answers, then 500s
        assert main(calibrate(corpus_index, server)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("selfrag: error:") and err[-1].endswith("run again with --resume to continue")
        assert digest(weights) == before
        questions = weights.with_name(weights.name + ".work") / "questions.jsonl"
        assert sum(json.loads(line)["status"] == "ok" for line in questions.read_text().splitlines()) == 24
        server.fault, server.responder = None, writer()
        seen = server.stats.requests
        assert main(calibrate(corpus_index, server)) == 2  # without --resume: the work folder is not overwritten
        assert "pass --resume" in capsys.readouterr().err and server.stats.requests == seen
        assert main(calibrate(corpus_index, server, "--resume")) == 0
        bodies = server.stats.bodies[seen:]
    assert not any("CalibrateQuestionReply" in json.dumps(b) for b in bodies)  # no question asked twice
    assert digest(weights) != before and load_critic_model(weights).fitted_for.model == "fake-model"
    assert load_critic_model(weights).fitted_on["sizes"]["questions"] == 24


def test_a_damaged_questions_file_is_refused_naming_it(corpus_index, capsys):
    with FakeOpenAIServer(responder=writer()) as server:
        server.responder = _fail_after(server, 30, writer())
        assert main(calibrate(corpus_index, server)) == 1
        capsys.readouterr()
        questions = (
            place(dict(os.environ), server.base_url, None, "fake-model").with_name(
                f"{place(dict(os.environ), server.base_url, None, 'fake-model').name}.work"
            )
            / "questions.jsonl"
        )
        lines = questions.read_text().splitlines()
        first = json.loads(lines[0])
        del first["answer"]
        questions.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        server.fault, server.responder = None, writer()
        seen = len(server.stats.authorizations)
        assert main(calibrate(corpus_index, server, "--resume")) == 2
        assert len(server.stats.authorizations) == seen + 2  # the server's identity asked (GETs), no question
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("selfrag: error")]
    assert len(err) == 1 and "questions.jsonl" in err[0] and "no question or answer" in err[0]


def test_a_corpus_of_one_document_is_refused_before_any_call(tmp_path, capsys):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "only.md").write_text(" ".join(text for text, _, _ in DOCS.values()))
    assert main(["index", str(folder), "--out", str(tmp_path / "index"), "--quiet"]) == 0
    capsys.readouterr()
    with FakeOpenAIServer(responder=writer()) as server:
        assert main(calibrate(tmp_path / "index", server)) == 2
        assert not server.stats.authorizations
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1 document" in err and "at least 2" in err


@pytest.mark.parametrize(
    ("model", "plain", "message"),
    [
        (writer(answers={file: "a phrase found nowhere" for file in DOCS}), True, "0 usable questions of 24 chunks"),
        (writer(sentence="I cannot say more about it."), False, "supported=False; the fit needs both classes"),
    ],
)
def test_too_few_questions_or_one_class_are_refused_and_existing_weights_stay(tmp_path, capsys, model, plain, message):
    """Too few: no usable pair and no number or name to blank. One class: no candidate says its question's answer
    (no sentence is extracted from one-sentence documents)."""
    corpus_index = build_index(tmp_path / "docs", first_sentence=True, plain=plain)
    capsys.readouterr()
    out = tmp_path / "mine.json"
    out.write_text(load_critic_model().to_json())
    before = digest(out)
    with FakeOpenAIServer(responder=model) as server:
        assert main(calibrate(corpus_index, server, "--out", str(out))) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("selfrag: error")]
    assert len(err) == 1 and message in err[0]
    assert digest(out) == before


def test_the_limit_and_the_shipped_file_are_checked_before_any_call(corpus_index, capsys):
    shipped = Path(selfrag.__file__).parent / "data" / "critic-v1.json"
    before = digest(shipped)
    with FakeOpenAIServer(responder=writer()) as server:
        assert main([*calibrate(corpus_index, server), "--limit", "5"]) == 2
        assert "--limit must be at least 20" in capsys.readouterr().err
        assert main(calibrate(corpus_index, server, "--out", str(shipped))) == 2
        assert "is the shipped weights file" in capsys.readouterr().err
        assert not server.stats.authorizations
    assert digest(shipped) == before


def test_a_question_is_asked_held_out_unless_another_chunk_answers_it_too():
    texts = {
        "arvo": "The Arvo bridge was built in 1901 across the river.",
        "belt": "The Belt mill opened in 1901 and closed in 1950.",  # the year, about something else
        "corin": "The Corin ferry was first run by MasonAov in 1930.",
        "dalm": "The Corin ferry was first run by MasonAov, from 1930 until the bridge came.",  # the fact again
        **{f"other{n}": f"Filler document number {n} says nothing of bridges or ferries." for n in range(8)},
    }
    chunks = tuple(Chunk(name, 0, text) for name, text in texts.items())
    questions = [
        Question("arvo#0", "In which year was the Arvo bridge built?", "1901"),
        Question("corin#0", "Who first ran the Corin ferry?", "MasonAov"),
    ]
    folds = held_out(calibration_set(Corpus(Path("idx"), chunks, len(chunks)), questions), questions)
    asked = [example.question for _, fold in folds for example in fold.examples]
    assert asked == ["In which year was the Arvo bridge built?"]
    assert all("arvo#0" not in {chunk.key for chunk in fold.corpus} for _, fold in folds)


def questions_file(path: Path, extra: list[dict[str, Any]] | None = None) -> Path:
    """The 24 documents' own questions as a user's questions file, and `extra` lines after them."""
    rows = [{"question": question, "answer": answer} for _, question, answer in DOCS.values()]
    path.write_text("".join(json.dumps(row) + "\n" for row in [*rows, *(extra or [])]))
    return path


def test_the_users_own_questions_are_placed_on_their_chunks_and_none_is_written(corpus_index, tmp_path, capsys):
    """A yes/no question (no chunk states "yes"), one whose answer no document holds and a second question of a
    chunk already asked are left out; the 24 others are asked, and no question is written by the model."""
    extra = [
        {"question": "Is the Arvo bridge across the river?", "answer": "yes"},
        {"question": "Who painted the Arvo bridge?", "answer": "Someone Else"},
        {"question": "Which river does the bridge built in 1901 cross?", "answers": ["nowhere", "1901"]},
    ]
    given = questions_file(tmp_path / "mine.jsonl", extra)
    out = tmp_path / "w.json"
    with FakeOpenAIServer(responder=writer()) as server:
        argv = calibrate(corpus_index, server, "--questions", str(given), "--out", str(out), "--limit", "30")
        assert main(argv) == 0  # every line of the file is met: the sample is all of them
        written = sum(1 for b in server.stats.bodies if "CalibrateQuestionReply" in json.dumps(b))
    captured = capsys.readouterr()
    assert written == 0
    said = f"selfrag calibrate: 24 questions of {given} (left out: 2 no chunk states its answer; 1 the question gives"
    assert said in captured.err
    assert captured.out.strip().endswith(f"calls for 24 questions of {given}")
    model = load_critic_model(out)
    assert model.fitted_on["sizes"]["questions"] == 24
    assert model.fitted_on["questions_file"] == {"path": str(given), "fingerprint": digest(given)[:16]}
    assert model.fitted_on["answered"].startswith("none (the map stands): every one of the 24 answers is right")


def test_a_users_question_goes_to_the_chunk_that_states_its_answer_and_names_most_of_it():
    texts = {
        "arvo": "The Arvo bridge was built in 1901 across the river.",
        "belt": "The Belt mill opened in 1901 and closed in 1950.",
        "corin": "In 1901 the Belt family sold a field to the town.",
    }
    chunks = tuple(Chunk(name, 0, text) for name, text in texts.items())
    texts = padded(chunks)
    found, why = locate("When did the Belt mill open?", ["1901"], chunks, texts)
    assert found == Question("belt#0", "When did the Belt mill open?", "1901") and why == ""
    assert locate("Is the Belt mill open?", ["yes", "no"], chunks, texts) == (None, "no chunk states its answer")
    found, why = locate("When was it built, in 1901?", ["1901"], chunks, texts)
    assert found is None and why == "the question gives its answer away"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"question": "Where?", "answer": "Arvo"}', "not json"], "mine.jsonl line 2: not a JSON object"),
        (['{"question": "Where is the Arvo bridge?"}'], 'mine.jsonl line 1: no "answer"'),
        (['{"answer": "1901"}'], 'mine.jsonl line 1: no "question"'),
        (['{"question": "Where?", "answers": []}'], 'line 1: no "answer" (a string) or "answers"'),
        ([""], "mine.jsonl holds no questions"),
        (['{"question": "Is it so?", "answer": "yes"}'] * 30, "0 of the questions in"),
    ],
)
def test_a_bad_questions_file_is_refused_in_one_line_before_any_call(corpus_index, tmp_path, capsys, lines, message):
    given = tmp_path / "mine.jsonl"
    given.write_text("\n".join(lines) + "\n")
    out = tmp_path / "w.json"
    out.write_text(load_critic_model().to_json())
    before = digest(out)
    with FakeOpenAIServer(responder=writer()) as server:
        assert main(calibrate(corpus_index, server, "--questions", str(given), "--out", str(out))) == 2
        assert not server.stats.authorizations
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert digest(out) == before


def test_resuming_with_a_larger_limit_keeps_the_answers_both_limits_ask(corpus_index, tmp_path, capsys):
    """The message of too few right answers says to raise --limit: resumed with a larger one, the questions the
    smaller limit asked are neither written nor answered with their chunk again; only the held-out runs, whose
    corpus changes with the questions, are asked afresh. Another seed is still refused."""

    def asked(bodies: list[dict[str, Any]], question: str) -> int:
        return sum(1 for b in bodies if question in json.dumps(b["messages"]) and "response_format" in b)

    with FakeOpenAIServer(responder=writer()) as server:
        fresh = tmp_path / "fresh.json"
        assert main(calibrate(corpus_index, server, "--out", str(fresh))) == 0
        once = list(server.stats.bodies)
        out = tmp_path / "w.json"
        assert main(calibrate(corpus_index, server, "--out", str(out), "--limit", "20")) == 0
        first = [json.loads(line)["id"] for line in (tmp_path / "w.json.work/questions.jsonl").read_text().splitlines()]
        capsys.readouterr()
        seen = len(server.stats.bodies)
        assert main(calibrate(corpus_index, server, "--out", str(out), "--seed", "1", "--resume")) == 2
        assert "seed 0 there, 1 now" in capsys.readouterr().err and len(server.stats.bodies) == seen
        assert main(calibrate(corpus_index, server, "--out", str(out), "--resume")) == 0
        resumed = server.stats.bodies[seen:]
    assert "continuing the calibration of --limit 20 with --limit 24: 20 answers kept" in capsys.readouterr().err
    assert sum(1 for b in resumed if "CalibrateQuestionReply" in json.dumps(b)) == 4  # the 4 chunks not asked before
    for file, (_, question, _) in DOCS.items():
        before = any(key.startswith(f"{file}#") for key in first)
        # asked in the fresh run with and without its chunk; resumed, without it only when the smaller limit asked it
        assert (asked(resumed, question) < asked(once, question)) is before, file
    assert load_critic_model(out).fitted_on["sizes"]["questions"] == 24
    assert load_critic_model(out).fitted_on["sizes"]["unanswerable_questions"] == 24


def test_the_cut_is_fitted_out_of_fold_and_refitted_with_another_keep_without_asking_again(corpus_index, tmp_path,
                                                                                          capsys):  # fmt: skip
    """The abstention cut is fitted on answers rated by heads that never saw their question, and says what it does
    there; resumed with another --keep, it is fitted again from the answers kept: no question is asked again and
    the heads stay. A share that is no share is refused before any call."""
    out = tmp_path / "w.json"
    with FakeOpenAIServer(responder=writer()) as server:
        assert main(calibrate(corpus_index, server, "--out", str(out), "--keep", "1.5")) == 2
        assert "--keep must be a share from 0.5 to below 1, got 1.5" in capsys.readouterr().err
        assert not server.stats.authorizations
        assert main(calibrate(corpus_index, server, "--out", str(out))) == 0
        first = load_critic_model(out)
        said = capsys.readouterr().out
        seen = len(server.stats.bodies)
        assert main(calibrate(corpus_index, server, "--out", str(out), "--resume", "--keep", "0.6")) == 0
        again = [b for b in server.stats.bodies[seen:] if "messages" in b]
    cut = first.fitted_on["abstain_cut"]
    assert cut.startswith("5-fold cross-fitted: keeps ") and "(aim 92%)" in cut and cut in said
    assert first.abstain_threshold > 0
    refitted = load_critic_model(out)
    assert not again  # no chat call: every answer was kept
    assert (refitted.relevant, refitted.supported, refitted.answers) == (first.relevant, first.supported,
                                                                         first.answers)  # fmt: skip
    assert refitted.abstain_threshold > first.abstain_threshold and "(aim 60%)" in refitted.fitted_on["abstain_cut"]


def _is_check(body: dict[str, Any]) -> bool:
    return "<answer nonce=" in json.dumps(body)  # check_answer's block (`engine.check`)


def test_the_model_checks_each_answer_once_and_a_failed_check_is_asked_again_on_resume(corpus_index, capsys):
    with FakeOpenAIServer(responder=writer()) as server:
        weights = place(dict(os.environ), server.base_url, None, "fake-model")

        def failing(body: dict[str, Any]) -> str:
            if _is_check(body):
                server.fault = "500"  # the runs are done; the endpoint fails once the checks begin
            return writer()(body)

        server.responder = failing
        assert main(calibrate(corpus_index, server)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("selfrag: error:") and "checks failed at the endpoint" in err[-1]
        assert err[-1].endswith("run again with --resume to ask them") and not weights.exists()
        server.fault, server.responder = None, writer()
        seen = len(server.stats.bodies)
        assert main(calibrate(corpus_index, server, "--resume")) == 0
        again = [b for b in server.stats.bodies[seen:] if "messages" in b]
    checks = weights.with_name(weights.name + ".work") / "checks.jsonl"
    made = [json.loads(line) for line in checks.read_text().splitlines()]
    assert again and all(map(_is_check, again))  # only the checks are asked again, none of the runs' calls
    # each answer checked once: the first check was answered before the endpoint failed, the others on resume
    assert len(made) == len(again) + 1 and {m["answer_check"] for m in made} == {1.0}
    assert all(re.match(r"(answerable|held-out-\d+)/\w+\.md#0$", m["id"]) and m["answer"] for m in made)
    assert load_critic_model(weights).fitted_for.model == "fake-model"


def test_a_check_reply_that_never_validates_is_no_verdict_and_is_not_asked_again(corpus_index, capsys):
    def garbled(body: dict[str, Any]) -> str:
        return "agree, I think" if _is_check(body) else writer()(body)  # no JSON: the model is at fault

    with FakeOpenAIServer(responder=garbled) as server:
        assert main(calibrate(corpus_index, server)) == 0
        weights = place(dict(os.environ), server.base_url, None, "fake-model")
        seen = len(server.stats.bodies)
        assert main(calibrate(corpus_index, server, "--resume")) == 0
        again = [b for b in server.stats.bodies[seen:] if "messages" in b]
    checks = weights.with_name(weights.name + ".work") / "checks.jsonl"
    made = [json.loads(line) for line in checks.read_text().splitlines()]
    assert made and all(m["answer_check"] is None and m["said"].startswith("no usable reply") for m in made)
    assert not again
