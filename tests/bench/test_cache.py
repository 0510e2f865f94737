"""The request cache: a rerun answers from SQLite with zero model calls; corrupt entries are misses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3

import pytest
from helpers import fused

from selfrag.bench.cache import MAX_ENTRY_CHARS, CachedChatModel, RequestCache, request_key
from selfrag.bench.replies import AnswerReply
from selfrag.errors import InputError
from selfrag.llm.base import Capabilities, ChatRequest, Message
from selfrag.schema import Meter
from selfrag.testing import Scripted, ScriptedChatModel


def cache_request(text="What is the capital of France?", temperature=0.0):
    return ChatRequest("answer_direct", (Message("system", "s"), Message("user", text)), AnswerReply, 50,
                       temperature=temperature)  # fmt: skip


def test_second_run_makes_zero_model_calls_and_replays_the_cost(tmp_path):
    path = tmp_path / "cache.sqlite3"
    first = ScriptedChatModel({"answer_direct": lambda r: {"answer": "Paris"}})
    cached = CachedChatModel(first, RequestCache(path), endpoint="test")
    meter_1 = Meter()
    reply_1 = asyncio.run(cached.chat(cache_request(), meter_1))
    assert len(first.calls) == 1 and cached.counters.misses == 1 and cached.counters.hits == 0

    second = ScriptedChatModel({})  # any call would fail: nothing is scripted
    again = CachedChatModel(second, RequestCache(path), endpoint="test")
    meter_2 = Meter()
    reply_2 = asyncio.run(again.chat(cache_request(), meter_2))
    assert second.calls == [] and again.counters.hits == 1 and again.counters.sent == 0
    assert reply_2 == reply_1
    assert (meter_2.llm_calls, meter_2.prompt_tokens, meter_2.completion_tokens) == (
        meter_1.llm_calls, meter_1.prompt_tokens, meter_1.completion_tokens)  # fmt: skip


def test_logprobs_survive_the_round_trip(tmp_path):
    path = tmp_path / "cache.sqlite3"
    model = ScriptedChatModel({"generate_fused": Scripted(fused("x"), probs={"support": {"fully": 0.7, "no": 0.3}})},
                              logprobs=True)  # fmt: skip
    req = ChatRequest("generate_fused", (Message("user", "u"),), AnswerReply, 50, logprobs=True)
    fresh = asyncio.run(CachedChatModel(model, RequestCache(path), endpoint="e").chat(req, Meter()))
    replayed = asyncio.run(CachedChatModel(ScriptedChatModel({}, logprobs=True), RequestCache(path), endpoint="e")
                           .chat(req, Meter()))  # fmt: skip
    assert replayed.tokens == fresh.tokens and fresh.tokens is not None


def test_the_key_covers_the_request_and_the_endpoint_but_never_a_key():
    caps = Capabilities("m")
    base = request_key("http://h/v1|model=m", caps, cache_request())
    assert base == request_key("http://h/v1|model=m", caps, cache_request())
    assert base != request_key("http://other/v1|model=m", caps, cache_request())
    assert base != request_key("http://h/v1|model=m", Capabilities("m", structured="json_object"), cache_request())
    assert base != request_key("http://h/v1|model=m", caps, cache_request("What is the capital of Spain?"))
    assert base != request_key("http://h/v1|model=m", caps, cache_request(temperature=0.5))


def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path):
    path = tmp_path / "cache.sqlite3"
    model = ScriptedChatModel({"answer_direct": [{"answer": "Paris"}, {"answer": "Paris"}]})
    cached = CachedChatModel(model, RequestCache(path), endpoint="test")
    asyncio.run(cached.chat(cache_request(), Meter()))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE cache SET value = ? WHERE kind = 'chat'", ("{not json",))
    again = CachedChatModel(model, RequestCache(path), endpoint="test")
    asyncio.run(again.chat(cache_request(), Meter()))
    assert len(model.calls) == 2 and again.counters.misses == 1 and again.cache.corrupt == 1
    with sqlite3.connect(path) as db:
        value = db.execute("SELECT value FROM cache WHERE kind = 'chat'").fetchone()[0]
    assert json.loads(value)["text"] == '{"answer": "Paris"}'  # JSON text, never pickle


def test_a_malformed_but_valid_json_entry_is_a_miss(tmp_path):
    path = tmp_path / "cache.sqlite3"
    model = ScriptedChatModel({"answer_direct": lambda r: {"answer": "Paris"}})
    asyncio.run(CachedChatModel(model, RequestCache(path), endpoint="t").chat(cache_request(), Meter()))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE cache SET value = ? WHERE kind = 'chat'", (json.dumps({"text": 1}),))
    asyncio.run(CachedChatModel(model, RequestCache(path), endpoint="t").chat(cache_request(), Meter()))
    assert len(model.calls) == 2


def test_sampled_requests_are_never_cached(tmp_path):
    model = ScriptedChatModel({"answer_direct": lambda r: {"answer": "Paris"}})
    cached = CachedChatModel(model, RequestCache(tmp_path / "c.sqlite3"), endpoint="t")
    for _ in range(2):
        asyncio.run(cached.chat(cache_request(temperature=0.7), Meter()))
    assert len(model.calls) == 2 and len(cached.cache) == 1  # only the capabilities record


def test_a_cache_that_cannot_grow_stops_storing_and_the_calls_still_succeed(tmp_path):
    """Disk full (SQLite's SQLITE_FULL, here from a page cap): caching turns off, the run does not fail."""
    cache = RequestCache(tmp_path / "cache.sqlite3")
    pages = cache._db.execute("PRAGMA page_count").fetchone()[0]
    cache._db.execute(f"PRAGMA max_page_count = {pages}")  # no page can be added: as a full disk
    model = ScriptedChatModel({"answer_direct": lambda r: {"answer": "Paris " * 800}})
    cached = CachedChatModel(model, cache, endpoint="test")
    assert "Paris" in asyncio.run(cached.chat(cache_request(), Meter())).text
    assert cache.write_error is not None and "full" in cache.write_error
    assert "Paris" in asyncio.run(cached.chat(cache_request("Another question?"), Meter())).text
    assert len(model.calls) == 2 and len(cache) <= 1  # at most the tiny capabilities entry fitted


def test_a_file_that_is_not_a_database_is_refused_with_a_hint(tmp_path):
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"this is not sqlite, just text that someone left here\n" * 100)
    with pytest.raises(InputError, match="--no-cache"):
        RequestCache(path)
    assert path.read_bytes().startswith(b"this is not sqlite")  # the user's file is left as it was


DEEP = "[" * 200_000 + "]" * 200_000  # valid JSON nested deeper than the json module's recursion limit


@pytest.mark.parametrize(
    "value",
    [DEEP, '{"text": ' + DEEP + "}", '{"text": "' + "x" * MAX_ENTRY_CHARS + '"}'],
    ids=["deep-array", "deep-inside-an-object", "oversized"],
)
def test_a_deep_or_oversized_entry_is_a_miss_and_is_deleted(tmp_path, value):
    path = tmp_path / "cache.sqlite3"
    model = ScriptedChatModel({"answer_direct": [{"answer": "Paris"}, {"answer": "Paris"}]})
    asyncio.run(CachedChatModel(model, RequestCache(path), endpoint="test").chat(cache_request(), Meter()))
    (key,) = sql(path, "SELECT key FROM cache WHERE kind = 'chat'")
    sql(path, "UPDATE cache SET value = ? WHERE kind = 'chat'", value)
    cache = RequestCache(path)
    assert cache.get(key) is None and cache.corrupt == 1
    assert sql(path, "SELECT COUNT(*) FROM cache WHERE kind = 'chat'") == (0,)  # deleted
    sql(path, "UPDATE cache SET value = ? WHERE kind = 'capabilities'", value)
    again = CachedChatModel(model, RequestCache(path), endpoint="test")
    assert "Paris" in asyncio.run(again.chat(cache_request(), Meter())).text  # asked again, not crashed
    assert len(model.calls) == 2 and again.counters.misses == 1


def sql(path, query, *args):
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        return db.execute(query, args).fetchone()
