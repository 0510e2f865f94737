"""The diagnostic oracle critic, the training split, and judged rows from a run (scripted model, tiny data)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from helpers import fused

from selfrag.bench import datasets as ds
from selfrag.bench.judgments import rows_from_records
from selfrag.bench.runner import RunOptions, run_benchmark
from selfrag.bench.systems import BENCH_DEFAULTS, parse_system
from selfrag.config import Config
from selfrag.errors import ConfigError, InputError
from selfrag.testing import ScriptedChatModel

from .fixtures import CAPITALS, hotpot_questions, write_climate, write_halueval, write_hotpot, write_jsonl


def _write(request):
    """The model writes, from every chunk, that the chunk's city is the answer, and calls it fully supported."""
    doc = request.messages[1].content.split("<document", 1)[1]
    city = next(c for c in CAPITALS if f'id="{c}#0' in doc)
    return fused(f"{city} is the capital.", evidence=f"{city} is the capital", is_final=True)


SCRIPT = {"retrieve_decide": {"retrieve": "yes", "query": "capital"}, "generate_fused": _write}


def oracle_run(tmp_path, system, **extra):
    data = write_hotpot(tmp_path / "data")
    options = RunOptions(
        "hotpotqa_smoke", system, Config(**{**BENCH_DEFAULTS, "ndocs": 6}), data_path=str(data),
        out=tmp_path / "runs", progress=False, environ={}, **extra,
    )  # fmt: skip
    report = run_benchmark(options, chat=ScriptedChatModel(SCRIPT))
    return report, [json.loads(line) for line in (report.run_dir / "samples.jsonl").read_text().splitlines()]


def test_a_perfect_oracle_keeps_the_gold_candidate_and_a_coin_does_not_always(tmp_path):
    oracle, records = oracle_run(tmp_path, "selfrag+oracle0")
    assert oracle.summary["metrics"]["correct"]["value"] == 1.0
    assert all(len(r["candidates"]) > 1 for r in records)  # it chose among several chunks
    coin, _ = oracle_run(tmp_path, "selfrag+oracle0.5")
    assert coin.summary["metrics"]["correct"]["value"] < 1.0
    assert oracle.run_dir != coin.run_dir


def test_oracle_labels_round_trip_and_need_a_qa_dataset(tmp_path):
    system = parse_system("selfrag+oracle0.25", Config())
    assert system.oracle_flip == 0.25 and system.label == "selfrag+oracle0.25"
    assert parse_system(system.label, Config()).describe() == system.describe()
    cut = parse_system("selfrag+evidence+abstain0", Config())
    assert cut.config.abstain_below == 0.0 and cut.label == "selfrag+evidence+abstain0"
    with pytest.raises(ConfigError, match="from 0 to 1"):
        parse_system("selfrag+oracle1.5", Config())
    climate = write_climate(tmp_path / "climate")
    options = RunOptions("climate_fever", "selfrag+oracle0", Config(), data_path=str(climate), out=tmp_path / "r")
    with pytest.raises(ConfigError, match="QA dataset"):
        run_benchmark(options, chat=ScriptedChatModel({}))


def test_the_training_split_never_meets_a_reported_sample(tmp_path):
    halu = write_halueval(tmp_path / "halu")
    everything = ds.load("halueval", halu)
    train = ds.load("halueval", halu, split="train")
    assert not train.examples  # seven examples all sit inside the test pool of 500
    assert len(everything.examples) == 7
    with pytest.raises(InputError, match="no training split"):
        ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "hp"), split="train")
    with pytest.raises(InputError, match="unknown split"):
        ds.load("halueval", halu, split="dev")


def test_training_never_holds_a_question_another_dataset_reports_and_its_samples_stay_put(tmp_path):
    rows = [
        {"knowledge": f"Town {n} has {n} bridges.", "question": f"How many bridges does Town {n} have?",
         "right_answer": str(n), "hallucinated_answer": str(n + 1)}
        for n in range(560)
    ]  # fmt: skip
    lone = tmp_path / "lone" / "halueval_qa"  # no HotpotQA beside it: nothing to withhold
    lone.mkdir(parents=True)
    write_jsonl(lone / "qa.jsonl", rows)
    before = ds.load("halueval", lone, split="train")
    assert len(before.examples) == 60 and "no hotpotqa_smoke beside" in before.notes[-1]
    asked = [row["question"] for row in rows]
    twins = [q for q in asked if q in {e.question for e in before.examples}][:7:3]  # three training questions
    halu = tmp_path / "both" / "halueval_qa"
    halu.mkdir(parents=True)
    write_jsonl(halu / "qa.jsonl", rows)
    hotpot = [
        dict(q, question=twin.upper().replace(" ", "  "))  # written otherwise, asked the same
        for q, twin in zip(hotpot_questions()[:3], twins, strict=True)
    ]
    write_hotpot(tmp_path / "both" / "hotpotqa_smoke", hotpot)
    train = ds.load("halueval", halu, split="train")
    assert len(train.examples) == 57 and not {e.question for e in train.examples} & set(twins)
    assert "3 question(s) another dataset reports withheld" in train.notes[-1]
    assert len(train.sample(None, 0).examples) == 57
    for seed in range(4):  # the seeded samples are the ones drawn before, less the withheld questions
        old = [e.question for e in before.sample(20, seed).examples]
        assert [e.question for e in train.sample(20, seed).examples] == [q for q in old if q not in twins]
    everything = ds.load("halueval", halu)
    assert len(everything.examples) == 560  # a reported sample is drawn as before


def test_judged_rows_from_a_run_carry_the_engines_features_and_gold(tmp_path):
    _, records = oracle_run(tmp_path, "selfrag")
    chunks = ds.load("hotpotqa_smoke", tmp_path / "data").chunk_texts()
    rows = rows_from_records(records, chunks)
    assert len(rows) == sum(len(r["candidates"]) for r in records)
    gold = [row for row in rows if row.relevant]
    assert gold and all(row.supported and row.correct for row in gold)
    assert all(not row.supported for row in rows if not row.relevant)
    assert {row.rank for row in rows} == set(range(6)) and all(len(row.others) == 5 for row in rows)
    assert all(row.answerable for row in rows)
    unanswerable = rows_from_records(records, chunks, answerable=False)
    assert [replace(row, answerable=True) for row in unanswerable] == rows and not unanswerable[0].answerable
    assert not any(row.declined for row in rows)
    flagged = [{**r, "candidates": [{**c, "flag": "about_the_document"} for c in r["candidates"]]} for r in records]
    assert all(row.declined for row in rows_from_records(flagged, chunks))  # never an answer, still a row
    # the engine counts agreement against sentences written from other chunks alone: not a chunk's extracted
    # sentence, not a pooled one, not one drawn from the same chunks; a sentence drawing on two chunks is rated
    # against both, with the better rank
    first = records[0]["candidates"]
    marked = [{**first[0], "extracted": True}, {**first[1], "pooled": True}, *first[2:4],
              {**first[4], "also": [first[2]["chunk"]]}, first[5]]  # fmt: skip
    rows = rows_from_records([{**records[0], "candidates": marked}], chunks)
    assert [row.extracted for row in rows] == [True] + [False] * 5
    assert rows[3].others == tuple(c["text"] for c in (marked[2], marked[4], marked[5]))
    assert rows[4].others == (marked[3]["text"], marked[5]["text"])
    assert rows[4].chunk == f"{chunks[first[4]['chunk']].text}\n\n{chunks[first[2]['chunk']].text}"
    assert (rows[4].rank, rows[4].score_rel) == (rows[2].rank, rows[2].score_rel) and rows[4].rank < first[4]["rank"]


def test_the_unanswerable_variant_takes_the_gold_out_of_the_corpus(tmp_path):
    hotpot = ds.load("hotpotqa_smoke", write_hotpot(tmp_path / "data"))
    emptied = hotpot.without_gold()
    assert not {key for e in hotpot.examples for key in e.gold_chunks} & {c.key for c in emptied.corpus}
    with pytest.raises(InputError, match="QA dataset"):
        ds.load("climate_fever", write_climate(tmp_path / "climate")).without_gold()
    # a critic that believes only what the chunk backs: with the gold gone, nothing is supported
    report, records = oracle_run(tmp_path, "selfrag+oracle0", unanswerable=True, limit=3)
    assert report.summary["metrics"]["correct"]["value"] == 0.0
    assert all(r["gold_chunks"][0] not in r["retrieved"] for r in records)


def _flat_weights(path, p_supported: float, *, verdict: float, abstain: float):
    """Critic weights that give every statement the same P(supported), with a verdict cut apart from the
    abstention cut."""
    import math

    from selfrag.engine.calibration import CriticModel, Head
    from selfrag.engine.evidence import FEATURES

    flat = (0.0,) * len(FEATURES)
    bias = math.log(p_supported / (1 - p_supported))
    model = CriticModel(Head(flat, 0.0), Head(flat, bias), support_threshold=verdict, abstain_threshold=abstain)
    path.write_text(model.to_json())
    return str(path)


def test_critic_agreement_judges_statements_with_the_verdict_cut_not_the_abstention_cut(tmp_path):
    critique = {"relevance": "relevant", "evidence": "", "support": "fully", "utility": 4, "is_final": True,
                "retrieve_next": "no", "next_query": ""}  # fmt: skip
    halu = write_halueval(tmp_path / "halu")

    def verdicts(weights):
        config = Config(**{**BENCH_DEFAULTS, "scorer_weights": weights})
        options = RunOptions("halueval", "critic+evidence", config, data_path=str(halu), out=tmp_path / "runs",
                             progress=False, environ={})  # fmt: skip
        report = run_benchmark(options, chat=ScriptedChatModel({"critique_candidate": critique}))
        records = [json.loads(line) for line in (report.run_dir / "samples.jsonl").read_text().splitlines()]
        return {p["supported"] for r in records for p in r["pairs"]}, report.summary

    # P(supported) 0.3 is over the abstention cut (0.2) and under the verdict cut (0.5): not supported
    below, summary = verdicts(_flat_weights(tmp_path / "a.json", 0.3, verdict=0.5, abstain=0.2))
    assert below == {False}
    assert summary["critic"]["confusion"]["tp"] == 0 and summary["critic"]["confusion"]["fp"] == 0
    over, _ = verdicts(_flat_weights(tmp_path / "b.json", 0.3, verdict=0.25, abstain=0.29))
    assert over == {True}
