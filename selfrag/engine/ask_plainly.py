"""The `ask_plainly` policy: a sentence that restated the question is asked for once more, with the question after
the document and a plain instruction to answer it (one more call, `generator.ask_plainly`); restated again, or
its call failed, the chunk's own best sentence competes (`extract`). `critic.assess` runs it after the filters
(`Config.ask_plainly`). Why: docs/decisions.md (`ask_plainly`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ..schema import Candidate, Flag
from . import generator
from .context import Run, run_all
from .extract import extract

Judge = Callable[[Sequence[Candidate], Run], Awaitable[list[Candidate]]]  # the critic's labels, where none came


async def asked_again(
    candidates: Sequence[Candidate], run: Run, *, judged: Judge, tidied: Callable[[Candidate], Candidate]
) -> list[Candidate]:
    """For each sentence written from a chunk that restated the question, one more asked for plainly
    (`generator.ask_plainly`: the question after the document), judged and tidied as the first (`judged` and
    `tidied`: the critic stage's own, passed in by `critic.assess`); where that one is degenerate too or its call
    failed, the chunk's own best sentence competes (`extract`, a chunk of one sentence included, with any scorer),
    with the latest critique of its chunk. A Self-RAG checkpoint's segment is not asked again: its prompt is
    fixed."""
    restating = [
        c
        for c in candidates
        if c.flag is Flag.RESTATES_QUESTION
        and c.chunk is not None
        and not c.pooled
        and c.critique is not None
        and not c.critique.estimator.startswith("reflection")
    ]
    if not restating:
        return []
    run.meter.rounds += 1
    written = await judged(await run_all(generator.ask_plainly(c, run) for c in restating), run)
    out = []
    for first, again in zip(restating, written, strict=True):
        again = tidied(again)
        out.append(again)
        if not generator.usable(again):
            labelled = again.critique is not None and again.critique.support is not None
            out += extract([again if labelled else first], run.question, alone=True)
    return out
