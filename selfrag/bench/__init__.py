"""Benchmarks of selfrag on public data: datasets, systems, metrics, the runner, plots and judges.

datasets.py   loaders (a folder path in, typed examples and a Chunk corpus out)
systems.py    the system registry (no-retrieval, rag, selfrag greedy/beam/ablations, critic) and what they share
qa.py         the QA systems and critic agreement
claims.py     closed-label claim verification with the paper's closed-set protocol
answer.py     one `answer(system, example, context)` call for every system and task
metrics.py    pure metrics: match, EM, F1, label accuracy, coverage, citations, calibration, bootstrap CIs
cache.py      a ChatModel wrapper caching replies as JSON in SQLite
runner.py     run folders, durable samples.jsonl, resume, locks, progress, exit codes
score.py      recompute metrics from samples.jsonl alone
plots.py      PNG plots (matplotlib, the optional `bench` extra)
growth.py     the memory-growth experiment (corpus grows with distractors)
judge.py      judgment lists, retrieval precision@k and MRR, an optional LLM judge of answers
"""
