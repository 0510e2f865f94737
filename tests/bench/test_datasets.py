"""Loaders on small fixture files: typed examples, gold ids, corpus; duplicate and missing ids refused."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

import pytest

from selfrag.bench import datasets as ds
from selfrag.errors import InputError

from .fixtures import hotpot_questions, write_climate, write_halueval, write_hotpot, write_jsonl, write_scifact


def test_hotpot_loader(tmp_path):
    data = ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h"))
    assert data.task == "qa" and len(data.examples) == 6 and len(data.corpus) == 6
    first = data.examples[0]
    assert first.id == "q0" and first.answers == ("Paris",)
    assert first.gold_chunks == ("Paris#0",) and first.gold_sentences == ("Paris#0/0",)
    assert data.sentences["Paris#0"][1] == "The Eiffel Tower stands in Paris."
    assert len(data.sha256) == 64 and set(data.files) == {"questions.json", "corpus.json"}


def test_scifact_loader_keeps_labels_cited_documents_and_in_range_rationales(tmp_path):
    data = ds.load("scifact", write_scifact(tmp_path / "s"))
    assert data.task == "claim" and data.labels == ("SUPPORT", "CONTRADICT", "NEI")
    one, two, three = data.examples
    assert one.label == "SUPPORT" and one.gold_chunks == ("d0#0",)
    assert one.gold_sentences == ("d0#0/0",)  # sentence 9 is out of range: dropped
    assert two.label == "CONTRADICT" and three.gold_sentences == ()


def test_climate_loader_drops_disputed_and_maps_labels(tmp_path):
    data = ds.load("climate_fever", write_climate(tmp_path / "c"))
    assert [e.label for e in data.examples] == ["SUPPORT", "CONTRADICT"]
    assert data.examples[0].gold_chunks == ("Paris:0#0",)
    assert [p.supported for p in data.examples[0].pairs] == [True, False]
    assert {c.key for c in data.corpus} == {"Paris:0#0", "Rome:0#0", "Madrid:0#0", "Vienna:1#0"}
    assert any("DISPUTED" in note for note in data.notes)


def test_halueval_loader_pools_distinct_snippets(tmp_path):
    data = ds.load("halueval", write_halueval(tmp_path / "e"))
    assert len(data.examples) == 7 and len(data.corpus) == 6  # the last question reuses the first snippet
    assert data.examples[0].id == "0" and data.examples[6].gold_chunks == data.examples[0].gold_chunks
    right, wrong = data.examples[0].pairs
    assert right.supported and not wrong.supported and wrong.statement == "Zurich"


def test_halueval_hops_cuts_a_snippet_where_one_document_runs_into_the_next(tmp_path):
    folder = tmp_path / "e"
    folder.mkdir()
    glued = (
        "Arthur's Magazine (1844–1846) was an American periodical.First for Women is published by Bauer Media. "
        'It began in 1989."Kiss and Tell" is a 1945 film.It stars S.A. Smith.'
    )
    rows = [
        {"knowledge": glued, "question": "Which magazine was started first?", "right_answer": "Arthur's Magazine",
         "hallucinated_answer": "First for Women"},
        {"knowledge": "One document only. Two sentences.", "question": "What?", "right_answer": "a",
         "hallucinated_answer": "b"},
        {"knowledge": "First for Women is published by Bauer Media. It began in 1989.Another one.", "question": "Who?",
         "right_answer": "Bauer", "hallucinated_answer": "c"},
    ]  # fmt: skip
    write_jsonl(folder / "qa.jsonl", rows)
    data = ds.load("halueval_hops", folder)
    one, two, three = data.examples
    assert [data.sentences[key][0] for key in one.gold_chunks] == [
        "Arthur's Magazine (1844–1846) was an American periodical.",
        "First for Women is published by Bauer Media. It began in 1989.",
        '"Kiss and Tell" is a 1945 film.',
        "It stars S.A. Smith.",  # a capital after an initial's stop is no new document
    ]
    assert len(two.gold_chunks) == 1 and data.sentences[two.gold_chunks[0]] == ("One document only. Two sentences.",)
    assert three.gold_chunks[0] == one.gold_chunks[1]  # a part two snippets share is one chunk
    assert len(data.corpus) == 6 and len({chunk.key for chunk in data.corpus}) == 6
    assert one.pairs == () and one.answers == ("Arthur's Magazine",)
    whole = ds.load("halueval", folder)
    assert [e.id for e in data.examples] == [e.id for e in whole.examples]


def test_stale_copies_conflict_with_the_gold_snippet_and_are_not_gold(tmp_path):
    data = ds.load("halueval", write_halueval(tmp_path / "e")).sample(2, 0)
    grown = data.with_stale_copies(3)
    gold = {key for example in grown.examples for key in example.gold_chunks}
    copies = [chunk for chunk in grown.corpus if chunk.key not in {c.key for c in data.corpus}]
    assert len(copies) == 3 * len({e.gold_chunks[0] for e in data.examples})
    assert not gold & {chunk.key for chunk in copies} and len({chunk.key for chunk in copies}) == len(copies)
    for example in grown.examples:
        right = example.answers[0]
        mine = [c for c in copies if c.doc_id.startswith(example.gold_chunks[0].split("#")[0] + "-stale")]
        assert mine and all(right not in c.text and c.text.endswith("Zurich") for c in mine)
    assert data.with_stale_copies(0).corpus == data.corpus
    with pytest.raises(InputError, match="HaluEval"):
        ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h")).with_stale_copies(1)


def test_dated_stale_copies_are_older_than_their_gold_snippet_and_yield_to_it(tmp_path):
    from selfrag.retrieval import Retriever
    from selfrag.retrieval.index import Index
    from selfrag.retrieval.supersession import corpus_versions

    folder = tmp_path / "e"
    folder.mkdir()
    places = {
        ("Rome", "Italy"): "The Colosseum, the Forum and the Pantheon draw visitors from every continent all year.",
        ("Lisbon", "Portugal"): "Yellow trams climb steep hills above the river where old ships once sailed out.",
        ("Vienna", "Austria"): "Coffee houses, waltzes at the opera ball and a giant wheel in the Prater park.",
    }
    write_jsonl(folder / "qa.jsonl", [
        {"knowledge": f"{city} is the capital of {country}. {more}", "question": f"What is the capital of {country}?",
         "right_answer": city, "hallucinated_answer": "Zurich"}
        for (city, country), more in places.items()
    ])  # fmt: skip
    data = ds.load("halueval", folder).sample(2, 0)
    grown = data.with_stale_copies(3, dated=True)
    assert [c.text for c in grown.corpus] == [c.text for c in data.with_stale_copies(3).corpus]  # only dates differ
    dates = {c.doc_id: c.date for c in grown.corpus}
    for example in grown.examples:
        doc = example.gold_chunks[0].split("#")[0]
        assert dates[doc] == ds.STALE_GOLD_DATE
        assert [dates[f"{doc}-stale{n}"] for n in (1, 2, 3)] == ["2025-01-01", "2024-01-01", "2023-01-01"]
    versions = corpus_versions(grown.corpus, dt.date(2026, 11, 24))
    retriever = Retriever(Index.build(grown.corpus), versions=versions)
    plain = Index.build(grown.corpus)
    example = grown.examples[0]
    gold_doc = example.gold_chunks[0].split("#")[0]
    assert versions.superseded_by(f"{gold_doc}-stale1") == (gold_doc,)
    stale_first = plain.find_relevant_chunks(example.question, 4)
    hits = retriever.find_relevant_chunks(example.question, 4)
    assert any(h.chunk.doc_id.startswith(f"{gold_doc}-stale") for h in stale_first)
    assert hits[0].chunk.doc_id == gold_doc and hits[0].chunk.version.current


@pytest.mark.parametrize("bad_id", [None, "", 7])
def test_missing_or_non_string_ids_are_refused(tmp_path, bad_id):
    questions = hotpot_questions()
    questions[2]["_id"] = bad_id
    with pytest.raises(InputError, match="missing or non-string id"):
        ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h", questions))


def test_duplicate_ids_are_refused_in_every_loader(tmp_path):
    questions = hotpot_questions()
    questions[3]["_id"] = "q1"
    with pytest.raises(InputError, match="'q1' appears twice"):
        ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h", questions))
    folder = write_scifact(tmp_path / "s")
    claims = [json.loads(line) for line in (folder / "claims_test.jsonl").read_text().splitlines()]
    write_jsonl(folder / "claims_test.jsonl", [*claims, claims[0]])
    with pytest.raises(InputError, match="appears twice"):
        ds.load("scifact", folder)
    rows = [
        json.loads(line) for line in (write_climate(tmp_path / "c") / "climate-fever.jsonl").read_text().splitlines()
    ]
    write_jsonl(tmp_path / "c" / "climate-fever.jsonl", [*rows, rows[1]])
    with pytest.raises(InputError, match="appears twice"):
        ds.load("climate_fever", tmp_path / "c")


def test_a_missing_field_or_folder_is_a_clear_error(tmp_path):
    folder = write_halueval(tmp_path / "e")
    write_jsonl(folder / "qa.jsonl", [{"knowledge": "k", "question": "q?", "right_answer": "a"}])
    with pytest.raises(InputError, match="line 1: field 'hallucinated_answer'"):
        ds.load("halueval", folder)
    with pytest.raises(InputError, match="does not exist"):
        ds.load("scifact", tmp_path / "nowhere")
    with pytest.raises(InputError, match="unknown dataset"):
        ds.load("squad", tmp_path)


def test_seeded_samples_are_deterministic_nested_and_in_file_order(tmp_path):
    data = ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h"))
    three = [e.id for e in data.sample(3, seed=5).examples]
    assert three == [e.id for e in data.sample(3, seed=5).examples]
    assert set(three) <= {e.id for e in data.sample(5, seed=5).examples}
    assert three == sorted(three, key=lambda i: int(i[1:]))
    assert data.sample(None, 0) is data and data.sample(99, 0) is data
    with pytest.raises(InputError):
        data.sample(0, 0)


def test_corpus_cut_keeps_every_gold_chunk(tmp_path):
    data = ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h")).sample(2, seed=1)
    cut = data.with_corpus_size(4, seed=0)
    gold = {k for e in data.examples for k in e.gold_chunks}
    assert len(cut.corpus) == 4 and gold <= {c.key for c in cut.corpus}
    with pytest.raises(InputError, match="below"):
        data.with_corpus_size(1, seed=0)


def test_a_sample_of_one_kind_draws_among_those_questions_only(tmp_path):
    data = ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "h"))
    yes_no = replace(data.examples[0], id="yn", question="Are Paris and Rome both capitals?")
    asked = replace(data, examples=(*data.examples, yes_no))
    only = asked.of_kind("yes_no")
    assert [e.id for e in only.examples] == ["yn"] and only.total == 1 and only.corpus == asked.corpus
    assert asked.of_kind(None) is asked
    with pytest.raises(InputError, match="no choice question"):
        data.of_kind("choice")
    with pytest.raises(InputError, match="needs a QA dataset"):
        ds.load("scifact", write_scifact(tmp_path / "s")).of_kind("yes_no")
