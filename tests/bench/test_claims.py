"""The closed-set protocol: each chunk's verdict scored f, f summed per label across chunks, best sum wins."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace

import pytest
from helpers import by_document

from selfrag import Chunk, Config
from selfrag.bench import claims
from selfrag.bench import datasets as ds
from selfrag.bench.systems import BenchPrompts, Context, System
from selfrag.testing import ListRetriever, ScriptedChatModel

from .fixtures import CAPITALS, write_climate, write_jsonl, write_scifact

CHUNKS = [
    Chunk("a", 0, "Paris is the capital of France and its largest city."),
    Chunk("b", 0, "Some say the capital of France moved to Lyon."),
    Chunk("c", 0, "Lyon claims to be the capital of France."),
]


def verdict(label, support="fully", utility=5, relevance="relevant", evidence=None, text=""):
    return {"relevance": relevance, "label": label, "evidence": text if evidence is None else evidence,
            "support": support, "utility": utility}  # fmt: skip


def context(tmp_path, chat):
    data = ds.load("scifact", write_scifact(tmp_path / "s"))
    return Context(data, ListRetriever(CHUNKS), {c.key: c for c in CHUNKS}, BenchPrompts(), chat)


SCRIPT = {
    "retrieve_decide": {"retrieve": "yes", "query": "capital of France"},
    "verify_claim": by_document(
        {
            "a": verdict("supports", "fully", 5, text="Paris is the capital of France"),  # f = 1 + 1 + 0.5 = 2.5
            "b": verdict("refutes", "partially", 3, text="capital of France moved to Lyon"),  # f = 1 + 0.5 + 0 = 1.5
            "c": verdict("refutes", "partially", 3, text="Lyon claims to be the capital"),  # f = 1.5
        }
    ),
}


def test_label_sums_and_ties_by_hand():
    candidates = [{"label": "SUPPORT", "f": 2.5}, {"label": "CONTRADICT", "f": 1.5}, {"label": "CONTRADICT", "f": 1.0}]
    sums = claims.label_sums(candidates)
    assert sums == {"SUPPORT": 2.5, "CONTRADICT": 2.5, "NEI": 0.0}
    assert claims.pick_label(sums, candidates) == "CONTRADICT"  # tie on the sum: more votes wins
    one_each = [{"label": "NEI", "f": 1.0}, {"label": "SUPPORT", "f": 1.0}]
    assert claims.pick_label(claims.label_sums(one_each), one_each) == "SUPPORT"  # then label order
    negative = [{"label": "NEI", "f": -0.5}]
    assert claims.pick_label(claims.label_sums(negative), negative) == "NEI"  # an unvoted 0 never wins


def test_summed_scores_beat_the_single_best_candidate(tmp_path):
    chat = ScriptedChatModel(SCRIPT)
    system = System("selfrag", Config(nonce_seed="t", ndocs=3))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label_scores == {"SUPPORT": 2.5, "CONTRADICT": 3.0, "NEI": 0.0}
    assert outcome.label == "CONTRADICT"
    assert outcome.citations == ["b#0", "c#0"]  # the chunks that voted for the winner
    assert outcome.confidence == pytest.approx(0.5)  # mean s_sup of the voters (partially = 0.5)
    assert outcome.usage["llm_calls"] == 4 and outcome.retrieved == ["a#0", "b#0", "c#0"]


def test_weights_enter_the_sum(tmp_path):
    chat = ScriptedChatModel(SCRIPT)
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, w_rel=0.0, w_sup=3.0, w_use=0.0, mode="always"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label_scores == {"SUPPORT": 3.0, "CONTRADICT": 3.0, "NEI": 0.0}
    assert outcome.label == "CONTRADICT"  # tie on the sum, two votes against one
    assert chat.calls_to("retrieve_decide") == []  # mode always skips the decision


def test_an_unbacked_quote_downgrades_support_before_scoring(tmp_path):
    script = dict(SCRIPT, verify_claim=by_document({
        "a": verdict("supports", "fully", 5, evidence="Paris has two moons"),  # quote not in the chunk
        "b": verdict("refutes", "no", 1), "c": verdict("nei", "no", 1, relevance="irrelevant")}))  # fmt: skip
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, mode="always"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, ScriptedChatModel(script))))
    supports = next(s for s in outcome.segments if s["chunk"] == "a#0")
    assert supports["support"] == "partially" and supports["quote_ok"] is False
    assert supports["f"] == pytest.approx(1 + 0.5 + 0.5)
    assert outcome.label == "SUPPORT"


def test_adaptive_no_answers_without_documents(tmp_path):
    chat = ScriptedChatModel({"retrieve_decide": {"retrieve": "no", "query": ""},
                              "verify_claim_direct": {"label": "refutes"}})  # fmt: skip
    system = System("selfrag", Config(nonce_seed="t"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    assert outcome.label == "CONTRADICT" and outcome.usage["retrieval_frequency"] == 0.0
    assert outcome.retrieved is None and outcome.confidence is None


def test_separate_critic_judges_a_sentence_stating_the_verdict(tmp_path):
    critique = {"relevance": "relevant", "evidence": "", "support": "no", "utility": 2, "is_final": True,
                "retrieve_next": "no", "next_query": ""}  # fmt: skip
    chat = ScriptedChatModel(dict(SCRIPT, critique_candidate=critique))
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, mode="always", critic="separate"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    outcome = asyncio.run(claims.closed_set(system, example, context(tmp_path, chat)))
    sentences = sorted(
        call.messages[1].content.rsplit("Sentence to judge: ", 1)[1] for call in chat.calls_to("critique_candidate")
    )
    claim = example.question
    assert sentences == sorted([claim, f"It is not true that {claim}", f"It is not true that {claim}"])
    assert all(s["support"] == "no" for s in outcome.segments)


# -- the evidence-scored vote (selfrag+evidence on claims) -------------------------------------------------


def _rank_rater(bias: float, cut: float, platt=(1.0, 0.0)):
    """A claim scorer whose P(on topic) and P(settles) rise with the chunk's retrieval rank alone."""
    from selfrag.engine.calibration import CriticModel, EvidenceRater, Head, Platt
    from selfrag.engine.evidence import FEATURES

    weights = tuple(10.0 if name == "rank_inv" else 0.0 for name in FEATURES)
    head = Head(weights, bias)
    return EvidenceRater(CriticModel(head, head, Platt(*platt), 0.5, cut))


def test_settled_vote_sums_verdicts_by_weight_and_answers_nei_when_nothing_settles():
    rater = _rank_rater(0.0, cut=0.3)
    weak = [{"label": "SUPPORT", "settles": 0.1}, {"label": "CONTRADICT", "settles": 0.25}]
    assert claims.settled_vote(weak, rater) == ("NEI", pytest.approx(0.75), False)
    two_small = [{"label": "SUPPORT", "settles": 0.6}, {"label": "CONTRADICT", "settles": 0.35},
                 {"label": "CONTRADICT", "settles": 0.3}]  # fmt: skip
    assert claims.settled_vote(two_small, rater) == ("CONTRADICT", pytest.approx(0.6), True)
    nei_voted = [{"label": "NEI", "settles": 0.9}, {"label": "SUPPORT", "settles": 0.4}]
    assert claims.settled_vote(nei_voted, rater) == ("NEI", pytest.approx(0.1), True)


def test_evidence_scorer_lets_the_chunk_that_settles_the_claim_outvote_weaker_ones(tmp_path):
    # the paper's protocol sums f: two refuting chunks (1.5 + 1.5) beat one supporting chunk (2.5); weighted by
    # how well each chunk settles the claim (here: its rank), the top chunk's verdict wins
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, scorer="evidence"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    ctx = context(tmp_path, ScriptedChatModel(SCRIPT))
    ctx.rater = _rank_rater(-4.0, cut=0.3)
    outcome = asyncio.run(claims.closed_set(system, example, ctx))
    assert outcome.label == "SUPPORT" and outcome.citations == ["a#0"]
    assert [round(s["settles"], 3) for s in outcome.segments] == [0.995, 0.534, 0.115]
    assert outcome.confidence == pytest.approx(0.995, abs=1e-3)  # the identity map of the largest weight
    paper = asyncio.run(claims.closed_set(System("selfrag", Config(nonce_seed="t", ndocs=3)), example, ctx))
    assert paper.label == "CONTRADICT"


def test_evidence_scorer_answers_nei_when_no_chunk_settles_the_claim(tmp_path):
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, scorer="evidence"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    ctx = context(tmp_path, ScriptedChatModel(SCRIPT))
    ctx.rater = _rank_rater(-12.0, cut=0.3, platt=(2.0, -1.0))  # the top chunk's weight is about 0.12
    outcome = asyncio.run(claims.closed_set(system, example, ctx))
    assert outcome.label == "NEI" and outcome.stop_reason == "unsettled" and outcome.citations == []
    best = max(s["settles"] for s in outcome.segments)
    assert best < 0.3
    odds = 2.0 * math.log((1 - best) / best) - 1.0
    assert outcome.confidence == pytest.approx(1 / (1 + math.exp(-odds)), abs=1e-5)  # the map, fitted or given


def _polar_rater(cut: float = 0.3):
    """The rank rater with a polarity head that reads only whether the claim is negated."""
    from selfrag.engine.calibration import EvidenceRater, Head

    model = _rank_rater(-4.0, cut=cut).model
    return EvidenceRater(replace(model, refutes=Head((4.0, 0.0, 0.0, 0.0), -2.0)))


def test_a_polarity_head_gives_each_settling_chunk_its_verdict_and_keeps_the_writers(tmp_path):
    # the writer says a supports, b and c refute; the polarity head reads the claim's negation, not the writer
    system = System("selfrag", Config(nonce_seed="t", ndocs=3, scorer="evidence"))
    example = ds.load("scifact", write_scifact(tmp_path / "s")).examples[0]
    ctx = context(tmp_path, ScriptedChatModel(SCRIPT))
    ctx.rater = _polar_rater()
    plain = asyncio.run(claims.closed_set(system, example, ctx))
    assert plain.label == "SUPPORT" and plain.citations == ["a#0", "b#0", "c#0"]  # every chunk now votes SUPPORT
    assert [s["model_label"] for s in plain.segments] == ["SUPPORT", "CONTRADICT", "CONTRADICT"]
    assert all(s["p_refutes"] == pytest.approx(0.119203, abs=1e-6) for s in plain.segments)
    negated = replace(example, question="Paris is not the capital of France.")
    refuted = asyncio.run(claims.closed_set(system, negated, ctx))
    assert refuted.label == "CONTRADICT" and {s["label"] for s in refuted.segments} == {"CONTRADICT"}
    assert refuted.confidence == pytest.approx(max(s["settles"] for s in refuted.segments), abs=1e-6)
    ctx.rater = _polar_rater(cut=0.9999)  # nothing settles it: NEI, whatever the verdicts
    assert asyncio.run(claims.closed_set(system, negated, ctx)).label == "NEI"


def test_the_polarity_head_is_fitted_on_training_claims_settling_evidence(tmp_path):
    from selfrag.engine.evidence import polarity
    from selfrag.fit.claims import MIN_POLARITY_ROWS, fit_polarity

    def row(n: int, negated: bool, label: str) -> dict:
        city = list(CAPITALS)[n % len(CAPITALS)]
        claim = f"{city} is {'not ' if negated else ''}the capital of {CAPITALS[city]} ({n})"
        said = {"evidence_id": f"{city}:0", "evidence_label": label, "article": city, "evidence": f"{city} is the "
                f"capital of {CAPITALS[city]}.", "entropy": 0.0, "votes": [label]}  # fmt: skip
        other = dict(said, evidence_id=f"{city}:1", evidence_label="NOT_ENOUGH_INFO", evidence=f"{city} is old.")
        claim_label = "REFUTES" if label == "REFUTES" else "SUPPORTS"
        return {"claim_id": str(n), "claim": claim, "claim_label": claim_label, "evidences": [said, other]}

    rows = [row(n, n % 2 == 1, "REFUTES" if n % 2 else "SUPPORTS") for n in range(ds.TEST_POOL + 60)]
    train = ds.load("climate_fever", write_climate(tmp_path / "c", rows), split="train")
    head, seen = fit_polarity((train, example) for example in train.examples)
    assert seen == 60 and head is not None  # one settling sentence per training claim; the pool's 500 unseen
    negated, plain = "Rome is not the capital of Italy", "Rome is the capital of Italy"
    assert head.probability(polarity(negated, "Rome is the capital of Italy.")) > 0.5
    assert head.probability(polarity(plain, "Rome is the capital of Italy.")) < 0.5
    few, seen = fit_polarity((train, example) for example in train.examples[: 2 * MIN_POLARITY_ROWS - 2])
    assert few is None and seen == 2 * MIN_POLARITY_ROWS - 2  # under MIN_POLARITY_ROWS of each side


def test_the_polarity_head_is_kept_only_where_it_rights_more_training_claims():
    from selfrag.fit.claims import keep_polarity
    from selfrag.schema import Hit

    model = replace(_polar_rater(cut=0.1).model, fitted_on={"polarity_rows": 60})
    hits = [Hit(chunk, 1.0) for chunk in CHUNKS]
    segments = [{"chunk": c.key, "label": "SUPPORT", "s_rel": 1.0, "s_sup": 1.0, "quote_ok": None} for c in CHUNKS]

    def record(claim: str, gold: str) -> dict:
        return {"question": claim, "gold_label": gold, "segments": segments}

    # the writer says SUPPORT to both; the head says CONTRADICT to the negated claim
    refuted = [(record("Paris is not the capital of France.", "CONTRADICT"), hits),
               (record("Paris is the capital of France.", "SUPPORT"), hits)]  # fmt: skip
    kept, votes, line = keep_polarity(model, refuted)
    assert kept.refutes is model.refutes and "2 training claims right with it, 1 without" in line
    assert [right for _, right in votes] == [True, True]  # the votes the confidence map is fitted on: the head's
    supported = [(record("Paris is not the capital of Spain.", "SUPPORT"), hits)]  # the head makes it wrong
    kept, votes, line = keep_polarity(model, supported)
    assert kept.refutes is None and line == "polarity head left out (0 training claims right with it, 1 without)"
    assert [right for _, right in votes] == [True]
    # a record voted with the head before (a selfrag+evidence training run) carries the head's labels
    voted_with_head = claims.rate_candidates(_polar_rater(cut=0.1), refuted[0][0]["question"], segments, hits)
    assert {s["label"] for s in voted_with_head} == {"CONTRADICT"}
    again = [(record("Paris is not the capital of France.", "SUPPORT") | {"segments": voted_with_head}, hits)]
    assert [right for _, right in keep_polarity(model, again)[1]] == [True]  # without the head: the writer's SUPPORT
    tie = [(record("Paris is the capital of France.", "SUPPORT"), hits)]
    assert keep_polarity(model, tie)[0].refutes is None  # no better: the writer's verdict stands
    assert keep_polarity(model, [])[0].refutes is None


def _training_scifact(root):
    """A datasets folder whose SciFact train split has 18 claims: for every city one it supports, one it refutes, and
    one it says nothing about (NEI, the city's document cited without evidence)."""
    folder = write_scifact(root / "scifact")
    countries = list(CAPITALS.values())
    claims_ = []
    for i, (city, country) in enumerate(CAPITALS.items()):
        doc, other = f"d{i}", countries[(i + 1) % len(countries)]
        claims_ += [
            {"_id": f"s{i}", "text": f"{city} is the capital of {country}.", "label": "SUPPORT",
             "cited_doc_ids": [doc], "evidence": {doc: {"label": "SUPPORT", "sentences": [0]}}},
            {"_id": f"c{i}", "text": f"{city} is the capital of {other}.", "label": "CONTRADICT",
             "cited_doc_ids": [doc], "evidence": {doc: {"label": "CONTRADICT", "sentences": [0]}}},
            {"_id": f"n{i}", "text": f"{city} has many old cats.", "label": "NEI", "cited_doc_ids": [doc],
             "evidence": {}},
        ]  # fmt: skip
    write_jsonl(folder / "claims_train.jsonl", claims_)
    return root


def test_fit_claims_fits_the_claim_scorer_on_training_claims_and_refuses_what_it_cannot_fit(tmp_path, capsys):
    from selfrag.cli import main
    from selfrag.engine.calibration import CandidateView, EvidenceRater, load_critic_model

    folder = _training_scifact(tmp_path / "data") / "scifact"
    out = tmp_path / "w.json"
    assert main(["bench", "fit-claims", "--dataset", "scifact", "--data", str(folder), "--out", str(out)]) == 0
    model = load_critic_model(out)
    assert model.fitted_on["task"] == "claim" and model.fitted_on["claims"] == 18
    assert 0 < model.abstain_threshold < 1
    assert model.refutes is None and "no polarity head (12 settling chunks)" in capsys.readouterr().err  # 6 a side
    claim = "Paris is the capital of France."
    own, other = (
        CandidateView(claim, text, key, rank, score, None, 0.5, 0.5, ())
        for text, key, rank, score in (("Paris is the capital of France.", "d0#0", 0, 1.0),
                                       ("Lisbon is the capital of Portugal.", "d4#0", 3, 0.3))
    )  # fmt: skip
    settles = [
        r.p_relevant * r.p_supported for r in EvidenceRater(model).rate(claims.claim_question(claim), [own, other])
    ]
    assert settles[0] > model.abstain_threshold > settles[1]
    capsys.readouterr()

    few = tmp_path / "few.json"
    assert main(["bench", "fit-claims", "--dataset", "scifact", "--data", str(folder), "--ndocs", "1",
                 "--out", str(few)]) == 1  # fmt: skip
    assert "too few" in capsys.readouterr().err and not few.exists()
    with pytest.raises(SystemExit) as usage:
        main(["bench", "fit-claims", "--dataset", "halueval", "--out", str(few)])
    assert usage.value.code == 2 and "invalid choice" in capsys.readouterr().err
    test_run = tmp_path / "run"
    test_run.mkdir()
    (test_run / "config.json").write_text(json.dumps({"dataset": {"name": "scifact"}, "sample": {"size": 3}}))
    assert main(["bench", "fit-claims", str(test_run), "--dataset", "scifact", "--data", str(folder),
                 "--out", str(few)]) == 1  # fmt: skip
    assert "is not a benchmark run folder" in capsys.readouterr().err
    (test_run / "config.json").write_text(json.dumps({"dataset": {"name": "scifact"}, "sample": {"size": 3},
                                                      "system": {"kind": "selfrag"}}))  # fmt: skip
    (test_run / "samples.jsonl").write_text("")
    assert main(["bench", "fit-claims", str(test_run), "--dataset", "scifact", "--data", str(folder),
                 "--out", str(few)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "fit only on training ids" in err and len(err.strip().splitlines()) == 1 and not few.exists()


def test_a_benchmark_run_of_the_evidence_scorer_on_claims_uses_the_claim_weights(tmp_path):
    from selfrag.bench.cache import digest
    from selfrag.bench.runner import RunOptions, run_benchmark
    from selfrag.bench.systems import BENCH_DEFAULTS
    from selfrag.engine.calibration import load_critic_model

    data = write_scifact(tmp_path / "s")
    script = {"retrieve_decide": {"retrieve": "yes", "query": ""}, "verify_claim": verdict("supports")}
    options = RunOptions("scifact", "selfrag+evidence", Config(**BENCH_DEFAULTS), data_path=str(data),
                         out=tmp_path / "runs", progress=False, environ={})  # fmt: skip
    report = run_benchmark(options, chat=ScriptedChatModel(script))
    config = json.loads((report.run_dir / "config.json").read_text())
    assert config["critic_weights"] == digest(load_critic_model(None, claims.claim_weights("scifact")).to_json())
    records = [json.loads(line) for line in (report.run_dir / "samples.jsonl").read_text().splitlines()]
    assert all("settles" in s for r in records for s in r["segments"])
    assert {r["label"] for r in records} <= {"SUPPORT", "NEI"} and all(0 < r["confidence"] < 1 for r in records)


def test_the_critic_system_judges_climate_fever_sentences_with_its_claim_weights_and_their_polarity(tmp_path):
    """Gold pairs on CLIMATE-FEVER count only SUPPORTS sentences as supporting. The claim weights' P(settles)
    counts refuting ones too, but with their polarity head a settling sentence that refutes is not supporting,
    so the critic system reads the claim weights there, as a run given them by path does."""
    from importlib import resources

    from selfrag.bench.cache import digest
    from selfrag.bench.runner import RunOptions, run_benchmark
    from selfrag.bench.systems import BENCH_DEFAULTS
    from selfrag.engine.calibration import SHIPPED, load_critic_model

    data = write_climate(tmp_path / "c")
    critique = {"relevance": "relevant", "evidence": "", "support": "fully", "utility": 4, "is_final": True,
                "retrieve_next": "no", "next_query": ""}  # fmt: skip

    def run(weights, out):
        config = Config(**{**BENCH_DEFAULTS, "scorer_weights": weights})
        options = RunOptions("climate_fever", "critic+evidence", config, data_path=str(data), out=tmp_path / out,
                             progress=False, environ={})  # fmt: skip
        report = run_benchmark(options, chat=ScriptedChatModel({"critique_candidate": critique}))
        records = [json.loads(line) for line in (report.run_dir / "samples.jsonl").read_text().splitlines()]
        config = json.loads((report.run_dir / "config.json").read_text())
        return [(p["p_supported"], p["supported"]) for r in records for p in r["pairs"]], config["critic_weights"]

    shipped, weights = run(None, "a")
    claim_model = load_critic_model(None, claims.claim_weights("climate_fever"))
    claim_file = tmp_path / "claims.json"
    claim_file.write_text(claim_model.to_json())
    given, _ = run(str(claim_file), "b")
    qa_file = tmp_path / "qa.json"
    qa_file.write_text(resources.files("selfrag").joinpath("data", SHIPPED).read_text(encoding="utf-8"))
    supported_only, _ = run(str(qa_file), "c")
    assert weights == digest(claim_model.to_json())
    assert shipped == given and shipped != supported_only


def test_fit_claims_maps_confidence_from_a_training_run_revoted_with_the_new_heads(tmp_path, capsys):
    from selfrag.bench.runner import RunOptions, run_benchmark
    from selfrag.bench.systems import BENCH_DEFAULTS
    from selfrag.cli import main
    from selfrag.engine.calibration import load_critic_model

    folder = _training_scifact(tmp_path / "data") / "scifact"
    script = {"retrieve_decide": {"retrieve": "yes", "query": ""}, "verify_claim": verdict("supports")}
    options = RunOptions("scifact", "selfrag", Config(**BENCH_DEFAULTS), data_path=str(folder), split="train",
                         out=tmp_path / "runs", progress=False, environ={})  # fmt: skip
    run = run_benchmark(options, chat=ScriptedChatModel(script)).run_dir
    out = tmp_path / "w.json"
    assert (
        main(["bench", "fit-claims", str(run), "--dataset", "scifact", "--data", str(folder), "--out", str(out)]) == 0
    )
    model = load_critic_model(out)
    assert model.fitted_on["confidence_claims"] == 18 and model.fitted_on["confidence_runs"] == 1
    assert (model.confidence.a, model.confidence.c) != (1.0, 0.0)  # fitted, not the identity
    assert "confidence map from 18 voted claims" in capsys.readouterr().err


def test_a_claim_pair_is_supported_when_its_text_settles_the_claim_and_does_not_refute_it():
    from selfrag.bench.qa import pair_verdict

    rater = _polar_rater()  # P(refutes) 0.88 for a negated claim, 0.12 otherwise; verdict cut 0.5
    text = "Paris is the capital and largest city of France."
    p, supported = pair_verdict(rater, "Paris is the capital of France.", text, 0.8)
    assert supported and p == pytest.approx(0.8 * (1 - 0.119203), abs=1e-5)
    p, supported = pair_verdict(rater, "Paris is not the capital of France.", text, 0.8)  # settles it, refuting
    assert not supported and p == pytest.approx(0.8 * 0.119203, abs=1e-5)
    assert pair_verdict(rater, "Paris is the capital of France.", text, 0.4)[1] is False  # does not settle it
    assert pair_verdict(_rank_rater(0.0, cut=0.3), "Paris is not the capital of France.", text, 0.8) == (0.8, True)
    assert pair_verdict(rater, None, text, 0.8) == (0.8, True)  # a QA statement: no polarity


def test_the_critic_system_judges_claims_with_the_claim_weights_where_they_carry_a_polarity_head(tmp_path):
    from selfrag.bench.runner import shipped_weights
    from selfrag.engine.calibration import SHIPPED, load_critic_model

    critic, claim = System("critic", Config(scorer="evidence")), System("selfrag", Config(scorer="evidence"))
    climate = ds.load("climate_fever", write_climate(tmp_path / "c"))
    scifact = ds.load("scifact", write_scifact(tmp_path / "s"))
    assert load_critic_model(None, claims.claim_weights("climate_fever")).refutes is not None
    assert shipped_weights(climate, critic) == claims.claim_weights("climate_fever")
    assert load_critic_model(None, claims.claim_weights("scifact")).refutes is None
    assert shipped_weights(scifact, critic) == SHIPPED  # without one, "settles" would count refuting texts
    assert shipped_weights(scifact, claim) == claims.claim_weights("scifact")
