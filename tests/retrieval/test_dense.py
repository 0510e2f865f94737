"""Dense vectors: embedded at index time over real loopback HTTP (the fake server's hashed embeddings), stored
in the index generation under its checksums, fused with BM25 at query time, mismatches and gaps refused."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers import fused

from selfrag import Config
from selfrag.api import SelfRAG
from selfrag.cli import main
from selfrag.config import EndpointConfig, resolve_endpoint
from selfrag.errors import ConfigError, LLMError, RetrievalError
from selfrag.retrieval.dense import META, VECTORS, DenseSource, DenseVectors, embed_hook, embedding_text, open_dense
from selfrag.retrieval.embeddings import OpenAIEmbedder, normalise
from selfrag.retrieval.index import Index
from selfrag.retrieval.ingest import index_paths
from selfrag.retrieval.store import open_current
from selfrag.retrieval.strategies import Retriever
from selfrag.schema import Meter
from selfrag.testing import ScriptedChatModel
from selfrag.testing.fake_server import FakeOpenAIServer, hashed_embedding

MODEL = "fake-embed"
DOCS = [
    {"id": "union", "title": "Unions", "text": "The labour union organised a strike at the harbour."},
    {"id": "cats", "title": "Cats", "text": "Cats sleep for most of the day and hunt at dusk."},
    {"id": "dogs", "title": "Dogs", "text": "Dogs need daily walks and enjoy fetching sticks."},
    {"id": "fish", "title": "Fish", "text": "Goldfish remember things for months, not seconds."},
]
MISSED = "labor organized"  # American spellings: no BM25 term in common with the union document


@pytest.fixture
def embed_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embedding_models=(MODEL,)) as srv:
        yield srv


def embedder(srv: FakeOpenAIServer, model: str = MODEL) -> OpenAIEmbedder:
    return OpenAIEmbedder(resolve_endpoint(EndpointConfig(base_url=srv.base_url), {}), model)


def write_docs(folder: Path, docs: Sequence[dict[str, str]] = DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return folder


def build_embedded(tmp_path: Path, srv: FakeOpenAIServer, docs: Sequence[dict[str, str]] = DOCS) -> tuple[Path, object]:
    out = tmp_path / "index"
    hook, reports = embed_hook(embedder(srv), out)
    index_paths([write_docs(tmp_path / "docs", docs)], out, extra_files=hook)
    return out, reports[0]


def config(srv: FakeOpenAIServer, **knobs: object) -> Config:
    return Config(nonce_seed="t", lead=False, endpoint=EndpointConfig(base_url=srv.base_url), **knobs)  # type: ignore[arg-type]


# index time -----------------------------------------------------------------------------------------------


def test_vectors_are_stored_in_the_generation_under_its_checksums_and_round_trip(tmp_path, embed_server):
    out, report = build_embedded(tmp_path, embed_server)
    files = open_current(out).manifest["files"]
    assert {VECTORS, META} <= set(files) and len(files[VECTORS]["sha256"]) == 64
    index = Index.load(out)
    vectors = DenseVectors.load(out, index)
    assert vectors is not None and vectors.model == MODEL
    assert vectors.matrix.dtype == np.float32 and vectors.matrix.shape == (4, 256)
    assert np.allclose(np.linalg.norm(vectors.matrix, axis=1), 1.0, atol=1e-5)
    expected = np.asarray([hashed_embedding(embedding_text(c)) for c in index.loop_over_chunks()], np.float32)
    assert np.allclose(vectors.matrix, expected, atol=1e-6)
    stored = np.load(open_current(out).folder / VECTORS, allow_pickle=False)
    assert np.array_equal(stored, vectors.matrix)
    assert json.loads((open_current(out).folder / META).read_text()) == {
        "format": 1,
        "model": MODEL,
        "dimensions": 256,
        "count": 4,
    }
    assert (report.embedded, report.reused, report.requests) == (4, 0, 1)
    assert embed_server.stats.embedding_requests == 1 and embed_server.stats.requests == 0  # no chat call at index time


def test_a_tampered_vector_file_is_refused_with_a_rebuild_hint(tmp_path, embed_server):
    out, _ = build_embedded(tmp_path, embed_server)
    path = open_current(out).folder / VECTORS
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RetrievalError, match=r"dense.vectors.npy does not match its checksum.*selfrag index"):
        DenseVectors.load(out, Index.load(out))


def test_an_index_without_vectors_has_none(tmp_path):
    out = tmp_path / "index"
    index_paths([write_docs(tmp_path / "docs")], out)
    assert DenseVectors.load(out, Index.load(out)) is None


def test_reindexing_embeds_only_new_or_changed_chunks(tmp_path, embed_server):
    build_embedded(tmp_path, embed_server)
    added = {"id": "birds", "title": "Birds", "text": "Swallows migrate south in autumn."}
    out, report = build_embedded(tmp_path, embed_server, [*DOCS, added])
    assert (report.embedded, report.reused) == (1, 4)
    assert embed_server.stats.embedding_inputs[-1] == "Birds Swallows migrate south in autumn."
    vectors = DenseVectors.load(out, Index.load(out))
    assert vectors is not None and vectors.matrix.shape == (5, 256)


def test_a_server_without_embeddings_is_a_config_error_and_the_previous_index_stays(tmp_path, embed_server):
    out, _ = build_embedded(tmp_path, embed_server)
    before = open_current(out).folder.name
    with FakeOpenAIServer(embeddings=False) as chat_only:
        hook, _ = embed_hook(embedder(chat_only), out)
        changed = [*DOCS[:3], {"id": "fish", "text": "Goldfish remember things for months."}]
        with pytest.raises(ConfigError, match=r"offers no embeddings for model 'fake-embed' \(404"):
            index_paths([write_docs(tmp_path / "docs", changed)], out, extra_files=hook)
    assert open_current(out).folder.name == before
    assert DenseVectors.load(out, Index.load(out)) is not None


def test_a_model_the_server_does_not_serve_is_a_config_error(tmp_path, embed_server):
    hook, _ = embed_hook(embedder(embed_server, "no-such-model"), tmp_path / "index")
    with pytest.raises(ConfigError, match="--embedding-model it serves"):
        index_paths([write_docs(tmp_path / "docs")], tmp_path / "index", extra_files=hook)
    assert not (tmp_path / "index" / "CURRENT").exists()


def test_the_index_command_embeds_and_reports(tmp_path, embed_server, capsys):
    docs = str(write_docs(tmp_path / "docs"))
    out = str(tmp_path / "index")
    argv = ["index", docs, "--out", out, "--embed", "--embedding-model", MODEL, "--base-url", embed_server.base_url]
    assert main(argv) == 0
    assert "dense vectors (fake-embed): 4 chunks embedded, 0 reused, 1 requests" in capsys.readouterr().err
    assert main(["index", docs, "--out", out, "--embed", "--base-url", embed_server.base_url]) == 1
    assert "--embed needs an embedding model" in capsys.readouterr().err
    with FakeOpenAIServer(embeddings=False) as chat_only:
        fresh = str(tmp_path / "fresh")
        argv = ["index", docs, "--out", fresh, "--embed", "--embedding-model", MODEL, "--base-url", chat_only.base_url]
        assert main(argv) == 1
    assert "offers no embeddings" in capsys.readouterr().err


# query time -----------------------------------------------------------------------------------------------


@pytest.fixture
def built(tmp_path: Path, embed_server: FakeOpenAIServer) -> Path:
    return build_embedded(tmp_path, embed_server)[0]


async def test_dense_fusion_finds_a_document_bm25_alone_misses(built, embed_server):
    index = Index.load(built)
    assert index.find_relevant_chunks(MISSED, 3) == []  # no shared term after stemming
    source = open_dense(built, index, config(embed_server), {})
    assert source is not None and source.model == MODEL
    retriever = Retriever(index, extra=[(source, 1.0)])
    meter = Meter()
    try:
        (hits,) = await retriever.asearch([[MISSED]], 3, meter)
        assert hits[0].chunk.doc_id == "union"
        assert meter.llm_calls == 1 and embed_server.stats.embedding_inputs[-1] == MISSED
        (lexical,) = await retriever.asearch([["cats at dusk"]], 3, meter)
        assert lexical[0].chunk.doc_id == "cats"  # BM25 and cosine agree
        await retriever.asearch([[MISSED], ["cats at dusk"], ["dogs"]], 3, meter)
        assert embed_server.stats.embedding_requests == 4  # index, 2 queries, then one request for "dogs" alone
        assert embed_server.stats.embedding_inputs[-1] == "dogs"  # the others came from the query cache
        (without,) = await retriever.asearch([[MISSED]], 3, meter, offline=True)
        assert without == []
    finally:
        await retriever.aclose()


async def test_synchronous_search_on_a_dense_retriever_says_what_to_do(built, embed_server):
    index = Index.load(built)
    retriever = Retriever(index, extra=[(open_dense(built, index, config(embed_server), {}), 1.0)])
    with pytest.raises(ConfigError, match="asearch"):
        retriever.find_relevant_chunks("cats", 3)


def test_a_different_query_model_is_refused(built, embed_server):
    index = Index.load(built)
    with pytest.raises(ConfigError, match=r"embedded with 'fake-embed', but embedding_model is 'other-model'"):
        open_dense(built, index, config(embed_server, embedding_model="other-model"), {})
    vectors = DenseVectors.load(built, index)
    assert vectors is not None
    with pytest.raises(ConfigError, match="cannot be compared"):
        DenseSource(index, vectors, embedder(embed_server, "other-model"))
    assert open_dense(built, index, config(embed_server, embedding_model=MODEL), {}) is not None


async def test_query_vectors_of_another_size_are_refused(built):
    index = Index.load(built)
    with FakeOpenAIServer(embedding_dimensions=64) as other:
        retriever = Retriever(index, extra=[(open_dense(built, index, config(other), {}), 1.0)])
        try:
            with pytest.raises(ConfigError, match="64 dimensions but the index's have 256"):
                await retriever.asearch([["cats"]], 3, Meter())
        finally:
            await retriever.aclose()


def test_dense_knob_on_needs_vectors_and_off_ignores_them(tmp_path, embed_server):
    plain = tmp_path / "plain"
    index_paths([write_docs(tmp_path / "docs")], plain)
    with pytest.raises(ConfigError, match="has no dense vectors.*--embed"):
        open_dense(plain, Index.load(plain), config(embed_server, dense="on"), {})
    assert open_dense(plain, Index.load(plain), config(embed_server), {}) is None  # auto: BM25 only
    out, _ = build_embedded(tmp_path, embed_server)
    assert open_dense(out, Index.load(out), config(embed_server, dense="off"), {}) is None
    with pytest.raises(ConfigError, match="configure an endpoint"):
        open_dense(out, Index.load(out), Config(), {})


def only_union(request):
    if 'id="union' in request.messages[1].content:
        return fused("The labour union organised a strike.")
    return fused("Unrelated.", relevance="irrelevant", support="no", utility=1)


def test_the_engine_fuses_dense_hits_into_its_candidates(tmp_path, embed_server):
    out, _ = build_embedded(tmp_path, embed_server)
    chat = ScriptedChatModel({"retrieve_decide": {"retrieve": "yes", "query": MISSED}, "generate_fused": only_union})
    question = "Were workers organized?"  # the engine searches query + question: still no BM25 term in common
    assert Index.load(out).find_relevant_chunks(f"{MISSED} {question}", 3) == []
    with SelfRAG.from_index(out, config(embed_server, ndocs=2), chat=chat, environ={}) as rag:
        result = rag.answer(question)
    assert result.sources[0].doc_id == "union"
    assert result.trace.steps[0].beams[0].retrieval_note is None
    fused_calls = len(chat.calls_to("generate_fused"))
    assert result.usage.llm_calls == 1 + fused_calls + 1  # decision, candidates, one query embedding
    assert embed_server.stats.requests == 0  # chat went to the scripted model; only embeddings went over HTTP


class FailingEmbedder:
    model = MODEL

    async def embed(self, texts, meter):
        meter.llm_calls += 1
        raise LLMError("the endpoint answered 503: overloaded")


def test_a_failed_query_embedding_falls_back_to_bm25_and_is_recorded(tmp_path, embed_server):
    out, _ = build_embedded(tmp_path, embed_server)
    chat = ScriptedChatModel(
        {"retrieve_decide": {"retrieve": "yes", "query": "cats dusk"}, "generate_fused": fused("Cats hunt at dusk.")}
    )
    with SelfRAG.from_index(
        out, config(embed_server, ndocs=1), chat=chat, environ={}, embedder=FailingEmbedder()
    ) as rag:
        result = rag.answer("When do cats hunt?")
    assert result.sources[0].doc_id == "cats"
    note = result.trace.steps[0].beams[0].retrieval_note
    assert note is not None and "dense search failed, BM25 only" in note and "503" in note


def test_normalise_keeps_zero_rows_zero():
    rows = normalise(np.asarray([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32 and np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
