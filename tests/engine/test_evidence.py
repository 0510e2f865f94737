"""The evidence features, the degenerate-sentence rules and the fitted critic (pure functions, no model)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import selfrag
from selfrag.bench.judgments import row_dict
from selfrag.engine import evidence, filters
from selfrag.engine.calibration import (
    ANSWER_FEATURES,
    ANSWERED_FEATURES,
    FEATURES,
    CandidateView,
    CriticModel,
    EvidenceRater,
    Head,
    Platt,
    answer_support,
    beats_a_coin,
    load_critic_model,
    parse_critic_model,
)
from selfrag.errors import ConfigError, InputError
from selfrag.fit.critic import (
    JudgedRow,
    abstain_cut,
    answers_under,
    balanced_threshold,
    fit_abstain_cut,
    fit_answered,
    fit_answers_head,
    fit_critic,
    fit_logistic,
    judged_row,
    kept_answers,
    lost_bound,
)

Q = "Who directed the 1975 film Jaws?"
CHUNK = "Jaws is a 1975 American thriller film directed by Steven Spielberg, based on the novel by Peter Benchley."


def feats(sentence: str, chunk: str = CHUNK, **kw):  # type: ignore[no-untyped-def]
    values = dict(rank=0, score_rel=1.0, quote_ok=True, model_rel=1.0, model_sup=1.0, others=())
    values.update(kw)
    return evidence.features(Q, sentence, chunk, **values)


def test_a_sentence_backed_by_its_chunk_scores_higher_than_an_invented_one():
    backed = feats("Jaws was directed by Steven Spielberg.")
    invented = feats("Jaws was directed by Martin Scorsese.")
    assert backed["new_in"] == 1.0 and backed["facts_in"] == 1.0
    assert invented["new_in"] < 1.0 and invented["facts_in"] == 0.0
    assert backed["has_facts"] == invented["has_facts"] == 1.0


def test_rank_score_quote_and_model_labels_are_carried_as_given():
    values = feats("Spielberg directed it.", rank=3, score_rel=0.25, quote_ok=None, model_rel=0.2, model_sup=0.5)
    assert values["rank_inv"] == 0.25 and values["score_rel"] == 0.25 and values["quote_ok"] == 0.5
    assert (values["model_rel"], values["model_sup"]) == (0.2, 0.5)
    assert list(values) == list(FEATURES)


def test_names_in_asks_whether_the_chunk_is_about_the_questions_names():
    other_film = "Orca is a 1977 American thriller film directed by Michael Anderson, about a killer whale."
    about = feats("Steven Spielberg directed it.")
    elsewhere = feats("Michael Anderson directed it.", chunk=other_film)
    assert about["names_in"] == 1.0  # Jaws and 1975 are both in the chunk
    assert elsewhere["names_in"] == 0.0  # neither is, though the question's common words are
    assert elsewhere["question_in"] > 0.0
    unnamed = evidence.features("who wrote it?", "Benchley.", CHUNK, rank=0, score_rel=1.0, quote_ok=None,
                                model_rel=1.0, model_sup=1.0)  # fmt: skip
    assert unnamed["names_in"] == 1.0  # a question without names does not count against a chunk


def test_agreement_counts_what_other_chunks_sentences_also_say():
    alone = feats("Steven Spielberg directed it.")
    agreed = feats("Steven Spielberg directed it.", others=("Spielberg was the director.",))
    disagreed = feats("Steven Spielberg directed it.", others=("Benchley wrote the novel.",))
    assert alone["agreement"] == 0.0 and disagreed["agreement"] == 0.0
    assert agreed["agreement"] > 0.0


@pytest.mark.parametrize(
    ("sentence", "draft", "flaw"),
    [
        ("Who directed the 1975 film Jaws?", [], "restates_question"),
        ("The 1975 film Jaws was directed.", [], "restates_question"),
        ("Steven Spielberg directed Jaws.", ["Steven Spielberg directed Jaws!"], "repeats_draft"),
        ("Spielberg directed Jaws. Benchley wrote the novel.", [], "several_sentences"),  # copied from the chunk
        ("Spielberg made it. He was young. It was a hit.", [], "several_sentences"),
        ("Spielberg directed it. Or so they say.", [], None),  # two sentences, not a copy
        ("Steven Spielberg directed it.", ["Peter Benchley wrote the novel."], None),
        ("Yes.", ["Yes."], None),  # no content words: an answer, not a restatement or a repeat
        ("Jaws", [], None),  # a short answer the question names is still an answer
    ],
)
def test_degenerate_sentences_are_named(sentence, draft, flaw):
    assert filters.degeneracy(Q, sentence, draft, CHUNK) == flaw


@pytest.mark.parametrize(
    "sentence",
    [
        "This document contains information that helps answer the question.",
        "The document is relevant to the question and gives its year.",
        "The document's version attribute says whether it is current.",
        "The document is between 2019 and 2023, so it is not a new one.",
        "The documents do not say who directed it.",
        "is_final: true",  # the prompt's or the reply's machinery, copied
        "Sarajevo (Cyrillic: Sarajevo , ] },\n<document nonce=",
        "1: useful, 2: complete and to the point; 3: no longer needed",
        "109783c817deb906.",  # a document delimiter's nonce
        "Jaws was shot in 1974 by 919935ea26d06930 and friends.",
        "The document is incomplete, the next sentence is not complete.",
        "The next sentence is not complete.",  # the prompt's other names for a text
        "The passage is relevant to the question.",
        "The sentence is also about the shark.",
        "This excerpt does not say who directed it.",
    ],
)
def test_a_sentence_about_the_document_is_named(sentence):
    assert filters.degeneracy(Q, sentence, [], CHUNK) == "about_the_document"


@pytest.mark.parametrize(
    ("sentence", "flaw"),
    [
        ("The Prestige (film) #0", "about_the_document"),  # a document's id, as the prompt shows it
        ("Jaws (film)#0 was shot in 1974.", "about_the_document"),
        ("The Prestige (film) is a 2006 film.", None),  # the document's title is a name, not an id
        ("The film ranked #1 at the box office in 2006.", None),  # a number sign that names no document
    ],
)
def test_a_sentence_copying_a_documents_id_is_about_the_document(sentence, flaw):
    ids = ("The Prestige (film)", "Jaws (film)")
    assert filters.degeneracy("Who directed The Prestige?", sentence, [], CHUNK, ids=ids) == flaw


@pytest.mark.parametrize(
    "sentence",
    [
        "The Document Foundation was set up in 2010.",  # a name
        "The document must be signed by both parties.",  # a statement about a document in the world
        "The text of the treaty was signed in 1975.",
        "The source of the Nile is Lake Victoria.",
        "The final is played in Paris; the document delivery took 3 days.",
        "Scored 1: 0 in the final, a useful win.",
        "The bug was fixed in 2019 with 109783c817deb906a, a longer hash.",  # seventeen hex digits: not a nonce
        "Its checksum is 109783C817DEB906.",  # capitals: not a nonce
        "The passage was a sea route first sailed in 1906.",  # a passage in the world
        "The sentence was reduced to five years on appeal.",
        "The first paragraph of the constitution is about rights.",
    ],
)
def test_a_sentence_about_a_document_in_the_world_is_not(sentence):
    assert filters.degeneracy("What happened?", sentence, []) is None


def test_two_sentences_one_about_the_text_are_cut_to_the_other():
    sentence = "Spielberg directed it in 1975. The sentence is also about his later career."  # not a copy
    assert filters.degeneracy(Q, sentence, [], CHUNK) == "several_sentences"
    assert filters.best_sentence(Q, sentence) == "Spielberg directed it in 1975."


CARGO_Q = "How many cargo bikes does the co-op have?"


def test_a_sentence_stating_no_amount_does_not_answer_how_many_and_a_cut_keeps_the_one_that_does():
    assert filters.degeneracy(CARGO_Q, "The co-op insures its riders.", []) == "no_amount"
    assert filters.degeneracy(CARGO_Q, "They are kept at the Depot.", ["The co-op has 6 cargo bikes."]) is None
    several = "The co-op's cargo bikes are insured. It has 6 cargo bikes with a front box. They are kept at the Depot."
    assert filters.degeneracy(CARGO_Q, several, []) == "several_sentences"
    assert filters.best_sentence(CARGO_Q, several) == "It has 6 cargo bikes with a front box."
    # a Self-RAG checkpoint's segment is one unit, however many sentences: judged whole
    assert filters.degeneracy(CARGO_Q, several, [], segment=True) is None
    assert filters.degeneracy(CARGO_Q, "The co-op insures riders. Bikes are kept at the Depot.", [], segment=True) == (
        "no_amount"
    )


def test_sixteen_hex_digits_the_chunk_holds_are_the_documents_not_a_nonce():
    chunk = "The fix landed in commit 109783c817deb906 on 3 May."
    assert filters.degeneracy("Which commit fixed it?", "Commit 109783c817deb906 fixed it.", [], chunk) is None
    assert filters.degeneracy("Which commit fixed it?", "Commit 119783c817deb906 fixed it.", [], chunk) == (
        "about_the_document"
    )


@pytest.mark.parametrize(
    ("sentence", "content"),
    [
        ("The document states that Steven Spielberg directed Jaws.", "Steven Spielberg directed Jaws."),
        ("According to the text, Spielberg directed it in 1975.", "Spielberg directed it in 1975."),
        ("The answer is: { 1975 }", "1975"),
        ("The answer is yes, Spielberg directed it.", "Yes, Spielberg directed it."),
        ("The answer is that Spielberg directed it.", "Spielberg directed it."),
        ("The document is about Steven Spielberg, who directed it.", "Steven Spielberg, who directed it."),
        ("The sentence says that Sunny Day Real Estate was an emo band.", "Sunny Day Real Estate was an emo band."),
        ("The answer is.", "The answer is."),  # nothing reported: left as written
        ("Steven Spielberg directed Jaws.", "Steven Spielberg directed Jaws."),
    ],
)
def test_a_reports_frame_is_taken_off_what_it_reports(sentence, content):
    assert filters.unframed(sentence)[0] == content


def test_a_topic_restating_a_yes_no_question_says_nothing():
    question = "Can I return a bike after 24 hours without paying anything?"
    topic, is_topic = filters.unframed("The document is about returning a bike after 24 hours without paying.")
    assert is_topic and filters.degeneracy(question, topic, [], topic=True) == "restates_question"
    assert filters.degeneracy(question, "You can return a bike after 24 hours without paying.", []) is None


def test_a_sentence_that_adds_only_a_number_to_the_questions_words_answers_it():
    question = "What is the late fee for a bike returned after 24 hours?"
    assert filters.degeneracy(question, "The late fee for a bike returned after 24 hours is $15.", []) is None
    assert filters.degeneracy(question, "The late fee for a bike returned after 24 hours.", []) == "restates_question"
    assert filters.degeneracy(Q, "The 1975 film Jaws was directed in 1975.", []) == "restates_question"


def test_a_multi_sentence_copy_is_cut_to_the_sentence_that_answers():
    text = "Jaws is a thriller. It was directed by Steven Spielberg in 1975. Peter Benchley wrote the novel."
    assert filters.best_sentence("Who directed Jaws?", text) == "It was directed by Steven Spielberg in 1975."


def test_logistic_fit_learns_a_separable_rule():
    rng = np.random.default_rng(0)
    x = rng.random((200, 3))
    y = (x[:, 0] > 0.5).astype(float)
    head = fit_logistic(x, y, l2=0.01)
    assert head.probability([0.95, 0.5, 0.5]) > 0.9 > 0.1 > head.probability([0.05, 0.5, 0.5])


def _rows(n: int) -> list[JudgedRow]:
    rows = []
    for i in range(n):
        good = i % 2 == 0
        sentence = "Steven Spielberg directed Jaws." if good else "Orson Welles directed Jaws."
        rows.append(JudgedRow(Q, sentence, CHUNK, relevant=good, supported=good, rank=i % 5, correct=good))
    return rows


def test_fit_critic_round_trips_through_its_file(tmp_path):
    model = fit_critic(_rows(40), {"source": "test"})
    path = tmp_path / "w.json"
    path.write_text(model.to_json())
    loaded = load_critic_model(path)
    assert loaded == model
    rater = EvidenceRater(loaded)
    good, bad = (
        CandidateView(s, CHUNK, "k#0", 0, 1.0, True, 1.0, 1.0, ())
        for s in ("Steven Spielberg directed Jaws.", "Orson Welles directed Jaws.")
    )
    p_good, p_bad = (r.p_supported for r in rater.rate(Q, [good, bad]))
    assert p_good > model.support_threshold > p_bad


def test_the_verdict_cut_is_fitted_on_judged_statements_and_the_answer_maps_on_answerable_rows():
    unanswerable = [  # written while the gold evidence was out of the corpus: well copied, never an answer
        JudgedRow(
            Q,
            "Michael Anderson directed Orca.",
            "Orca (1977) was directed by Michael Anderson.",
            False,
            False,
            correct=False,
            answerable=False,
        )  # fmt: skip
    ] * 20
    statements = [replace(row, correct=None, model_sup=0.9 if row.supported else 0.1) for row in _rows(40)]
    model = fit_critic(_rows(40) + unanswerable + statements)
    assert model.fitted_on["unanswerable_rows"] == 20
    assert model.fitted_on["answers"] == 1  # one question, answered in the answerable rows only
    p_sup = [model.supported.probability(evidence.vector(row.features())) for row in statements]
    assert model.support_threshold == balanced_threshold(p_sup, [row.supported for row in statements])
    assert judged_row({**row_dict(unanswerable[0])}, "j").answerable is False
    assert judged_row({**row_dict(statements[0]), "answerable": None}, "j").answerable is True


def _binomial_at_most(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@pytest.mark.parametrize(("lost", "n"), [(0, 20), (3, 60), (10, 200)])
def test_the_bound_on_the_share_lost_is_clopper_pearsons(lost, n):
    bound = lost_bound(lost, n, 0.8)
    assert bound > lost / n
    assert _binomial_at_most(lost, n, bound) == pytest.approx(0.2, abs=1e-6)  # seeing so few is that unlikely
    if lost == 0:
        assert bound == pytest.approx(1 - 0.2 ** (1 / n))


def test_the_abstention_cut_keeps_a_margin_that_shrinks_with_more_answers():
    few, many = [i / 60 for i in range(1, 61)], [i / 600 for i in range(1, 601)]
    quantile_kept = 0.9  # what the cut at the plain 10 % quantile keeps on its own rows
    for right in (few, many):
        cut = abstain_cut(right, keep=0.9, confidence=0.8)
        kept = sum(v >= cut for v in right) / len(right)
        assert kept > quantile_kept
        assert abstain_cut(right, 0.9, 0.95) <= cut <= abstain_cut(right, 0.9, 0.5)
    margins = [sum(v >= abstain_cut(r, keep=0.9) for v in r) / len(r) - quantile_kept for r in (few, many)]
    assert margins[0] > margins[1] > 0
    assert abstain_cut([0.5] * 28, keep=0.9) == 0.0  # 28 right answers cannot promise 90 % at 95 % confidence
    assert abstain_cut([0.5] * 29, keep=0.9) > 0.0
    assert abstain_cut([0.5] * 35) == 0.0 < abstain_cut([0.5] * 36)  # the default, 92 %, needs 36
    assert abstain_cut([0.5] * 16, keep=0.9, confidence=0.8) > 0.0 == abstain_cut([0.5] * 15, keep=0.9, confidence=0.8)


def _answers(n: int) -> list[JudgedRow]:
    """n questions, each with a right sentence from its chunk and a wrong one from another chunk."""
    rows = []
    for i in range(n):
        q = f"Who directed the 19{50 + i} film number {i}?"
        chunk = f"Film number {i} (19{50 + i}) was directed by Ann Lee {i}."
        right = JudgedRow(q, f"Ann Lee {i} directed film number {i}.", chunk, True, True, 0, 1.0, True, 1.0, 1.0,
                          correct=True)  # fmt: skip
        wrong = replace(right, sentence="Orson Welles directed it.", chunk=CHUNK, relevant=False, supported=False,
                        rank=1, score_rel=0.5, quote_ok=False, model_rel=0.2, model_sup=0.2, correct=False)  # fmt: skip
        rows += [right, wrong]
    return rows


def test_refitting_the_cut_keeps_the_heads_and_counts_what_it_does():
    model = fit_critic(_answers(40))
    unanswerable = [replace(row, answerable=False, correct=False) for row in _answers(10)[1::2]]
    refitted, fit = fit_abstain_cut(replace(model, abstain_threshold=0.0), _answers(40) + unanswerable)
    assert (refitted.relevant, refitted.supported, refitted.confidence) == (model.relevant, model.supported,
                                                                          model.confidence)  # fmt: skip
    assert refitted.abstain_threshold == fit.cut > 0
    assert (fit.right, fit.questions, fit.unanswerable) == (40, 40, 10)
    assert fit.kept >= 36 and fit.abstained == 10  # the wrong chunk's sentences are far under the right ones
    assert "40 right answers of 40 questions" in refitted.fitted_on["abstain_cut"]
    assert refitted.answers is None and not fit.answers_head  # 10 unanswerable questions are too few for its head
    with pytest.raises(InputError, match="at least 36"):
        fit_abstain_cut(model, _answers(20))


def _extracted_and_copied(n: int) -> tuple[list[JudgedRow], list[float], list[float]]:
    """n right answers that are sentences extracted from their chunk, P(supported) 0.25, and n answers to questions made
    unanswerable, written sentences copied well from chunks about something else, P(supported) 0.4: the product
    P(relevant) · P(supported) ranks the second above the first."""
    right = [JudgedRow(f"Who directed film {i}?", f"Film {i} was directed by Ann Lee.", CHUNK, True, True,
                       correct=True, extracted=True) for i in range(n)]  # fmt: skip
    copied = [replace(row, sentence="Jaws is a thriller.", answerable=False, correct=False, extracted=False)
              for row in right]  # fmt: skip
    return right + copied, [0.7] * n + [0.6] * n, [0.25] * n + [0.4] * n


def test_the_answers_head_tells_right_answers_from_answers_to_questions_the_documents_do_not_answer():
    rows, p_rel, p_sup = _extracted_and_copied(25)
    values = [row.features() for row in rows]
    assert answer_support(0.7, 0.25) < answer_support(0.6, 0.4)
    head = fit_answers_head(rows, p_rel, p_sup, values)
    assert head is not None
    model = replace(fit_critic(_answers(40)), answers=head)
    scores = [model.support(r, s, v, row.extracted) for r, s, v, row in zip(p_rel, p_sup, values, rows, strict=True)]
    assert min(scores[:25]) > 0.5 > max(scores[25:])
    assert fit_answers_head(rows[:19] + rows[25:44], p_rel[:19] + p_rel[25:44], p_sup[:19] + p_sup[25:44],
                            values[:19] + values[25:44]) is None  # fmt: skip  # 19 unanswerable questions: no head


def test_refitting_the_cut_on_enough_unanswerable_questions_fits_the_answers_head_and_cuts_on_it():
    model = fit_critic(_answers(40))
    unanswerable = [replace(row, question=row.question + " (gone)", answerable=False, correct=False)
                    for row in _answers(30)[::2]]  # fmt: skip  # the right sentences, their evidence gone
    refitted, fit = fit_abstain_cut(model, _answers(40) + unanswerable)
    assert fit.answers_head and refitted.answers is not None
    assert (fit.unanswerable, fit.right) == (30, 40)
    assert "40 right answers, 30 unanswerable questions" in refitted.fitted_on["answers_head"]
    assert parse_critic_model(refitted.to_json(), "again") == refitted  # the head round-trips through the file
    fitted = fit_critic(_answers(40) + unanswerable)  # the whole fit fits it too, and the cut on it
    assert fitted.answers is not None and fit_critic(_answers(40)).answers is None
    kept = [a for a in answers_under(fitted, _answers(40) + unanswerable) if a.answerable and a.correct]
    assert sum(a.support >= fitted.abstain_threshold for a in kept) >= 36


def test_an_extracted_sentence_answers_on_its_own_ratings_in_the_fit():
    written = JudgedRow("Who directed Jaws?", "Jaws is a film.", CHUNK, True, False, correct=False)
    extracted = replace(
        written, sentence="Jaws was directed by Spielberg.", supported=True, correct=True, extracted=True
    )
    declined = replace(written, question="Who wrote Jaws?", declined=True)
    alone = replace(extracted, question="Who wrote Jaws?")  # its written sentence declined: it answers alone
    p_rel, p_sup = [0.6, 0.9, 0.6, 0.9], [0.5, 0.9, 0.5, 0.9]
    support = [answer_support(r, s) for r, s in zip(p_rel, p_sup, strict=True)]
    answers = kept_answers([written, extracted, declined, alone], p_rel, p_sup, support)
    for answer in answers:
        assert answer.correct and answer.p_supported == 0.9
        assert answer.support == pytest.approx(answer_support(0.9, 0.9)) == pytest.approx(answer.best_support)
    assert len(answers) == 2
    assert judged_row(row_dict(extracted), "j").extracted and not judged_row(row_dict(written), "j").extracted


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (_rows(10), "too few"),
        ([JudgedRow(Q, "Spielberg.", CHUNK, True, True)] * 30, "both classes"),
    ],
)
def test_fit_refuses_data_that_cannot_fit_a_model(rows, message):
    with pytest.raises(InputError, match=message):
        fit_critic(rows)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"question": Q, "sentence": "s", "relevant": True, "supported": True}, "'chunk'"),
        ({"question": Q, "sentence": "s", "chunk": "c", "relevant": "maybe", "supported": True}, "'relevant'"),
        ({"question": Q, "sentence": "s", "chunk": "c", "relevant": True, "supported": True, "rank": -1}, "'rank'"),
        ({"question": Q, "sentence": "s", "chunk": "c", "relevant": 1, "supported": True}, "'relevant'"),
        (
            {"question": Q, "sentence": "s", "chunk": "c", "relevant": True, "supported": True, "model_sup": 2},
            "model_sup",
        ),
        (
            {"question": Q, "sentence": "s", "chunk": "c", "relevant": True, "supported": True, "answerable": 0},
            "'answerable'",
        ),
    ],
)
def test_a_bad_judgment_is_refused_with_its_line_and_field(record, message):
    with pytest.raises(InputError, match=message) as caught:
        judged_row(record, "j.jsonl line 3")
    assert str(caught.value).startswith("j.jsonl line 3")


def _polar(**change) -> dict:
    return {"features": list(evidence.POLARITY), "weights": [1.0, 0.0, 0.0, 0.0], "bias": -0.5} | change


def _gate(**change) -> dict:
    return {"features": list(ANSWER_FEATURES), "weights": [1.0, 1.0, 0.0, 0.0], "bias": -1.0} | change


def _sure(**change) -> dict:
    return {"features": list(ANSWERED_FEATURES), "weights": [1.0, 1.0, 0.5], "bias": -3.0} | change


def _body() -> dict:
    return json.loads(CriticModel(Head((0.0,) * len(FEATURES), 0.0), Head((0.0,) * len(FEATURES), 0.0)).to_json())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(version=99), "version 99"),
        (lambda b: b.update(format="other"), "not a selfrag critic"),
        (lambda b: b["supported"]["weights"].pop(), "finite weights"),
        (lambda b: b["relevant"].update(bias="x"), "finite weights"),
        (lambda b: b.update(features=["rank_inv"]), "other features"),
        (lambda b: b.update(support_threshold=1.5), "threshold"),
        (lambda b: b.update(lead={"why": {"right": 1, "of": 2}}), "lead needs kinds"),
        (lambda b: b.update(lead={"yes_no": {"right": 3, "of": 2}}), "right <= of"),
        (lambda b: b.update(lead={"yes_no": {"right": 1.5, "of": 2}}), "whole counts"),
        (lambda b: b.update(lead=[1, 2]), "lead must map"),
        (lambda b: b.update(refutes={"features": ["claim_negated"], "weights": [1.0], "bias": 0.0}), "refutes was"),
        (lambda b: b.update(refutes=_polar(weights=[1.0, 2.0])), "refutes needs 4 finite weights"),
        (lambda b: b.update(refutes=_polar(bias=None)), "refutes needs 4 finite weights"),
        (lambda b: b.update(refutes=[1, 2]), "refutes needs its features"),
        (lambda b: b.update(answers=_gate(features=["p_relevant"])), "answers was fitted on other features"),
        (lambda b: b.update(answers=_gate(weights=[1.0, float("nan"), 0.0, 0.0])), "answers needs 4 finite"),
        (lambda b: b.update(answers=_gate(weights=[1.0])), "answers needs 4 finite weights"),
        (lambda b: b.update(answers="x"), "answers needs its features"),
        (lambda b: b.update(answered=_sure(features=["p_supported"])), "answered was fitted on other features"),
        (lambda b: b.update(answered=_sure(weights=[1.0, float("inf"), 0.0])), "answered needs 3 finite"),
        (lambda b: b.update(answered=_sure(bias="x")), "answered needs 3 finite weights"),
    ],
)
def test_a_bad_weights_file_is_refused_naming_it(change, message):
    body = _body()
    change(body)
    with pytest.raises(ConfigError, match=message) as caught:
        parse_critic_model(json.dumps(body), "critic weights bad.json")
    assert "bad.json" in str(caught.value)


def test_a_short_answer_adds_its_training_rate_where_the_sentences_are_wrong():
    body = _body() | {"lead": {"yes_no": {"right": 14, "of": 20}, "factoid": {"right": 3, "of": 4}}}
    model = parse_critic_model(json.dumps(body), "critic weights lead.json")
    assert model.lead == {"yes_no": (14, 20), "factoid": (3, 4)} and model.lead_rate("yes_no") == pytest.approx(15 / 22)
    assert parse_critic_model(model.to_json(), "again").lead == model.lead  # round trip
    rater = EvidenceRater(model)
    assert rater.with_lead(0.1, "yes_no") == pytest.approx(0.1 + 0.9 * 15 / 22)
    assert rater.with_lead(0.1, "factoid") == 0.1  # four training answers are too few: the sentences' stands
    assert rater.with_lead(0.1, "choice") == 0.1  # no counts for this kind
    assert rater.with_lead(0.1, None) == 0.1


def test_an_answer_that_says_the_documents_dont_settle_it_is_as_sure_as_such_answers_were_right():
    body = _body() | {"lead": {"yes_no_unsettled": {"right": 2, "of": 30}, "choice_unsettled": {"right": 1, "of": 5}}}
    rater = EvidenceRater(parse_critic_model(json.dumps(body), "critic weights lead.json"))
    # its sentences' support says nothing of a yes or no it does not state: the training rate stands alone
    assert rater.with_lead(0.9, "yes_no_unsettled") == rater.with_lead(0.1, "yes_no_unsettled") == pytest.approx(3 / 32)
    assert rater.with_lead(0.9, "choice_unsettled") == 0.9  # five training answers are too few: the sentences' stands


def test_a_polarity_head_round_trips_and_rates_a_claim_against_a_text():
    model = parse_critic_model(json.dumps(_body() | {"refutes": _polar(weights=[3.0, 0.0, 0.0, 0.0], bias=-1.5)}), "w")
    assert parse_critic_model(model.to_json(), "again") == model
    rater = EvidenceRater(model)
    assert rater.refutes("Sea level is not rising.", "Sea level rose 20 cm.") == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert rater.refutes("Sea level is rising.", "Sea level rose 20 cm.") == pytest.approx(1 / (1 + math.exp(1.5)))
    assert EvidenceRater(parse_critic_model(json.dumps(_body()), "w")).refutes("a", "b") is None  # no head


@pytest.mark.parametrize(
    ("claim", "text", "cues"),
    [
        ("Global warming is not happening.", "Temperatures have risen since 1900.", [1, 0, 1, 0]),
        ("CO2 isn't a pollutant.", "CO2 is not a pollutant in that sense.", [1, 1, 0, 0]),
        ("Arctic sea ice is increasing.", "Arctic sea ice has declined sharply.", [0, 0, 0, 1]),
        ("Arctic sea ice is shrinking.", "Arctic sea ice has declined sharply.", [0, 0, 0, 0]),
        ("Antarctica is gaining ice.", "It has no ice loss in the east.", [0, 1, 1, 1]),
    ],
)
def test_polarity_cues_read_negation_and_direction(claim, text, cues):
    assert evidence.polarity(claim, text) == cues


def test_a_weights_file_with_a_nan_is_refused():
    text = _body() | {"confidence": {"a": 1.0, "c": 0.0}}
    raw = json.dumps(text).replace('"a": 1.0', '"a": NaN')
    with pytest.raises(ConfigError, match="finite"):
        parse_critic_model(raw, "critic weights nan.json")


def test_the_shipped_weights_load_and_say_what_they_were_fitted_on():
    model = load_critic_model()
    assert 0 < model.support_threshold < 1 and model.fitted_on.get("rows", 0) >= 20
    assert all(math.isfinite(w) for w in (*model.relevant.weights, *model.supported.weights))


def test_the_shipped_weights_write_back_as_they_were_read_and_name_the_extracted_feature_offered():
    """A weights file's names are its format: the extracted sentence's feature is named "offered" in them (its name
    when version 1 was written), and a bench run's hash reads the weights' text, so renaming it there would refuse
    every file already fitted and move every run already made to a new folder."""
    text = (Path(selfrag.__file__).parent / "data" / "critic-v1.json").read_text(encoding="utf-8")
    assert json.loads(text)["answers"]["features"] == list(ANSWER_FEATURES) == [*ANSWER_FEATURES[:3], "offered"]
    assert load_critic_model().to_json() == text


def test_platt_scaling_is_monotone():
    platt = Platt(2.0, -1.0)
    values = [platt.probability(p) for p in (0.1, 0.3, 0.5, 0.7, 0.9)]
    assert values == sorted(values) and all(0 < v < 1 for v in values)


def test_the_confidence_map_is_fitted_on_answerable_answers_of_both_kinds_only():
    from selfrag.fit.critic import KeptAnswer, confidence_map

    def answer(p: float, correct: bool, answerable: bool = True) -> KeptAnswer:
        return KeptAnswer(p, p, correct, answerable, p)

    mixed = [answer(p, p > 0.5) for p in (0.1, 0.2, 0.3, 0.6, 0.7, 0.45, 0.55, 0.9)]
    fitted = confidence_map(mixed)
    assert fitted != Platt() and fitted.probability(0.9) > fitted.probability(0.1)
    assert confidence_map([answer(p, True) for p in (0.2, 0.8)]) == Platt()  # one class: nothing to fit
    assert confidence_map([*mixed, answer(0.99, False, answerable=False)]) == fitted  # unanswerable left out
    # answers right where the support is low and wrong where it is high: no map lowers the confidence as the
    # support grows; it is flattened to their share of right answers
    upside_down = [answer(p, p < 0.3) for p in (0.1, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95)]
    flat = confidence_map(upside_down)
    assert flat.a == 0 and flat.probability(0.1) == pytest.approx(flat.probability(0.95)) == pytest.approx(2 / 8)


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Dred Scott v. Sandford was decided in 1857. It was overturned.", 2),
        ("J. R. R. Tolkien wrote it. He was British.", 2),
        ("Dr. Smith met Mr. Jones in the U.S. Army. They talked.", 2),
        ("It cost 3.5 million. Then it rose. Then it fell.", 3),
    ],
)
def test_sentences_are_not_cut_at_initials_and_abbreviations(text, count):
    parts = evidence.sentences(text)
    assert len(parts) == count and " ".join(parts) == text


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        # a list item is its own sentence, its bullet or number taken off, whatever its punctuation
        (
            "Prices:\n- Day pass: $6.00.\n- Commuter: $15 per month",
            ["Prices:", "Day pass: $6.00.", "Commuter: $15 per month"],
        ),
        ("1. Unlock the bike.\n2) Ride it\n  * Return it", ["Unlock the bike.", "Ride it", "Return it"]),
        # a heading states nothing; a paragraph ends a sentence; a line broken inside one is joined
        (
            "# Fees\n\nUpdated: 2026-04-01\n\nThe fee is $15\nper day. It rises.",
            ["Updated: 2026-04-01", "The fee is $15 per day.", "It rises."],
        ),
        ("## Fees\nThe fee is $15. It rises.", ["The fee is $15.", "It rises."]),  # a heading with no blank line after
        # a bold lead-in is read as text; a table's rule is no sentence
        (
            "**In the app.** Download it.\n| Day | Hours |\n|---|---|",
            ["In the app.", "Download it.", "| Day | Hours |"],
        ),
        # Windows line ends read the same; what only looks like bold is left as written
        ("Fees.\r\n\r\nThe fee is $15.\r\n- Day pass: $6", ["Fees.", "The fee is $15.", "Day pass: $6"]),
        (
            "Run __init__.py with 2**10 and 3**4. **Done.** Next.",
            ["Run __init__.py with 2**10 and 3**4.", "Done.", "Next."],
        ),
        # a text of one line keeps what only looks like a list: HaluEval's "- May 7, 1762) was born ..."
        ("- May 7, 1762) was born in Miller Place. It grew.", ["- May 7, 1762) was born in Miller Place.", "It grew."]),
        ("815) is legislation. It passed.", ["815) is legislation.", "It passed."]),
    ],
)
def test_sentences_follow_a_texts_layout(text, parts):
    assert evidence.sentences(text) == parts


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        # the quote or bracket that closes round a sentence's end stays with it
        ('He said "Go." Then he left.', ['He said "Go."', "Then he left."]),
        ("It ended (in 1999.) Then it began.", ["It ended (in 1999.)", "Then it began."]),
        # curly quotes end a sentence as straight ones do
        (
            "He said \u201cGo.\u201d \u201cNow?\u201d she asked.",
            ["He said \u201cGo.\u201d", "\u201cNow?\u201d she asked."],
        ),
        # an initial inside quotes is still no end, and its quote is kept
        ('Kathleen Troia "K.T." McFarland is an official.', ['Kathleen Troia "K.T." McFarland is an official.']),
    ],
)
def test_a_sentence_keeps_the_quote_that_closes_it(text, parts):
    assert evidence.sentences(text) == parts


def test_a_yes_no_question_stated_as_a_statement_answers_it_and_asked_again_does_not():
    question = "Is Paris the capital of France?"
    assert filters.degeneracy(question, "Paris is the capital of France.", []) is None  # yes
    assert filters.degeneracy(question, "Paris is not the capital of France.", []) is None  # no
    assert filters.degeneracy(question, "Is Paris the capital of France?", []) == "restates_question"
    other = "When was the capital of France founded as a city?"  # not a yes/no question: restated, declined
    assert filters.degeneracy(other, "The capital of France was founded as a city.", []) == "restates_question"


FITTED = "We fitted bike demand on weather; are we missing factors?"


@pytest.mark.parametrize(
    ("question", "sentence", "flaw"),
    [
        # a yes/no question asked after a statement: a side taken in the question's own words answers it
        (FITTED, "Bike demand is not missing any factors.", None),
        (FITTED, "No, bike demand is missing no factors.", None),
        ("We fitted bike demand on weather: are we missing factors?", "Yes, bike demand is missing factors.", None),
        (
            "What is the late fee, and is there a deposit for a bike?",
            "There is no deposit for a bike or late fee.",
            None,
        ),
        # no side taken, or asked back: the question restated
        (FITTED, "Bike demand is missing factors.", "restates_question"),
        (FITTED, "Is bike demand not missing factors?", "restates_question"),
        # a denial answers a yes/no question only: asked what the fee is, "no fee for ..." restates it
        (
            "What is the late fee for a bike returned after 24 hours?",
            "There is no late fee for a bike returned after 24 hours.",
            "restates_question",
        ),
        # the question denies already: saying "not" again takes no side
        (
            "We fitted bike demand; are we not missing factors?",
            "Bike demand is not missing factors.",
            "restates_question",
        ),
    ],
)
def test_a_side_taken_on_a_yes_no_question_asked_inside_a_longer_one_answers_it(question, sentence, flaw):
    assert filters.degeneracy(question, sentence, []) == flaw
    # the whole question a yes/no one: any statement answers it, as before
    assert filters.degeneracy("Are we missing factors?", "We are not missing any factors.", []) is None


@pytest.mark.parametrize(
    ("question", "yes_no"),
    [
        ("Are Ben Okri and Nicholas Evans both novelists?", True),
        ("Is Paris the capital of France?", True),
        ("Was Summit or Crosstrack created in the 20th century?", False),  # a choice
        ("Will Penny was a western starring the actor of what nationality?", False),  # a title, then a value
        ("Do You Believe?, released in which year, is a drama film.", False),
        ("Who directed Jaws?", False),
        ("Is the man who directed Jaws American?", True),  # a relative clause asks for nothing
        ("Am I allowed to open the battery case?", True),
        # a condition or a setting first, then the question asked of someone or something
        ("If my account is suspended, do I still get to vote?", True),
        ("If the station is full when I arrive, do I get extra time?", True),  # "when" inside the condition
        ("On a Household plan, can each of us have a bike out?", True),
        ("In January, can I take a bike at 05:30?", True),
        ("I joined two weeks ago - can I take an e-bike yet?", True),
        ("If the station is full, which one do I go to?", False),  # asks which
        ("If I return it late, how much is the fee?", False),
        ("Extras, is a British sitcom created by whom?", False),  # HaluEval: a statement asking a value
        ("Jinchang and Liling, are located in which country?", False),
        ("In September 1939, General Keller commanded the invasion of which country, was a German general?", False),
    ],
)
def test_a_yes_no_question_opens_with_a_verb_and_asks_for_no_value_or_choice(question, yes_no):
    assert evidence.asks_yes_no(question) is yes_no


def test_a_rate_beats_a_coin_only_beyond_what_chance_gives_that_many_answers():
    assert not beats_a_coin(13, 20) and beats_a_coin(14, 20)  # a coin throws 13 heads of 20 or more one time in 8
    assert not beats_a_coin(58, 100) and beats_a_coin(59, 100)  # more answers, a narrower margin
    assert not beats_a_coin(0, 0) and beats_a_coin(20, 20)


def test_an_answers_confidence_reads_its_words_and_support_where_the_weights_have_an_answered_head():
    base = CriticModel(Head((0.0,) * len(FEATURES), 0.0), Head((0.0,) * len(FEATURES), 0.0), Platt(2.0, -1.0))
    mapped = base.answer_confidence([0.3, 0.5], [0.2, 0.4], 12)  # no head: the map of the mean P(supported)
    assert mapped == pytest.approx(base.confidence.probability(0.4))
    assert base.answer_confidence([], [], 0) == 0.0  # no rated sentence: nothing to be sure of
    model = replace(base, answered=Head((0.0, 4.0, 1.0), -4.0))
    short, long = (model.answer_confidence([0.3, 0.5], [0.2, 0.4], words) for words in (3, 30))
    assert short == pytest.approx(1 / (1 + math.exp(-(4.0 * 0.3 + math.log1p(3) - 4.0)))) and long > short
    assert model.answer_confidence([0.3, 0.5], [0.2], 30) == mapped  # a sentence without its support: the map
    assert parse_critic_model(model.to_json(), "again") == model  # the head round-trips through the file
    assert "answered" not in json.loads(base.to_json())


def test_fitting_the_answered_head_refuses_too_few_answers_one_class_and_bad_inputs():
    model = CriticModel(Head((0.0,) * len(FEATURES), 0.0), Head((0.0,) * len(FEATURES), 0.0))
    answers = [([0.5, 0.6, 2.5], True), ([0.5, 0.1, 1.0], False)] * 10
    fitted, n, right = fit_answered(model, answers, "toy runs")
    assert (n, right) == (20, 10) and fitted.fitted_on["answered"].startswith("toy runs: 20 answers, 10 right, L2 ")
    assert fitted.answer_confidence([0.5], [0.6], 11) > 0.5 > fitted.answer_confidence([0.5], [0.1], 1)
    for bad, message in (
        (answers[:18], "18 answers are too few"),
        ([a for a in answers if a[1]] * 2, "every one of the 20 answers is right"),
        ([([0.5, 0.6], y) for _, y in answers], "3 finite inputs"),
        ([([0.5, math.nan, 1.0], y) for _, y in answers], "3 finite inputs"),
    ):
        with pytest.raises(InputError, match=message):
            fit_answered(model, bad)


def test_the_answered_head_is_flattened_to_the_right_rate_where_its_inputs_rank_no_held_out_answer():
    """Inputs unrelated to being right: the chosen regularisation gives nearly one confidence, the right rate;
    inputs that tell right from wrong keep their spread (a fixed light regularisation would spread both)."""
    rng = random.Random(7)
    model = CriticModel(Head((0.0,) * len(FEATURES), 0.0), Head((0.0,) * len(FEATURES), 0.0))
    noise = [([rng.random(), rng.random(), rng.uniform(1, 4)], rng.random() < 0.4) for _ in range(120)]
    right = sum(y for _, y in noise) / len(noise)
    flat = fit_answered(model, noise)[0]
    said = [flat.answer_confidence([v[0]], [v[1]], round(math.expm1(v[2]))) for v, _ in noise]
    assert max(said) - min(said) < 0.02 and abs(sum(said) / len(said) - right) < 0.02
    assert flat.fitted_on["answered"].endswith("L2 1000")
    light = replace(
        flat, answered=fit_logistic(np.array([v for v, _ in noise]), np.array([float(y) for _, y in noise]))
    )
    spread = [light.answer_confidence([v[0]], [v[1]], round(math.expm1(v[2]))) for v, _ in noise]
    assert max(spread) - min(spread) > 0.15  # what the fixed regularisation said of the same noise
    told = []
    for _ in range(120):
        support = rng.random()
        told.append(([rng.random(), support, rng.uniform(1, 4)], rng.random() < (0.85 if support > 0.5 else 0.15)))
    kept = fit_answered(model, told)[0]
    said = [kept.answer_confidence([v[0]], [v[1]], round(math.expm1(v[2]))) for v, _ in told]
    assert max(said) - min(said) > 0.5
    assert not kept.fitted_on["answered"].endswith("L2 1000")


def test_a_short_question_asked_back_restates_it_and_a_short_answer_does_not():
    assert filters.degeneracy("Where is the repair workshop?", "Where is the repair workshop?", []) == (
        "restates_question"
    )
    assert filters.degeneracy("Is it free?", "Is it free?", []) == "restates_question"
    assert filters.degeneracy("Where is the repair workshop?", "At the Depot?", []) is None  # new words: an answer
    assert filters.degeneracy("Where is the repair workshop?", "The repair workshop.", []) is None  # short, stated
    assert filters.degeneracy("Is it free?", "Yes.", []) is None
