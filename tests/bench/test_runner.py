"""The runner: run folders, durable samples, resume after a crash, failures counted, locks, exit codes."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from helpers import fused

from selfrag.bench.runner import (
    EXIT_FAILURES,
    EXIT_INCOMPLETE,
    EXIT_OK,
    RunError,
    RunOptions,
    folder_lock,
    run_benchmark,
)
from selfrag.bench.samples import read_samples
from selfrag.bench.score import calibration_table, score_run
from selfrag.bench.systems import BENCH_DEFAULTS, LATER_KNOBS
from selfrag.config import Config
from selfrag.errors import ContextLengthError, CritiqueError, FatalLLMError, InputError, LLMError, RefusalError
from selfrag.testing import ScriptedChatModel

from .fixtures import CAPITALS, PARAGRAPHS, write_hotpot

COUNTRY_TO_CITY = {country: city for city, country in CAPITALS.items()}


def country(request) -> str:
    return re.search(r"capital of (\w+)", request.messages[-1].content).group(1)


def direct_answer(request):
    return {"answer": COUNTRY_TO_CITY[country(request)] if country(request) != "Italy" else "Milan"}


def options(tmp_path, system="no-retrieval", **extra):
    data = write_hotpot(tmp_path / "data")
    values = dict(data_path=str(data), out=tmp_path / "runs", seed=0, progress=False, environ={})
    values.update(extra)
    return RunOptions("hotpotqa_smoke", system, Config(**BENCH_DEFAULTS), **values)


def without_timing(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("wall_time", "model_seconds")}


def samples_of(report) -> list[dict]:
    return [json.loads(line) for line in (report.run_dir / "samples.jsonl").read_text().splitlines()]


def test_a_complete_run_writes_its_folder_and_score_recomputes_the_same_metrics(tmp_path):
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    report = run_benchmark(options(tmp_path), chat=chat)
    assert report.status == "complete" and report.exit_code == EXIT_OK
    assert {p.name for p in report.run_dir.iterdir()} >= {"config.json", "samples.jsonl", "results.json", "results.md"}
    results = json.loads((report.run_dir / "results.json").read_text())
    assert results["summary"]["n"] == 6 and results["dataset"]["sha256"] and results["seed"] == 0
    assert results["summary"]["metrics"]["correct"]["value"] == pytest.approx(5 / 6)
    assert {"python", "selfrag", "bm25s"} <= set(results["versions"])
    assert results["endpoint"]["capabilities"]["model"] == "scripted"
    assert score_run(report.run_dir)["summary"] == results["summary"]
    assert "| no-retrieval | 6 | 0 |" in report.table


def test_a_run_of_one_kind_of_question_says_so_and_gets_its_own_folder(tmp_path):
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    whole = run_benchmark(options(tmp_path), chat=chat)
    factoids = run_benchmark(options(tmp_path, kind="factoid"), chat=chat)
    results = json.loads((factoids.run_dir / "results.json").read_text())
    assert factoids.run_dir != whole.run_dir and results["sample"]["kind"] == "factoid"
    assert results["summary"]["n"] == 6  # every fixture question asks for a fact
    with pytest.raises(InputError, match="no yes_no question"):
        run_benchmark(options(tmp_path, kind="yes_no"), chat=chat)


def test_some_questions_of_a_sample_asked_again_get_the_answers_the_whole_sample_got(tmp_path):
    script = {"rag_answer": {"answer": "Paris", "citations": [1]}}
    unanswerable = dict(limit=4, unanswerable=True)  # every sampled question's gold is out, not only the ones asked
    whole = run_benchmark(options(tmp_path, "rag", **unanswerable), chat=ScriptedChatModel(script))
    asked = [r["id"] for r in samples_of(whole)][1:3]
    again = run_benchmark(
        options(tmp_path, "rag", ids=(asked[1], asked[0]), **unanswerable), chat=ScriptedChatModel(script)
    )
    assert again.run_dir != whole.run_dir and [r["id"] for r in samples_of(again)] == asked  # in file order
    by_id = {r["id"]: r for r in samples_of(whole)}
    for record in samples_of(again):
        assert record["retrieved"] == by_id[record["id"]]["retrieved"]  # over the same corpus, so the same chunks
    config = json.loads((again.run_dir / "config.json").read_text())
    assert config["sample"]["ids"] == sorted(asked) and config["corpus"]["size"] == 2
    with pytest.raises(InputError, match=r"--ids: 'q9' .* not a question of this sample"):
        run_benchmark(options(tmp_path, "rag", ids=("q9",), limit=4), chat=ScriptedChatModel(script))


def test_failed_questions_are_recorded_counted_and_exit_3(tmp_path):
    def flaky(request):
        if country(request) in ("France", "Spain"):
            raise LLMError("the endpoint answered 500: boom")
        return direct_answer(request)

    report = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": flaky}))
    assert report.exit_code == EXIT_FAILURES and report.status == "complete"
    failed = [s for s in samples_of(report) if s["status"] == "failed"]
    assert len(failed) == 2 and all("500" in s["error"] for s in failed)
    summary = report.summary
    assert summary["n"] == 6 and summary["failed"] == 2
    assert summary["metrics"]["correct"]["value"] == pytest.approx(3 / 6)  # failures stay in the denominator
    assert summary["metrics"]["correct_answered"]["value"] == pytest.approx(3 / 4)


def test_a_fatal_endpoint_error_aborts_and_resume_finishes_without_duplicates(tmp_path):
    def fatal_on_rome(request):
        if country(request) == "Madrid" or country(request) == "Spain":
            raise FatalLLMError("the endpoint rejected the API key (401)")
        return direct_answer(request)

    first = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": fatal_on_rome}))
    assert first.status == "aborted" and first.exit_code == EXIT_INCOMPLETE and "401" in first.message
    done_before = len(samples_of(first))
    assert done_before < 6
    with pytest.raises(RunError, match="--resume"):
        run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    second = run_benchmark(options(tmp_path, resume=True), chat=chat)
    assert second.exit_code == EXIT_OK and len(chat.calls) == 6 - done_before
    ids = [s["id"] for s in samples_of(second)]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6


def test_resume_repairs_a_torn_last_line_and_counts_nothing_twice(tmp_path):
    whole = run_benchmark(
        options(tmp_path, out=tmp_path / "whole"), chat=ScriptedChatModel({"answer_direct": direct_answer})
    )
    crashed = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    samples = crashed.run_dir / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join(lines[:3]) + lines[3][:25])  # a kill in the middle of the fourth append
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    resumed = run_benchmark(options(tmp_path, resume=True), chat=chat)
    assert len(chat.calls) == 3  # the torn fourth question and the two after it
    records, report = read_samples(samples, repair=False)
    assert len(records) == 6 and report.torn_bytes == 0
    assert samples.read_bytes().count(b"\n") == 6
    assert without_timing(resumed.summary["metrics"]) == without_timing(whole.summary["metrics"])


def test_retry_failed_answers_failed_questions_again_and_the_last_record_wins(tmp_path):
    broken = ScriptedChatModel({"answer_direct": CritiqueError("reply still invalid after 2 attempts")})
    first = run_benchmark(options(tmp_path), chat=broken)
    assert first.summary["failed"] == 6
    again = run_benchmark(options(tmp_path, resume=True), chat=ScriptedChatModel({}))
    assert again.summary["failed"] == 6  # a question that failed on its own is done unless retried
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    third = run_benchmark(options(tmp_path, resume=True, retry_failed=True), chat=chat)
    assert len(chat.calls) == 6 and third.summary["failed"] == 0 and third.summary["n"] == 6


def test_questions_that_failed_at_the_endpoint_are_asked_again_on_a_plain_resume(tmp_path):
    broken = ScriptedChatModel({"answer_direct": LLMError("the endpoint answered 503: busy")})
    first = run_benchmark(options(tmp_path, max_consecutive_failures=100), chat=broken)
    assert first.summary["failed"] == 6 and {r["failure"] for r in samples_of(first)} == {"endpoint"}
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    again = run_benchmark(options(tmp_path, resume=True), chat=chat)
    assert len(chat.calls) == 6 and again.summary["failed"] == 0 and again.exit_code == EXIT_OK


@pytest.mark.parametrize(
    ("error", "failure", "message"),
    [
        (CritiqueError("reply still invalid after 2 attempts"), "question", "no reply of the model could be used"),
        (RefusalError("the model refused to answer: no", kind="refusal"), "question", "the model refused"),
        (ContextLengthError("the prompt is longer than the context"), "question", "longer than the context"),
        (LLMError("the endpoint answered 503: busy"), "endpoint", "every call to the endpoint failed"),
    ],
)
def test_a_question_whose_every_sentence_the_model_botched_is_its_own_failure_not_the_endpoints(
    tmp_path, error, failure, message
):
    """No candidate's reply could be used (it stayed invalid, the model refused, the prompt was too long for the
    model): asking again gets the same, so a plain resume does not ask it again (were it the endpoint's, a
    calibration resumed after it would never finish)."""
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": "capital"},
        "generate_fused": error,
        "generate_plain": error,
    }
    first = run_benchmark(options(tmp_path, "selfrag", limit=2), chat=ScriptedChatModel(script))
    assert [r["failure"] for r in samples_of(first)] == [failure] * 2
    assert all(message in r["error"] for r in samples_of(first))
    chat = ScriptedChatModel(script)
    run_benchmark(options(tmp_path, "selfrag", limit=2, resume=True), chat=chat)
    assert bool(chat.calls) is (failure == "endpoint")


def test_consecutive_endpoint_failures_stop_the_run(tmp_path):
    broken = ScriptedChatModel({"answer_direct": LLMError("cannot reach the endpoint")})
    report = run_benchmark(options(tmp_path, max_consecutive_failures=2), chat=broken)
    assert report.status == "aborted" and report.exit_code == EXIT_INCOMPLETE
    assert len(samples_of(report)) == 2


def test_a_corrupt_line_in_the_middle_is_refused(tmp_path):
    report = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    samples = report.run_dir / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text("".join([lines[0], "garbage\n", *lines[1:]]))
    with pytest.raises(InputError, match="line 2 is corrupt"):
        run_benchmark(options(tmp_path, resume=True), chat=ScriptedChatModel({}))


def test_a_second_process_cannot_share_the_run_folder(tmp_path):
    first = run_benchmark(options(tmp_path, limit=2), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    with folder_lock(first.run_dir):
        with pytest.raises(RunError, match="in use by pid"):
            run_benchmark(options(tmp_path, limit=2, resume=True), chat=ScriptedChatModel({}))


def test_a_changed_configuration_gets_its_own_folder_and_an_explicit_folder_refuses_it(tmp_path):
    a = run_benchmark(options(tmp_path, limit=2), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    b = run_benchmark(options(tmp_path, limit=3), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    assert a.run_dir != b.run_dir
    with pytest.raises(RunError, match="another configuration"):
        run_benchmark(options(tmp_path, limit=4, run_dir=a.run_dir, resume=True), chat=ScriptedChatModel({}))


def test_disk_full_while_appending_stops_the_run_unfinished(tmp_path, monkeypatch):
    real_fsync, calls = os.fsync, {"n": 0}

    def failing_fsync(fd):
        calls["n"] += 1
        if calls["n"] >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    report = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    assert report.status in ("error",) and report.exit_code == EXIT_INCOMPLETE
    assert "No space left" in report.message


def test_selfrag_and_rag_records_carry_citations_retrieval_and_confidence(tmp_path):
    def write(request):
        doc = request.messages[1].content.split("<document", 1)[1]
        city = next(c for c in CAPITALS if f'id="{c}#0' in doc)
        return fused(f"{city} is the capital.", evidence=f"{city} is the capital", is_final=True)

    script = {"retrieve_decide": {"retrieve": "yes", "query": "capital"}, "generate_fused": write,
              "rag_answer": {"answer": "Paris", "citations": [1, 9, 1]}}  # fmt: skip
    selfrag = run_benchmark(options(tmp_path, "selfrag", limit=2), chat=ScriptedChatModel(script))
    record = samples_of(selfrag)[0]
    assert record["status"] == "ok" and record["confidence"] == 1.0 and record["retrieved"]
    assert record["citations"] and all(s.endswith("/0") for s in record["cited_sentences"])
    assert 0.0 < record["similarity_confidence"] <= 1.0
    assert selfrag.summary["calibration"]["critique"]["n"] == 2
    rag = run_benchmark(options(tmp_path, "rag", limit=2), chat=ScriptedChatModel(script))
    assert samples_of(rag)[0]["citations"] and len(samples_of(rag)[0]["citations"]) == 1  # 9 is out of range


def test_each_answer_records_the_facts_it_states_that_no_document_it_cites_holds(tmp_path):
    script = {"rag_answer": lambda request: {"answer": "It is Lyon, since 1871", "citations": [1]}}
    rag = run_benchmark(options(tmp_path, "rag", limit=2), chat=ScriptedChatModel(script))
    assert [r["unstated"] for r in samples_of(rag)] == [["lyon", "1871"]] * 2  # no capital's paragraph says so
    memory = ScriptedChatModel({"answer_direct": lambda request: {"answer": "It is Paris."}})
    direct = run_benchmark(options(tmp_path, limit=2), chat=memory)  # it cites nothing: every fact is its own
    assert [r["unstated"] for r in samples_of(direct)] == [["paris"]] * 2
    assert direct.summary["metrics"]["unstated"]["value"] == 1.0


def test_a_pooled_run_records_which_candidate_was_pooled_and_cites_a_retrieved_chunk(tmp_path):
    def write(request):
        doc = request.messages[1].content.split("<document", 1)[1]
        city = next(c for c in CAPITALS if f'id="{c}#0' in doc)
        return fused(f"{city} is a city.", support="partially", utility=2, evidence="")

    def pooled(request):
        city = next(c for c in CAPITALS if f'id="{c}#0' in request.messages[1].content)
        return fused(f"{city} is the capital.", evidence=f"{city} is the capital")

    script = {"retrieve_decide": {"retrieve": "yes", "query": "capital"}, "generate_fused": write,
              "generate_pooled": pooled}  # fmt: skip
    report = run_benchmark(options(tmp_path, "selfrag+pooled", limit=2), chat=ScriptedChatModel(script))
    assert report.run_dir.parent.name == "selfrag+pooled" and report.status == "complete"
    for record in samples_of(report):
        assert record["status"] == "ok"
        winners = [c for c in record["candidates"] if c["status"] == "kept"]
        assert [c["pooled"] for c in winners] == [True] and record["segments"][0]["pooled"]
        assert record["citations"] == [winners[0]["chunk"]] and winners[0]["chunk"] in record["retrieved"]
    assert score_run(report.run_dir)["summary"] == report.summary


def test_a_pooled_sentence_joining_two_paragraphs_cites_both_in_the_record(tmp_path):
    def write(request):
        return fused("It is a city.", support="partially", utility=2, evidence="")

    def pooled(request):  # the question's city, and a fact only another retrieved paragraph holds
        shown = request.messages[1].content
        city = next(c for c in CAPITALS if f"capital of {CAPITALS[c]}?" in shown)
        other = next(c for c in CAPITALS if c != city and f'id="{c}#0' in shown)
        fact = PARAGRAPHS[other][1].strip().rstrip(".")
        return fused(f"{city} is the capital, and {fact}.", evidence=f"{city} is the capital")

    script = {"retrieve_decide": {"retrieve": "yes", "query": "capital"}, "generate_fused": write,
              "generate_pooled": pooled}  # fmt: skip
    report = run_benchmark(options(tmp_path, "selfrag+pooled", limit=2), chat=ScriptedChatModel(script))
    for record in samples_of(report):
        kept = next(c for c in record["candidates"] if c["status"] == "kept")
        assert kept["pooled"] and len(kept["also"]) == 1 and kept["also"][0] != kept["chunk"]
        assert record["citations"] == [kept["chunk"], *kept["also"]] == [kept["chunk"], *record["segments"][0]["also"]]
        assert len(record["cited_sentences"]) == 2  # one gold-aligned sentence in each paragraph
    assert score_run(report.run_dir)["summary"] == report.summary


def test_with_the_lead_on_the_answer_scored_is_the_one_shown_short_answer_first(tmp_path):
    questions = [
        {"_id": "y1", "question": "Is Paris the capital city of France?", "answer": "yes", "type": "comparison",
         "level": "easy", "supporting_facts": [["Paris", 0]], "context": [["Paris", PARAGRAPHS["Paris"]]]},
    ]  # fmt: skip
    script = {"retrieve_decide": {"retrieve": "yes", "query": "Paris capital"},
              "generate_fused": fused("Paris is the capital of France.", evidence="Paris is the capital of France"),
              "answer_lead": {"answer": "yes"}}  # fmt: skip
    data = write_hotpot(tmp_path / "data", questions)

    def run(lead: bool):  # noqa: ANN202
        config = Config(**{**BENCH_DEFAULTS, "lead": lead})
        values = dict(data_path=str(data), out=tmp_path / "runs", seed=0, progress=False, environ={})
        return run_benchmark(RunOptions("hotpotqa_smoke", "selfrag", config, **values), chat=ScriptedChatModel(script))

    led, plain = run(True), run(False)
    assert [r["prediction"] for r in samples_of(led)] == ["Yes. Paris is the capital of France."]
    assert [r["lead_reply"] for r in samples_of(led)] == ["yes"]  # the call's own words, kept for analysis
    assert score_run(led.run_dir)["summary"]["metrics"]["correct"]["value"] == 1.0
    row = calibration_table([score_run(led.run_dir)]).splitlines()[-1]
    assert re.search(r"\| 0\.\d{3} \(0\.\d{3}\) \|", row)  # the ECE, and beside it a calibrated engine's at this n
    assert [r["prediction"] for r in samples_of(plain)] == ["Paris is the capital of France."]  # no yes: wrong
    assert score_run(plain.run_dir)["summary"]["metrics"]["correct"]["value"] == 0.0


def test_unknown_systems_and_wrong_datasets_are_usage_errors(tmp_path):
    from selfrag.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown system"):
        run_benchmark(options(tmp_path, "bm25-only"), chat=ScriptedChatModel({}))
    with pytest.raises(ConfigError, match="gold-labelled pairs"):
        run_benchmark(options(tmp_path, "critic"), chat=ScriptedChatModel({}))
    with pytest.raises(ConfigError, match="selfrag only"):
        run_benchmark(options(tmp_path, "rag+separate"), chat=ScriptedChatModel({}))
    assert Path(tmp_path / "runs").exists() is False


def test_a_rerun_in_a_new_folder_is_answered_from_the_cache_with_zero_model_calls(tmp_path):
    cache = tmp_path / "cache.sqlite3"
    first = ScriptedChatModel({"answer_direct": direct_answer})
    a = run_benchmark(options(tmp_path, cache_path=cache), chat=first)
    assert len(first.calls) == 6 and a.summary["cache_hits"] == 0
    second = ScriptedChatModel({})  # an unscripted call would fail the question
    b = run_benchmark(options(tmp_path, cache_path=cache, out=tmp_path / "again"), chat=second)
    assert second.calls == [] and b.exit_code == EXIT_OK and b.summary["cache_hits"] == 6
    assert b.summary["requests_sent"] == 0
    assert without_timing(b.summary["metrics"]) == without_timing(a.summary["metrics"])
    assert b.summary["metrics"]["llm_calls"] == a.summary["metrics"]["llm_calls"]  # cost replayed, not zero
    fresh, replayed = (report.run_dir.joinpath("results.md").read_text().strip().splitlines()[-1] for report in (a, b))
    assert "cached" not in fresh and replayed.split(" | ")[-3] == "cached"  # replay time is no cost: not shown


def test_growth_runs_each_size_and_keeps_the_gold_chunks(tmp_path):
    from selfrag.bench.growth import run_growth

    chat = ScriptedChatModel({"answer_direct": direct_answer, "rag_answer": {"answer": "Paris", "citations": [1]}})
    summary, code = run_growth(options(tmp_path, limit=2), ["no-retrieval", "rag"], [2, 6], chat=chat)
    assert code == EXIT_OK and [(c["size"], c["system"]) for c in summary["cells"]] == [
        (2, "no-retrieval"), (2, "rag"), (6, "no-retrieval"), (6, "rag")]  # fmt: skip
    rag_small = summary["cells"][1]
    assert rag_small["coverage"]["value"] == 1.0  # with only the gold chunks, retrieval cannot miss
    folder = tmp_path / "runs" / "growth-hotpotqa_smoke"
    assert (folder / "growth.json").exists() and "| 6 | 0 | rag |" in (folder / "growth.md").read_text()
    config = json.loads(next((folder / "size-2").glob("hotpotqa_smoke/rag/*/config.json")).read_text())
    assert config["corpus"] == {"size": 2, "cut": True}


def test_dated_stale_copies_run_with_supersession_and_plain_bm25_similarity(tmp_path):
    from selfrag.bench.growth import run_growth

    from .fixtures import write_halueval

    data = write_halueval(tmp_path / "e")
    base = RunOptions(
        "halueval", "rag", Config(**BENCH_DEFAULTS), data_path=str(data), out=tmp_path / "runs", seed=0,
        progress=False, environ={}, limit=2, stale_dated=True,
    )  # fmt: skip
    chat = ScriptedChatModel({"rag_answer": {"answer": "Rome", "citations": [1]}})
    summary, code = run_growth(base, ["rag"], [6], stale=[2], chat=chat)
    assert code == EXIT_OK and summary["cells"][0]["status"] == "complete"
    folder = tmp_path / "runs" / "growth-halueval" / "size-6-stale-2-dated"
    config = json.loads(next(folder.glob("halueval/rag/*/config.json")).read_text())
    assert config["corpus"]["stale_dated"] is True


def fsync_failing_on(monkeypatch, name, nth):
    """Make os.fsync raise ENOSPC on the `nth` sync of the file called `name`; returns the file's bytes as
    they were after the last sync that succeeded."""
    real_fsync, seen, synced = os.fsync, {"n": 0}, {"bytes": b""}

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.basename(path) == name:
            seen["n"] += 1
            if seen["n"] == nth:
                raise OSError(errno.ENOSPC, "No space left on device")
            real_fsync(fd)
            synced["bytes"] = Path(path).read_bytes()
            return
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_a_record_whose_fsync_failed_is_cut_from_the_file(tmp_path, monkeypatch):
    from selfrag.bench.samples import SampleWriter

    path = tmp_path / "samples.jsonl"
    writer = SampleWriter(path)
    try:
        writer.write({"id": "a", "status": "ok"})
        good = path.read_bytes()
        fsync_failing_on(monkeypatch, "samples.jsonl", 1)
        with pytest.raises(OSError, match="No space left"):
            writer.write({"id": "b", "status": "ok"})
        assert path.read_bytes() == good  # the written but unsynced line is gone
        writer.write({"id": "c", "status": "ok"})  # space again: the next line follows the last good one
    finally:
        writer.close()
    assert list(read_samples(path, repair=False)[0]) == ["a", "c"]


def test_disk_full_at_fsync_leaves_the_question_undone_and_resume_answers_it(tmp_path, monkeypatch):
    synced = fsync_failing_on(monkeypatch, "samples.jsonl", 3)
    first = run_benchmark(options(tmp_path), chat=ScriptedChatModel({"answer_direct": direct_answer}))
    assert first.status == "error" and first.exit_code == EXIT_INCOMPLETE and "No space left" in first.message
    samples = first.run_dir / "samples.jsonl"
    assert samples.read_bytes() == synced["bytes"] and synced["bytes"].count(b"\n") == 2  # nothing unsynced
    monkeypatch.undo()
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    resumed = run_benchmark(options(tmp_path, resume=True), chat=chat)
    assert resumed.exit_code == EXIT_OK and len(chat.calls) == 4  # the third question is answered again
    ids = [s["id"] for s in samples_of(resumed)]
    assert len(ids) == 6 and len(set(ids)) == 6


BAD_NAMES = ["..", ".", "../../etc", "/etc", "a/b", "a\x00b", "", "x" * 65, "a b", "a\nb"]


@pytest.mark.parametrize("bad", BAD_NAMES)
@pytest.mark.parametrize("part", ["dataset", "label"])
def test_run_folder_parts_must_be_plain_names(tmp_path, part, bad):
    from selfrag.bench.runner import run_folder

    names = {"dataset": "halueval", "label": "selfrag+wsup0"} | {part: bad}
    with pytest.raises(InputError, match="cannot name a run folder"):
        run_folder(tmp_path / "runs", names["dataset"], names["label"], "0123456789abcdef")
    assert not (tmp_path / "runs").exists()


def test_every_system_label_names_a_folder_inside_out(tmp_path):
    from selfrag.bench.runner import run_folder
    from selfrag.bench.systems import parse_system

    out, config = tmp_path / "runs", Config(**BENCH_DEFAULTS)
    names = ["no-retrieval", "rag", "critic", "selfrag", "selfrag-beam2", "selfrag+separate+always", "selfrag+wsup0",
             "selfrag+wsup-0.5", "selfrag-b12+never", "selfrag+pooled", "selfrag-b2+separate+pooled"]  # fmt: skip
    labels = [parse_system(name, config).label for name in names]
    labels.append(parse_system("selfrag", config.with_values(w_sup=1e-5)).label)  # printed as wsup1e-05
    for label in labels:
        folder = run_folder(out, "hotpotqa_smoke", label, "0123456789abcdef")
        assert folder.parent.parent.parent == out and folder.name == "01234567"
        assert parse_system(label, config).label == label  # a printed label is accepted back by --system


def test_pooled_is_a_system_suffix_that_changes_the_run_hash_and_off_leaves_earlier_hashes_alone():
    from selfrag.bench.cache import digest
    from selfrag.bench.systems import parse_system
    from selfrag.config import config_dict

    config = Config(**BENCH_DEFAULTS)
    plain, pooled = parse_system("selfrag", config), parse_system("selfrag+evidence+pooled", config)
    assert pooled.config.pooled and pooled.label == "selfrag+evidence+pooled" and not plain.config.pooled
    assert set(plain.describe()["config"]) == set(config_dict(config)) - set(LATER_KNOBS)  # as before the knobs
    assert pooled.describe()["config"]["pooled"] is True
    on = parse_system("selfrag", config.with_values(pooled=True))
    assert on.label == "selfrag+pooled" and digest(on.describe()) != digest(plain.describe())


@pytest.mark.parametrize("field", ["out", "run_dir"])
def test_a_nul_byte_in_the_run_folder_is_refused_before_anything_runs(tmp_path, field):
    chat = ScriptedChatModel({"answer_direct": direct_answer})
    with pytest.raises(InputError, match="NUL byte"):
        run_benchmark(options(tmp_path, **{field: tmp_path / "ru\x00ns"}), chat=chat)
    assert chat.calls == [] and not (tmp_path / "ru").exists()
