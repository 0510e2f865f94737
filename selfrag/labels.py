"""Reflection labels of Self-RAG as enums, with the paper's token for each.

The spelling of every value is chosen so the first tokens of one label set differ
(yes / no / continue; relevant / irrelevant; fully / partially / no; digits 1-5),
which lets label probabilities be read off the first token of the value.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Decision(StrEnum):
    """[Retrieval] / [No Retrieval] / [Continue to Use Evidence]: retrieve before writing the next segment?"""

    YES = "yes"
    NO = "no"
    CONTINUE = "continue"


class QuestionKind(StrEnum):
    """What a question asks for. The regexes (`engine.questions`) know the first three; a model that reads may
    also say a list, an explanation or other. Only the `short` kinds get a short answer printed first."""

    YES_NO = "yes_no"
    CHOICE = "choice"  # one of the options the question names
    FACTOID = "factoid"  # one value: a name, a number, a date
    LIST = "list"
    EXPLANATION = "explanation"
    OTHER = "other"

    @property
    def short(self) -> bool:
        return self in (QuestionKind.YES_NO, QuestionKind.CHOICE, QuestionKind.FACTOID)


class Relevance(StrEnum):
    """[Relevant] / [Irrelevant] (ISREL): does the chunk help answer the question?"""

    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"


class Support(StrEnum):
    """[Fully supported] / [Partially supported] / [No support / Contradictory] (ISSUP)."""

    FULLY = "fully"
    PARTIALLY = "partially"
    NO = "no"


class Utility(IntEnum):
    """[Utility:1] ... [Utility:5] (ISUSE): how useful the draft is as an answer, whatever its truth."""

    U1 = 1
    U2 = 2
    U3 = 3
    U4 = 4
    U5 = 5


class Mode(StrEnum):
    """When to retrieve: the soft rule (adaptive), at every step (always), or never."""

    ADAPTIVE = "adaptive"
    ALWAYS = "always"
    NEVER = "never"


class CriticMode(StrEnum):
    """fused: one call writes the sentence and its labels; separate: a second call judges each sentence."""

    FUSED = "fused"
    SEPARATE = "separate"
