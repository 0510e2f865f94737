"""The embedded default model: locating it, caching its F16 copy, serving it in-process, answering with it.

Tests marked slow run the real SmolLM2-135M-Instruct (they run on CI too; together they take well under two
minutes). The others need neither llama-cpp-python nor the model.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

from selfrag import Config, ConfigError, EndpointConfig, SelfRAG
from selfrag.errors import UsageError
from selfrag.llm.local import (
    EMBEDDED_CAPABILITIES,
    INSTALL_MODEL,
    INSTALL_RUNTIME,
    MODEL_ALIAS,
    PROPS_PATH,
    ThreadChoice,
    auto_threads,
    busy_between,
    busy_now,
    cache_dir,
    cores,
    cpu_ticks,
    embedded_chat,
    free_cores,
    load_runtime,
    local_model_path,
    serve,
    served,
    thread_choice,
)
from selfrag.llm.local_weights import cached_f16, f16_path, upcast_f16
from selfrag.retrieval.index import Index
from selfrag.schema import Meter

from .conftest import CORPUS

CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Say hello."}]


# -- without the model -------------------------------------------------------------------------------


def test_a_missing_model_package_names_the_install_command():
    with pytest.raises(ConfigError) as caught:
        local_model_path(package="selfrag_no_such_model_package")
    assert INSTALL_MODEL in str(caught.value)
    assert "--base-url" in str(caught.value)


def test_a_package_without_the_model_file_says_where_it_looked():
    with pytest.raises(ConfigError, match="looked in .*selfrag") as caught:
        local_model_path(package="selfrag", filename="absent.gguf")
    assert INSTALL_MODEL in str(caught.value)


def test_a_missing_runtime_names_the_install_command_for_the_extra():
    with pytest.raises(ConfigError) as caught:
        load_runtime("selfrag_no_such_runtime.server.app", process_env={})
    assert INSTALL_RUNTIME in str(caught.value)
    assert "selfrag_no_such_runtime" in str(caught.value)


def test_llama_cpps_threads_spin_at_their_barriers_unless_the_user_chose_otherwise():
    env: dict[str, str] = {}
    load_runtime("json", process_env=env)  # any importable module: what matters is the environment before it
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}
    mine = {"OMP_WAIT_POLICY": "PASSIVE"}
    load_runtime("json", process_env=mine)
    assert mine == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_the_cache_folder_follows_selfrag_home_then_xdg_then_home(tmp_path):
    assert cache_dir({"SELFRAG_HOME": "/a", "XDG_CACHE_HOME": "/b", "HOME": "/c"}) == Path("/a")
    assert cache_dir({"XDG_CACHE_HOME": "/b", "HOME": "/c"}) == Path("/b/selfrag")
    assert cache_dir({"HOME": "/c"}) == Path("/c/.cache/selfrag")


def test_threads_come_from_selfrag_threads_else_from_the_idle_cores():
    assert auto_threads({"SELFRAG_THREADS": "3"}) == 3
    assert 1 <= auto_threads({}) <= cores()
    for bad in ("many", "0", "-2", "1.5"):
        with pytest.raises(UsageError, match="SELFRAG_THREADS"):
            auto_threads({"SELFRAG_THREADS": bad})


STAT_BEFORE = (
    "cpu  300 0 100 1000 0 0 0 0 0 0\ncpu0 100 0 50 500 0 0 0 0 0 0\ncpu1 200 0 50 500 0 0 0 0 0 0\nintr 1 2\n"
)
STAT_AFTER = "cpu  320 0 100 1020 0 0 0 0 0 0\ncpu0 100 0 50 520 0 0 0 0 0 0\ncpu1 220 0 50 500 0 0 0 0 0 0\nintr 1 2\n"


def test_the_cores_busy_now_come_from_two_readings_of_proc_stat():
    before, after = cpu_ticks(STAT_BEFORE), cpu_ticks(STAT_AFTER)
    assert before == {0: (500, 650), 1: (500, 750)}  # the "cpu" total line is not a core
    assert busy_between(before, after) == pytest.approx(1.0)  # cpu0 idle all along, cpu1 busy all along
    assert cpu_ticks(STAT_AFTER, [1]) == {1: (500, 770)}  # only the cores this process may use
    assert free_cores(2, 1.0) == 1 and free_cores(2, 0.3) == 2 and free_cores(2, 1.7) == 1
    assert free_cores(4, 9) == 1  # never fewer than one


def test_the_thread_choice_counts_what_is_busy_now_and_says_why():
    choice = thread_choice({}, busy=(cores() - 1.0, "/proc/stat over 100 ms"))
    assert choice.threads == 1 and "busy with other work (/proc/stat over 100 ms)" in choice.reason
    idle = thread_choice({}, busy=(0.0, "/proc/stat over 100 ms"))
    assert idle.threads == cores()
    assert thread_choice({"SELFRAG_THREADS": "2"}, busy=(5.0, "x")) == ThreadChoice(2, "$SELFRAG_THREADS")
    used, seen = busy_now(0.01)
    assert 0 <= used <= cores() and seen


def _fake_copy(source: Path, cache: Path, data: bytes, recorded_size: int) -> Path:
    target = f16_path(source, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    target.with_name(target.name + ".json").write_text(json.dumps({"size": recorded_size}))
    return target


@pytest.mark.parametrize(
    ("data", "recorded"),
    [(b"GGUF" + b"\0" * 60, 10_000), (b"JUNK" + b"\0" * 60, 64), (b"GG", 2)],
    ids=["truncated", "not-gguf", "short"],
)
def test_a_damaged_cached_copy_is_ignored_and_removed(tmp_path, data, recorded):
    source = tmp_path / "model.Q4_1.gguf"
    source.write_bytes(b"GGUF source")
    target = _fake_copy(source, tmp_path / "cache", data, recorded)
    assert cached_f16(source, tmp_path / "cache") is None
    assert not target.exists() and not target.with_name(target.name + ".json").exists()


def test_a_whole_cached_copy_is_used(tmp_path):
    source = tmp_path / "model.Q4_1.gguf"
    source.write_bytes(b"GGUF source")
    target = _fake_copy(source, tmp_path / "cache", b"GGUF" + b"\0" * 60, 64)
    assert cached_f16(source, tmp_path / "cache") == target
    assert target.name.startswith("model.F16.")


def test_a_cached_copy_without_its_record_is_ignored(tmp_path):
    source = tmp_path / "model.Q4_1.gguf"
    source.write_bytes(b"GGUF source")
    target = f16_path(source, tmp_path / "cache")
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF" + b"\0" * 60)  # a crash between the copy and its record
    assert cached_f16(source, tmp_path / "cache") is None


# -- with the real model -----------------------------------------------------------------------------


@pytest.mark.slow
def test_answers_a_question_on_the_sample_corpus_with_a_citation(embedded, corpus_index):
    config = Config(mode="always", ndocs=2, max_depth=2, nonce_seed="test")
    with SelfRAG(Index.load(corpus_index), config, chat=embedded) as rag:
        result = rag.answer("How much is a day pass?")
    assert result.answer.strip()
    assert re.search(r"\[\d+\]", result.answer), result.answer
    corpus_files = {path.name for path in CORPUS.glob("*.md")}
    assert any(source.doc_id in corpus_files for source in result.sources), result.sources


@pytest.mark.slow
async def test_the_probe_finds_on_this_server_what_the_embedded_model_declares_without_probing(embedded, local_home):
    chat = embedded_chat(environ={"SELFRAG_HOME": str(local_home)})
    meter = Meter()
    try:
        declared = await chat.capabilities(meter)
        assert meter.llm_calls == 0 and "not probed" in chat.origin  # no request: the process serves it
        caps = await chat.capabilities(meter, refresh=True)  # doctor --refresh probes all the same
    finally:
        await chat.aclose()
    assert meter.llm_calls > 0 and declared is EMBEDDED_CAPABILITIES
    assert caps.structured == declared.structured == "json_object_schema"
    assert caps.model == declared.model == MODEL_ALIAS  # listed by the server, not configured
    assert (caps.logprobs, caps.n) == (declared.logprobs, declared.n)
    # The probe asks for slots only when a queue could make a call time out, which depends on this CPU's speed
    # (a fast one is "not measured"); what the server says of its slots must be what is declared.
    assert caps.parallel in (None, declared.parallel), caps.parallel_reason
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=served().app), base_url="http://e") as client:
        reply = await client.get(PROPS_PATH)
    assert reply.json()["total_slots"] == declared.parallel


@pytest.mark.slow
def test_the_cache_holds_the_f16_copy_and_its_record_only(embedded, local_home):
    server = served()
    assert server is not None and server.model_file.parent == local_home / "models"
    assert sorted(p.name for p in (local_home / "models").iterdir()) == sorted(
        [server.model_file.name, server.model_file.name + ".json"]
    )
    assert server.model_file.read_bytes()[:4] == b"GGUF"


@pytest.mark.slow
async def test_requests_the_server_would_fail_noisily_get_a_quiet_400(embedded, capfd):
    app = served().app
    bodies = [
        {"messages": HELLO, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
        {"messages": HELLO, "max_tokens": 1, "logprobs": True, "top_logprobs": 5},
    ]
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://embedded") as client:
        replies = [await client.post(CHAT, json=body) for body in bodies]
    assert [reply.status_code for reply in replies] == [400, 400]
    assert "response_format" in replies[0].json()["error"]["message"]
    assert "logprobs" in replies[1].json()["error"]["message"]
    assert capfd.readouterr().err == ""


@pytest.mark.slow
async def test_two_engines_share_the_one_app_and_take_turns(embedded, local_home):
    other = embedded_chat(environ={"SELFRAG_HOME": str(local_home)})
    assert other is not embedded
    app = served().app

    async def hello() -> int:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://e") as client:
            reply = await client.post(CHAT, json={"messages": HELLO, "max_tokens": 2})
            return reply.status_code

    assert await asyncio.gather(hello(), hello(), hello()) == [200, 200, 200]


@pytest.mark.slow
def test_other_settings_in_the_same_process_are_refused(embedded, local_home):
    current = served()
    with pytest.raises(ConfigError, match="one model per process"):
        serve(replace(current.settings, n_ctx=2048), {"SELFRAG_HOME": str(local_home)})
    with pytest.raises(ConfigError, match="needs an endpoint"):
        embedded_chat(EndpointConfig(model="gpt-4o"), {"SELFRAG_HOME": str(local_home)})


@pytest.mark.slow
def test_a_cached_copy_that_does_not_load_is_removed_and_the_shipped_file_served(embedded, tmp_path):
    source = local_model_path()
    target = _fake_copy(source, tmp_path, b"GGUF" + b"\xff" * 4092, 4096)  # the magic, then garbage
    script = (
        "from selfrag.llm.local import embedded_chat, served; "
        f"embedded_chat(environ={{'SELFRAG_HOME': {str(tmp_path)!r}, 'SELFRAG_THREADS': '1', "
        "'SELFRAG_WEIGHTS': 'f16'}); "
        "print(served().model_file); print(served().note)"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    loaded, note = run.stdout.splitlines()
    assert Path(loaded) == source
    assert "did not load and was removed" in note
    assert not target.exists()


@pytest.mark.slow
def test_the_bf16_copy_is_written_beside_the_f16_one_and_loads(tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    source = local_model_path()
    f16 = _fake_copy(source, tmp_path / "cache", b"GGUF" + b"\0" * 60, 64)  # an F16 copy already cached
    bf16 = upcast_f16(source, tmp_path / "cache", n_threads=1, weights="bf16")
    assert bf16.name.startswith("SmolLM2-135M-Instruct.BF16.") and bf16 == f16_path(source, tmp_path / "cache", "bf16")
    assert cached_f16(source, tmp_path / "cache", "bf16") == bf16
    assert f16.exists()  # the other kind's copy is not taken for an old one and removed
    model = llama_cpp.Llama(str(bf16), n_ctx=64, n_threads=1, verbose=False)
    assert model.n_vocab() > 0


def test_an_unknown_weights_kind_is_a_usage_error_before_anything_loads():
    with pytest.raises(UsageError, match="SELFRAG_WEIGHTS must be auto, q4_1, f16 or bf16 .*got 'q4'"):
        embedded_chat(environ={"SELFRAG_WEIGHTS": "q4"})
