"""One call for every system and task: `await answer(system, example, context) -> Outcome`."""

from __future__ import annotations

from . import claims, qa
from .datasets import Example
from .systems import Context, Outcome, System


async def answer(system: System, example: Example, ctx: Context) -> Outcome:
    if system.kind == "critic":
        return await qa.critic_agreement(system, example, ctx)
    if ctx.dataset.task == "claim":
        if system.kind == "no-retrieval":
            return await claims.direct(system, example, ctx)
        if system.kind == "rag":
            return await claims.rag(system, example, ctx)
        return await claims.closed_set(system, example, ctx)
    if system.kind == "no-retrieval":
        return await qa.qa_direct(system, example, ctx)
    if system.kind == "rag":
        return await qa.qa_rag(system, example, ctx)
    return await qa.qa_selfrag(system, example, ctx)
