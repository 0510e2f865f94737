"""The `confirm` policy: a decided short answer (`decide`) prints only where the model, asked about the clause that
decided it, agrees (one closed-set call, `prompts/confirm_decision.toml`, beside the short-answer call); else the
model's own short answer stands, or "The documents don't settle it.". An endpoint's model only: the embedded one
where its own training counts beat the rule's. `lead` and the controller (for an answer that stands alone) ask it
(`Config.confirm`). Why: docs/decisions.md (`confirm`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from ..errors import FatalLLMError, LLMError, PromptNotSupportedError
from ..labels import QuestionKind
from ..llm.replies import agreed
from ..schema import Beam, Chunk
from ..text import neutralise_document
from .context import Run, run_all
from .state import UNSETTLED, Lead


def confirms(run: Run, kind: QuestionKind, rule: str) -> bool:
    """A decision waits for the model's agreement (`Config.confirm`): any endpoint's model; the embedded one only
    where its own training counts of the kind beat the rule's (`Rater.reads_better`)."""
    if not run.config.confirm:
        return False
    return not run.config.embedded or run.deps.rater.reads_better(kind, rule)


async def confirmed(
    run: Run, best: Beam, kind: QuestionKind, chunks: list[Chunk], decided: Lead, own: Coroutine[Any, Any, Lead | None]
) -> Lead | None:
    """The decided lead where the model, asked about the clause that decided it, agrees; else the model's own
    short answer (`own`: the lead's call asking it, run at the same time), or "The documents don't settle it." for
    a yes/no or choice. Where the model reads the question as another kind, the rule read another question: the
    model's reading stands."""
    clause = decided.clause or " ".join(c.text for c in decided.cites) or " ".join(c.text for c in chunks[:2])
    asking = [confirm(run, f"confirm{best.id}", clause, decided.text or ""), own]
    verdict, lead = await run_all(asking)
    agrees, asked = verdict
    if agrees is None:  # the model cannot be asked (a Self-RAG checkpoint): the decision stands, as without confirm
        return replace(decided, confirm=asked)
    reply = lead.reply if lead else None
    read_as = lead.kind if lead and lead.kind else kind
    if read_as != kind:
        why = f"{decided.text} by {decided.source}: the model reads a {read_as} question"
        return replace(lead, refused=why, confirm=asked) if lead else None
    if agrees:
        return replace(decided, reply=reply, confirm=asked)
    why = f"{decided.text} by {decided.source}: the model does not agree ({asked})"
    if lead is None or (lead.text is None and kind in (QuestionKind.YES_NO, QuestionKind.CHOICE)):
        return Lead(UNSETTLED, "model", reply, refused=why, confirm=asked)
    return replace(lead, refused=why, confirm=asked)


async def confirm(run: Run, key: str, clause: str, proposal: str) -> tuple[bool | None, str]:
    """One closed-set call: does `clause` give `proposal` as the answer? (agrees, what was asked and replied, for
    the trace); a failed call agrees with nothing; None where the model cannot pose the prompt (it does not read
    so: the decision stands)."""
    asked = f'"{proposal}" from "{" ".join(clause.split())[:300]}"'
    nonce = run.document_values(key, Chunk("clause", 0, clause))["nonce"]
    try:
        parsed = await run.ask(
            "confirm_decision",
            question=run.question,
            nonce=nonce,
            clause=neutralise_document(clause[: run.config.max_chunk_chars], nonce),
            proposal=proposal,
        )
    except FatalLLMError:
        raise
    except PromptNotSupportedError:
        return None, f"{asked}: not asked (the model cannot pose confirm_decision)"
    except LLMError as failed:
        return False, f"{asked}: no reply ({type(failed).__name__})"
    agrees, p_agree = agreed(parsed)
    verdict = getattr(parsed.value, "verdict", "?")
    said = f"{verdict} (P(agree) {p_agree:.2f})" if p_agree is not None else verdict
    return agrees, f"{asked}: {said}"
