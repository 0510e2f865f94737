"""Capabilities remembered (llm/capcache.py): a later process reuses what the first one probed, a changed server
or a contradicting error probes again, and a cache file that cannot be used is a miss said in one line.

Real processes (`python -m selfrag ask`) and the real client against the loopback server; the cache folder is
the test's own ($SELFRAG_HOME under tmp_path), never the user's home."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CHUNKS

from selfrag import Config, EndpointConfig, SelfRAG
from selfrag.llm.base import Capabilities
from selfrag.llm.capcache import FORMAT, BadEntry, CapCache, Remembered, dump, load, server_identity
from selfrag.testing import ListRetriever
from selfrag.testing.fake_server import FakeOpenAIServer, is_probe

QUESTION = "How many days do I have for refunds?"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG", "SELFRAG_MODEL"):
        monkeypatch.delenv(name, raising=False)


def probes(server: FakeOpenAIServer) -> int:
    return sum(1 for body in server.stats.bodies if is_probe(body))


def ask_process(index_dir: Path, server: FakeOpenAIServer, home: Path) -> subprocess.CompletedProcess[str]:
    """`selfrag ask` in a process of its own, its cache under `home`."""
    env = {**os.environ, "SELFRAG_HOME": str(home), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "selfrag", "ask", QUESTION, "--index", str(index_dir), "--base-url",
            server.base_url, "--model", "fake-model"]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def engine(server: FakeOpenAIServer, home: Path, **endpoint: object) -> SelfRAG:
    """A fresh engine, as a new process would build it: nothing in memory, the cache on disk under `home`."""
    settings = EndpointConfig(base_url=server.base_url, **endpoint)  # type: ignore[arg-type]
    config = Config(endpoint=settings, nonce_seed="test", lead=False, max_depth=1)
    return SelfRAG(ListRetriever(CHUNKS), config, environ={"SELFRAG_HOME": str(home)})


def remembered_files(home: Path) -> list[Path]:
    return sorted((home / "capabilities").glob("*.json"))


# -- a later process --------------------------------------------------------------------------------


def test_a_second_process_sends_no_probe_request(index_dir, tmp_path):
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        first = ask_process(index_dir, server, home)
        assert first.returncode == 0, first.stderr
        probed = probes(server)
        seen_gets = len(server.stats.gets)
        chat_requests = server.stats.requests
        second = ask_process(index_dir, server, home)
        assert second.returncode == 0, second.stderr
        assert probed >= 1 and probes(server) == probed  # the second process sent no probe call
        assert sorted(server.stats.gets[seen_gets:]) == ["/props", "/v1/models"]  # the identity, nothing else
        assert server.stats.requests - chat_requests == chat_requests - probed  # only the engine's own calls
    assert second.stdout == first.stdout and "Refunds are accepted within 30 days" in second.stdout
    assert second.stderr.count("\n") <= first.stderr.count("\n")  # no warning about the cache
    assert len(remembered_files(home)) == 1


def test_a_changed_server_identity_probes_again(tmp_path):
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        with engine(server, home) as rag:  # no model configured: the server's first
            rag.answer(QUESTION)
        probed = probes(server)
        with engine(server, home) as rag:
            rag.answer(QUESTION)
        assert probes(server) == probed  # same server: remembered
        server.model = "fake-model-2"  # restarted with another model at the same address
        with engine(server, home) as rag:
            result = rag.answer(QUESTION)
        assert probes(server) > probed
    assert result.trace.capabilities["model"] == "fake-model-2"
    assert len(remembered_files(home)) == 1  # the entry was replaced, not added to


def test_a_changed_slot_count_probes_again(tmp_path):
    home = tmp_path / "home"
    with FakeOpenAIServer(slots=2, latency=0.05) as server:
        with engine(server, home, model="fake-model") as rag:
            assert rag.answer(QUESTION).trace.capabilities["parallel"] == 2
        probed = probes(server)
        server.reported_slots = 1  # llama-server restarted with --parallel 1
        with engine(server, home, model="fake-model") as rag:  # checks the identity beside its first call
            rag.answer(QUESTION)
        assert probes(server) > probed
        [entry] = remembered_files(home)
        assert load(entry.read_text()).capabilities.parallel == 1
        with engine(server, home, model="fake-model") as rag:
            assert rag.answer(QUESTION).trace.capabilities["parallel"] == 1


def test_a_400_on_the_remembered_schema_forgets_it_probes_again_and_the_answer_stands(tmp_path, caplog):
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        with engine(server, home, model="fake-model") as rag:
            assert rag.answer(QUESTION).trace.capabilities["structured"] == "json_schema"
        probed = probes(server)
        server.fault = "no-schema"  # the same identity, but JSON-schema output is now refused with 400
        with caplog.at_level(logging.WARNING, logger="selfrag"), engine(server, home, model="fake-model") as rag:
            result = rag.answer(QUESTION)
        assert probes(server) > probed
    assert result.answer.startswith("Refunds are accepted within") and "[1]" in result.answer
    warnings = [r.getMessage() for r in caplog.records if "capabilities are contradicted" in r.getMessage()]
    assert len(warnings) == 1 and "400" in warnings[0]
    [entry] = remembered_files(home)
    assert load(entry.read_text()).capabilities.structured == "json_object_schema"  # what the new probe found


def test_a_timeout_within_the_learned_slots_forgets_them(tmp_path):
    home = tmp_path / "home"
    with FakeOpenAIServer(slots=2) as server:
        with engine(server, home, model="fake-model", timeout=0.5, max_retries=0) as rag:
            assert rag.answer(QUESTION).trace.capabilities["parallel"] == 2
        assert len(remembered_files(home)) == 1
        server.fault = "hang"  # a call waits in a queue the learned slot count should have kept it out of
        with engine(server, home, model="fake-model", timeout=0.5, max_retries=0) as rag:
            with pytest.raises(Exception, match="did not answer in time"):
                rag.answer(QUESTION)
    assert remembered_files(home) == []


# -- files that cannot be used ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"format": "selfrag-capabilities/1", "capabilities": {"mod', "not JSON"),
        (b"\x00\xff\xfe garbage", "not UTF-8"),
        (json.dumps({"format": "selfrag-capabilities/0", "capabilities": {}}).encode(), "format"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b" " * 70_000, "larger than"),
    ],
    ids=["torn", "binary", "other-version", "not-an-object", "huge"],
)
def test_a_corrupt_or_foreign_cache_file_is_ignored_with_one_line_and_probed_again(
    index_dir, tmp_path, content, reason
):
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        assert ask_process(index_dir, server, home).returncode == 0
        [entry] = remembered_files(home)
        entry.write_bytes(content)
        probed = probes(server)
        run = ask_process(index_dir, server, home)
        assert probes(server) > probed  # probed as before
    assert run.returncode == 0 and "Refunds are accepted within 30 days" in run.stdout
    lines = [line for line in run.stderr.splitlines() if "remembered capabilities" in line]
    assert len(lines) == 1 and reason in lines[0] and "probing" in lines[0]
    assert "Traceback" not in run.stderr
    assert load(entry.read_text()).capabilities.model == "fake-model"  # replaced by what the probe found


@pytest.mark.parametrize("how", ["read-only", "a-file-in-the-way"])
def test_a_cache_folder_that_cannot_be_written_is_skipped_with_one_line(index_dir, tmp_path, how):
    home = tmp_path / "home"
    if how == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        (home / "capabilities").mkdir(parents=True)
        (home / "capabilities").chmod(0o500)
    else:
        home.mkdir()
        (home / "capabilities").write_text("not a folder")
    runs, probe_counts = [], []
    with FakeOpenAIServer() as server:
        for _ in range(2):
            runs.append(ask_process(index_dir, server, home))
            probe_counts.append(probes(server))
    for run in runs:
        assert run.returncode == 0 and "Refunds are accepted within 30 days" in run.stdout, run.stderr
        lines = [line for line in run.stderr.splitlines() if "cannot remember the capabilities" in line]
        assert len(lines) == 1 and "Traceback" not in run.stderr
    assert 0 < probe_counts[0] < probe_counts[1]  # both processes probed: nothing could be remembered


# -- the file's format, pure ------------------------------------------------------------------------


def test_an_entry_round_trips_and_a_wrong_field_is_refused():
    caps = Capabilities(
        "m", "json_object_schema", True, False, logprobs_offered=True, logprobs_reason="on: cheap",
        costs=(("logprobs", 1.2), ("schema", 1.05)), parallel=3, parallel_reason="the server reports 3",
    )  # fmt: skip
    entry = Remembered(caps, "abc", 1_700_000_000.5)
    text = dump(entry, "http://user:secret@127.0.0.1:8080/v1")
    assert load(text) == entry
    assert "secret" not in text and json.loads(text)["format"] == FORMAT
    record = json.loads(text)
    record["capabilities"]["parallel"] = "3"
    with pytest.raises(BadEntry, match="parallel"):
        load(json.dumps(record))
    record["capabilities"]["parallel"] = True
    with pytest.raises(BadEntry, match="parallel"):
        load(json.dumps(record))


def test_an_entry_is_used_only_for_the_same_identity_and_while_young():
    entry = Remembered(Capabilities("m"), "id-1", 1000.0)
    assert entry.fresh("id-1", 1000.0 + 3600) is None
    assert "identity" in (entry.fresh("id-2", 1001.0) or "")
    assert "ago" in (entry.fresh("id-1", 1000.0 + 2 * 24 * 3600) or "")
    assert entry.fresh("id-1", 900.0) is not None  # learned "in the future": the clock moved, not trusted


def test_the_identity_ignores_what_changes_per_request_and_sees_what_matters():
    models = {"data": [{"id": "qwen", "object": "model", "created": 1, "owned_by": "llamacpp"}]}
    later = {"data": [{"id": "qwen", "object": "model", "created": 99, "owned_by": "llamacpp"}]}
    props = {"total_slots": 2, "model_path": "/m/qwen.gguf", "default_generation_settings": {"n_ctx": 4096}}
    assert server_identity(props, models) == server_identity(props, later)  # `created` is often the clock
    assert server_identity(props, models) != server_identity({**props, "total_slots": 4}, models)
    assert server_identity(props, models) != server_identity(props, {"data": [{"id": "llama"}]})
    assert server_identity(None, None) == ""


def test_no_environment_means_no_cache(tmp_path):
    assert CapCache.default({}) is None
    assert CapCache.default({"SELFRAG_HOME": str(tmp_path)}).folder == tmp_path / "capabilities"


def test_doctor_reuses_what_was_remembered_and_refresh_probes_afresh(tmp_path, monkeypatch, capsys):
    from selfrag.cli import main

    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with FakeOpenAIServer(slots=2, latency=0.05) as server:
        argv = ["doctor", "--base-url", server.base_url, "--model", "fake-model", "--timeout", "1"]
        counts = []
        for extra in ([], [], ["--refresh"]):
            assert main([*argv, *extra]) == 0
            counts.append(probes(server))
            out = capsys.readouterr().out
            [line] = [line for line in out.splitlines() if " remembered " in line]
            if len(counts) == 2:
                assert "remembered, probed 20" in line and "--refresh" in line  # with the date it was learned
            else:
                assert line.startswith("ok   remembered   probed 20")
            assert "2 at once" in next(line for line in out.splitlines() if " parallel " in line)
    first, second, refreshed = counts
    assert second == first  # the second doctor sent no probe call (its tiny call is not a probe's)
    assert refreshed > second
    assert "afresh" in line  # the last run says why it probed


def test_a_refusal_of_the_remembered_logprobs_forgets_them_on_a_self_rag_checkpoint(tmp_path, caplog):
    from reflection_checkpoint import USE, Checkpoint, segment

    model, home = "selfrag/selfrag_llama2_7b", tmp_path / "home"
    checkpoint = Checkpoint({"April 2026": segment("You have 30 days.", use=USE)})
    with FakeOpenAIServer(model=model, completions=checkpoint) as server:
        with engine(server, home, model=model, max_retries=0) as rag:
            assert rag.answer(QUESTION).trace.capabilities["reading"] == "logprobs"
        [entry] = remembered_files(home)
        server.fault = "no-logprobs"  # the same server now answers 400 to a request with `logprobs`
        with caplog.at_level(logging.WARNING, logger="selfrag"), engine(server, home, model=model) as rag:
            result = rag.answer(QUESTION)
    assert result.answer  # answered: the probe ran again and the labels were read from the text
    assert any("capabilities are contradicted" in r.getMessage() and "400" in r.getMessage() for r in caplog.records)
    assert load(entry.read_text()).capabilities.reading == "labels"
