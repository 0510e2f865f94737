"""⑥ The short answer first: a yes/no or factoid question gets its answer stated plainly before the supported
sentences and their citations (one more call, after the search).

    question_kind   yes_no ("Is ...?", "Does ...?") | factoid ("Who ...?", "When ...?", "How many ...?") | None
    lead_text       the model's short answer, checked: yes / no / "The documents don't settle it." for yes/no;
                    for a factoid, only words the answer's own sentences contain (it can add no fact of its own)

A question with a longer answer (why, how, explain) gets no lead. A failed or unusable lead call leaves the
answer as the search wrote it: the lead is a courtesy, never a reason to fail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import FatalLLMError, LLMError, PromptNotSupportedError
from ..schema import Segment
from .context import Run
from .evidence import asks_yes_no, terms
from .replies import LeadReply

UNSETTLED = "The documents don't settle it."
MAX_LEAD_WORDS = 12
_FACTOID = re.compile(
    r"^\s*(?:who|whom|whose|when|where|which|how (?:many|much|long|old|far|often|big|tall|large))\b"
    r"|^\s*what (?:year|date|day|time|city|country|town|name|number|percentage|amount|age|is the name)\b",
    re.I,
)


def question_kind(question: str) -> str | None:
    """yes_no, factoid, or None for a question whose answer is an explanation."""
    if asks_yes_no(question):
        return "yes_no"
    if _FACTOID.match(question):
        return "factoid"
    return None


def lead_text(kind: str, answer: str, sentences: Sequence[str]) -> str | None:
    """The lead to print, or None when the model's short answer cannot be used as one."""
    said = " ".join(answer.split()).strip(" .!\"'")
    word = said.lower().split(maxsplit=1)[0].strip(",.;:!") if said else ""
    if kind == "yes_no":
        if word in ("yes", "no"):
            return f"{word.capitalize()}."
        return UNSETTLED
    if not said or said.lower().startswith("not settled") or len(said.split()) > MAX_LEAD_WORDS:
        return None
    backed = terms(" ".join(sentences))
    if not terms(said) or not terms(said) <= backed:
        return None  # a name or number the answer's sentences do not hold is not stated as the answer
    return f"{said[0].upper()}{said[1:]}."


async def write_lead(run: Run, segments: Sequence[Segment]) -> str | None:
    """One call for the lead of a short-answer question (None: no lead for this question)."""
    kind = question_kind(run.question)
    if kind is None or not segments or not run.config.lead:
        return None
    numbered = "\n".join(f"{n}. {segment.text}" for n, segment in enumerate(segments, 1))
    try:
        parsed = await run.ask(
            "answer_lead",
            logprobs=False,
            question=run.question,
            kind="yes/no" if kind == "yes_no" else "factoid",
            sentences=numbered,
        )
    except FatalLLMError:
        raise
    except (LLMError, PromptNotSupportedError):  # a model that cannot pose the lead prompt gets no lead
        return None
    assert isinstance(parsed.value, LeadReply)
    return lead_text(kind, parsed.value.answer, [s.text for s in segments])
