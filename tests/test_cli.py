"""The command line end to end: index a folder, then ask over real HTTP to a loopback OpenAI-compatible server."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import pytest
from bench.fixtures import write_hotpot

import selfrag
from selfrag.cli import main

SHIPPED_WEIGHTS = Path(selfrag.__file__).parent / "data" / "critic-v1.json"
pytestmark = pytest.mark.usefixtures("clean_env")  # conftest.clean_env


def test_ask_prints_a_cited_answer_and_a_sources_footer(index_dir, server, capsys):
    code = main(
        ["ask", "How many days do I have for refunds?", "--index", str(index_dir), "--base-url", server.base_url]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Refunds are accepted within 30 days of purchase [1]." in out
    assert "Sources:" in out and "[1]" in out and "refunds.md" in out
    confidence = out.strip().splitlines()[-1]  # after the sources, as the scorer means it
    assert re.fullmatch(
        r"Confidence: \d\.\d\d \(the critic's mean support of the sentences, not a probability\)\.", confidence
    )


def test_ask_with_the_evidence_scorer_states_its_confidence_as_a_probability(index_dir, server, capsys):
    question = "How many days do I have for refunds?"
    weights = ["--scorer-weights", str(SHIPPED_WEIGHTS)]  # an endpoint's model has none of its own here
    code = main(["ask", question, "--index", str(index_dir), "--base-url", server.base_url, "--scorer", "evidence",
                 "--abstain-below", "0", *weights])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    main(["ask", question, "--index", str(index_dir), "--base-url", server.base_url, "--scorer", "evidence",
          "--abstain-below", "0", "--json", *weights])  # fmt: skip
    percent = round(100 * json.loads(capsys.readouterr().out)["confidence"])
    assert out.strip().splitlines()[-1] == f"Confidence: {percent} % that this answer is supported and right."


def test_ask_json_has_the_documented_keys_and_counts_every_http_request(index_dir, server, capsys):
    code = main(
        [
            "ask",
            "How many days do I have for refunds?",
            "--index",
            str(index_dir),
            "--base-url",
            server.base_url,
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"answer", "segments", "sources", "usage", "trace"} <= set(result)
    assert {"text", "citation", "critique", "score"} <= set(result["segments"][0])
    assert {"llm_calls", "prompt_tokens", "completion_tokens"} <= set(result["usage"])
    assert result["usage"]["llm_calls"] == len(server.stats.authorizations)  # every request: probe, model list
    assert len(result["trace"]["steps"]) >= 1 and result["sources"][0]["doc_id"] == "refunds.md"


def test_question_from_stdin(index_dir, server, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("How many days for refunds?\n"))
    assert main(["ask", "-", "--index", str(index_dir), "--base-url", server.base_url]) == 0
    assert "[1]" in capsys.readouterr().out


def test_jsonl_streams_events_ending_with_done(index_dir, server, capsys):
    assert main(["ask", "refunds?", "--index", str(index_dir), "--base-url", server.base_url, "--jsonl"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "step" and kinds[-1] == "done" and "segment" in kinds


def test_trace_goes_to_stderr_not_stdout(index_dir, server, capsys):
    assert main(["ask", "refunds?", "--index", str(index_dir), "--base-url", server.base_url, "--trace"]) == 0
    captured = capsys.readouterr()
    assert "step 0 beam 0: retrieve=" in captured.err
    assert "step 0" not in captured.out


def test_openai_key_is_not_sent_to_a_local_server(index_dir, server, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-cli-123")
    assert main(["ask", "refunds?", "--index", str(index_dir), "--base-url", server.base_url, "--json"]) == 0
    assert server.stats.authorizations and all("sk-canary" not in a for a in server.stats.authorizations)
    assert "sk-canary" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message", "code"),
    [
        (["ask", "   ", "--index", "{index}"], "question is empty", 2),  # a bad argument: a usage error
        (["ask", "q?", "--index", "{missing}"], "selfrag index", 1),
        (["search", "--index", "{index}"], "QUERY or --queries", 2),
        (["search", "  ", "--index", "{index}"], "the query is empty", 2),
    ],
)
def test_bad_input_gets_one_line_and_exit_1_or_2(argv, message, code, index_dir, tmp_path, capsys):
    argv = [a.format(index=index_dir, missing=tmp_path / "nope") for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["ask", "q?", "--beam-width", "two", "--index", "x"])
    assert caught.value.code == 2


def test_out_of_range_knob_is_a_one_line_usage_error(index_dir, capsys):
    assert (
        main(["ask", "q?", "--index", str(index_dir), "--beam-width", "0", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    )
    assert "beam_width must be" in capsys.readouterr().err


def test_unreachable_endpoint_fails_fast_with_one_line(index_dir, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    started = time.monotonic()
    code = main(["ask", "refunds?", "--index", str(index_dir), "--base-url", f"http://127.0.0.1:{port}/v1"])
    err = capsys.readouterr().err
    assert code == 1 and "cannot reach the endpoint" in err and "Traceback" not in err
    assert time.monotonic() - started < 10


def test_search_one_query_and_batch_mode(index_dir, tmp_path, capsys):
    assert main(["search", "express shipping", "--index", str(index_dir), "-k", "2", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["doc_id"] in ("shipping.md", "members.md") and {"chunk_id", "score", "text"} <= set(hits[0])
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "a", "text": "refunds receipt"}\n{"_id": "b", "text": "express shipping"}\n')
    assert main(["search", "--queries", str(queries), "--index", str(index_dir), "-k", "2"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["_id"] for line in lines] == ["a", "b"]
    assert lines[0]["hits"][0]["doc_id"] == "refunds.md"


def test_a_search_that_finds_nothing_says_so(index_dir, capsys):
    assert main(["search", "the of and", "--index", str(index_dir)]) == 0  # stopwords only: nothing to match
    captured = capsys.readouterr()
    assert captured.out == "" and "no chunk holds a word of 'the of and'" in captured.err


def test_batch_queries_with_duplicate_ids_are_refused(index_dir, tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n')
    assert main(["search", "--queries", str(queries), "--index", str(index_dir)]) == 1
    assert "duplicate _id" in capsys.readouterr().err


def test_trace_html_is_written_next_to_the_answer(index_dir, server, tmp_path, capsys):
    page = tmp_path / "trace.html"
    assert (
        main(["ask", "refunds?", "--index", str(index_dir), "--base-url", server.base_url, "--trace-html", str(page)])
        == 0
    )
    html = page.read_text()
    assert "<html" in html and "Refunds are accepted within 30 days" in html
    assert "wrote the search tree" in capsys.readouterr().err


def full_disk_at(name, real):
    """`os.open` or `os.mkdir` failing with ENOSPC for what an index save creates in its temp folder."""

    def call(path, *args, **kwargs):
        creating = name == "mkdir" or (args[0] & os.O_CREAT)
        if creating and "/.tmp-" in os.fspath(path):
            raise OSError(errno.ENOSPC, "No space left on device", os.fspath(path))
        return real(path, *args, **kwargs)

    return call


@pytest.mark.parametrize("name", ["open", "mkdir"])
def test_index_on_a_full_disk_exits_1_with_one_line_and_the_old_index_still_loads(
    index_dir, tmp_path, capsys, monkeypatch, name
):
    from selfrag.retrieval.index import Index

    (tmp_path / "corpus" / "gifts.md").write_text("Gift cards never expire and can be topped up online.")
    before = sorted(p.name for p in index_dir.iterdir())
    monkeypatch.setattr(os, name, full_disk_at(name, getattr(os, name)))
    code = main(["index", str(tmp_path / "corpus"), "--out", str(index_dir), "--quiet"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "No space left on device" in err and "previous index is untouched" in err
    assert sorted(p.name for p in index_dir.iterdir()) == before  # no temp folder left behind
    index = Index.load(index_dir)
    assert index.document_count == 3 and index.find_relevant_chunks("gift cards", 3) == []


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["index", "{corpus}", "--out", "{tmp}/o\x00x"], "--out"),
        (["index", "{corpus}\x00", "--out", "{tmp}/o"], "PATH"),
        (["ask", "q?", "--index", "{tmp}/i\x00dx"], "--index"),
        (["ask", "q?", "--index", "{index}", "--trace-html", "{tmp}/o\x00.html"], "--trace-html"),
        (["search", "refunds", "--index", "{index}\x00"], "--index"),
        (["bench", "run", "--dataset", "hotpotqa_smoke", "--system", "rag", "--out", "{tmp}/o\x00x"], "--out"),
        (["bench", "run", "--dataset", "hotpotqa_smoke", "--system", "rag", "--run-dir", "{tmp}/o\x00x"], "--run-dir"),
        (["bench", "score", "{tmp}/o\x00x"], "RUN_DIR"),
    ],
    ids=[
        "index-out",
        "index-path",
        "ask-index",
        "ask-trace-html",
        "search-index",
        "bench-out",
        "bench-run-dir",
        "bench-score",
    ],
)
def test_a_nul_byte_in_a_path_is_a_one_line_usage_error(argv, flag, index_dir, tmp_path, capsys):
    argv = [a.format(corpus=tmp_path / "corpus", index=index_dir, tmp=tmp_path) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"selfrag: error: {flag} holds a NUL byte") and len(err.strip().splitlines()) == 1
    assert "internal error" not in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing was created


CANARY = "sk-canary-4f9d2c71e0"


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "q?", "--index", "x", "--api-key", CANARY],  # keys are never flags
        ["ask", "q?", "--index", "x", f"--api-key={CANARY}"],
        ["ask", "q?", "--index", "x", "--openai-token", "hunter2-not-a-key-shape"],
        ["ask", "q?", "--index", "x", CANARY],  # a stray positional shaped like a key
        ["ask", "q?", "--index", "x", "--mode", CANARY],  # an invalid choice is quoted in the error
    ],
)
def test_a_key_on_the_command_line_is_refused_without_being_echoed(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2 and "***" in err
    assert CANARY not in err and "hunter2" not in err
    assert "SELFRAG_API_KEY" in err.splitlines()[-1]  # and says where a key goes instead


def test_an_error_that_quotes_a_value_hides_a_key(tmp_path, capsys):
    data = write_hotpot(tmp_path / "data")
    code = main(["bench", "run", "--dataset", "hotpotqa_smoke", "--data", str(data), "--system", CANARY])
    err = capsys.readouterr().err
    assert code == 2 and "unknown system ***" in err and CANARY not in err


@pytest.mark.parametrize(
    ("ids", "message"), [(" , ", "--ids names no question"), ("q0,q77", "'q77' is not a question")]
)
def test_ids_that_name_no_question_of_the_sample_are_a_one_line_error(tmp_path, capsys, ids, message):
    data = write_hotpot(tmp_path / "data")
    argv = ["bench", "run", "--dataset", "hotpotqa_smoke", "--data", str(data), "--system", "no-retrieval"]
    code = main([*argv, "--ids", ids, "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # refused before a folder was made


HOSTILE_NAME = "refunds\x1b[2J\u202egpj.md"  # clears the screen; bidi flips the extension
HOSTILE_TEXT = (
    "Refunds are accepted within 30 days of purchase.\x1b]52;c;ZXZpbA==\x07 Keep the receipt\u200b \r"
    "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \u202eylno sliated"
)
TERMINAL_DANGER = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def test_a_hostile_document_reaches_no_terminal_raw_through_search_ask_sources_or_trace(tmp_path, server, capsys):
    corpus = tmp_path / "hostile"
    corpus.mkdir()
    (corpus / HOSTILE_NAME).write_text(HOSTILE_TEXT)
    (corpus / "members.md").write_text("Members get free express shipping and 60 days for refunds.")
    index = tmp_path / "hostile-index"
    assert main(["index", str(corpus), "--out", str(index), "--quiet"]) == 0
    assert main(["search", "refunds receipt", "--index", str(index)]) == 0
    searched = capsys.readouterr()
    question = "How many days for refunds?"
    assert main(["ask", question, "--index", str(index), "--base-url", server.base_url, "--trace"]) == 0
    asked = capsys.readouterr()
    assert "Refunds are accepted within 30 days" in searched.out and "Sources:" in asked.out
    for stream in (searched.out, searched.err, asked.out, asked.err):
        assert not TERMINAL_DANGER.search(stream.replace("\n", " ").replace("\t", " ")), repr(stream[:300])


@pytest.mark.parametrize("value", ["q4", "fp16", "f16,int8"])
def test_a_bad_selfrag_weights_is_a_usage_error_naming_the_variable(index_dir, monkeypatch, capsys, value):
    monkeypatch.setenv("SELFRAG_WEIGHTS", value)
    for argv in (["ask", "refunds?", "--index", str(index_dir)], ["doctor"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "SELFRAG_WEIGHTS" in err and repr(value) in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-3", "four"])
def test_a_bad_selfrag_threads_is_a_usage_error_naming_the_variable(index_dir, monkeypatch, capsys, value):
    monkeypatch.setenv("SELFRAG_THREADS", value)
    for argv in (["ask", "refunds?", "--index", str(index_dir)], ["doctor"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "SELFRAG_THREADS" in err and repr(value) in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
