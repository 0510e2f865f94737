"""Retrieval: reading a corpus, cutting it into chunks, the BM25 index on disk, dense vectors, and the
strategies that turn ranked lists into the chunks the engine writes from.

In pipeline order: corpus (find and read files) → formats (text, Markdown, HTML, JSONL, PDF) → chunking →
ingest (incremental builds) → store and records (the index folder, its generations and files) → index (BM25)
→ embeddings and dense (vectors beside the index) → fusion and strategies (ranked lists to hits); versions and
supersession (which document is current), staleness (which indexed files changed since).

The engine imports only the names below; everything else is for the CLI, the benchmarks and your own code.
Nothing here imports bm25s until an index is opened.
"""

from .strategies import FindsChunks, RetrievalSettings, Retriever, Searcher, as_searcher
from .supersession import describe_version

__all__ = ["FindsChunks", "RetrievalSettings", "Retriever", "Searcher", "as_searcher", "describe_version"]
