"""The `check` policy: the model's own verdict that the answer gives what the question asks, an input of the
answer's confidence, never a change to the answer (one closed-set call, `prompts/check_answer.toml`).

A sentence can be supported by its chunk and about the question's subject without answering it ("The Adelaide
Lightning is a professional women's basketball team" for the year it was founded); the critique's labels rate the
sentence against its chunk, not against what was asked. Asked only where the weights' answered head reads the
verdict (`CriticModel.reads_check`): `selfrag calibrate` asks it of every answer and keeps it where it predicts
right answers it was not fitted on. Why: docs/decisions.md (`check`).
"""

from __future__ import annotations

import asyncio

from ..errors import MODEL_FAILURES, BudgetError, FatalLLMError, LLMError, PromptNotSupportedError
from ..llm.replies import verdict_credit
from ..schema import Chunk
from ..text import neutralise_document
from .context import Run
from .state import Checked


def asks(run: Run) -> bool:
    """The check is asked: switched on (`Config.check`) and read by the weights' answered head."""
    return bool(run.config.check) and run.deps.rater.reads_check


async def check(run: Run, answer: str, deadline: float | None = None) -> Checked:
    """One closed-set call: does `answer` give what the question asks? A failed call ("no reply"), a reply that
    never validates ("no usable reply"), a spent budget or deadline, or a model that cannot pose the prompt gives
    no verdict (the confidence reads `calibration.NO_CHECK`)."""
    nonce = run.document_values("check", Chunk("answer", 0, answer))["nonce"]
    try:
        async with asyncio.timeout_at(deadline):
            parsed = await run.ask(
                "check_answer", question=run.question, nonce=nonce, answer=neutralise_document(answer, nonce)
            )
    except FatalLLMError:
        raise
    except PromptNotSupportedError:
        return Checked(None, "not asked (the model cannot pose check_answer)")
    except (BudgetError, TimeoutError):
        return Checked(None, "no reply (budget or deadline)")
    except MODEL_FAILURES as unusable:  # asking again gets the same: the model's, not the endpoint's
        return Checked(None, f"no usable reply ({type(unusable).__name__})")
    except LLMError as failed:
        return Checked(None, f"no reply ({type(failed).__name__})", outage=True)
    credit = verdict_credit(parsed)
    return Checked(credit, f"{getattr(parsed.value, 'verdict', '?')} (credit {credit:.2f})")
