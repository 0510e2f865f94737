"""Retrieval: reading a corpus, cutting it into chunks, the BM25 index on disk, dense vectors, and the
strategies that turn ranked lists into the chunks the engine writes from."""
