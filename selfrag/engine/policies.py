"""The layers that can change an answer beyond the paper's algorithm, as named policies: each has its own switch
in `Config` (of the same name), says what it reads and what it may change, and runs at one hook of the loop
(`retrieval`: which chunks are read; `candidates`: which sentences compete and are kept; `finish`: the answer
after the search). A preset (`config.PRESETS`) sets them all at once; a switch set on its own wins. Each policy's
code is in the module of its name, `engine/<name>.py` (`ground`: `engine/grounding.py`; `supersession`:
`retrieval/supersession.py`).

    POLICIES    every policy, in the order they run
    in_force    the names of the policies that act on an answer under a config (some act only with the evidence
                scorer, whose ratings they were fitted against)
    explain     one line saying which preset, scorer (with its weights file and the model they were fitted for) and
                policies are in force (doctor, the trace)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..config import Config

Hook = Literal["retrieval", "candidates", "finish"]


@dataclass(frozen=True, slots=True)
class Policy:
    """One answer-changing layer: its name (its `Config` switch), where it runs, what it reads and may change,
    and whether it acts only with the evidence scorer."""

    name: str
    hook: Hook
    reads: str
    changes: str
    evidence_only: bool = False
    paper_only: bool = False  # acts only with the paper's scorer (the evidence scorer has its own cut)


POLICIES: tuple[Policy, ...] = (
    Policy("supersession", "retrieval", "document versions", "a superseded chunk yields to its newer version"),
    Policy(
        "filters", "candidates", "the sentence, the draft, the question",
        "declines a sentence restating the question, repeating the draft, about the document, or with no amount "
        "asked; cuts several sentences to one",
    ),
    Policy(
        "ask_plainly", "candidates", "the sentence and the question",
        "a sentence restating the question is asked for once more, the question after the document; restated "
        "again, the chunk's own sentence competes (one more call)",
    ),
    Policy(
        "disowned", "candidates", "the model's own critique of the beam's sentences",
        "sentences the model calls irrelevant and unsupported are declined where nothing else is left, so none "
        "becomes the answer alone", paper_only=True,
    ),
    Policy(
        "ground", "candidates", "the sentence and its chunk",
        "a number, date or name the chunk does not hold: the chunk's sentence instead, or declined", True,
    ),
    Policy("extract", "candidates", "each chunk", "extracts the chunk's own sentence to rate beside the model's", True),
    Policy("hops", "finish", "the sentences written", "adds the sentence of the chunk the kept one names", True),
    Policy("lead", "finish", "the question, the documents read", "prints a short answer first (one more call)"),
    Policy(
        "decide", "finish", "the clauses of the documents read",
        "proposes the short answer with no call, checked against the kept sentences (denials.refuted)",
    ),
    Policy(
        "confirm", "finish", "the decided answer, the clause it rests on, the question",
        "a decided short answer prints only where the model, asked about that clause, agrees (one call); else the "
        "model's own short answer, or \"The documents don't settle it.\"",
    ),
    Policy(
        "denials", "finish", "the model's short answer, the kept sentences, the documents read",
        "the model's own \"Yes.\" or chosen option that a sentence denies prints as \"The documents don't settle "
        "it.\" (no call)",
    ),
    Policy(
        "check", "finish", "the answer and the question",
        "the answer's confidence reads the model's verdict that it gives what the question asks, where the "
        "weights read it (one call); the answer itself is unchanged", True,
    ),
)  # fmt: skip
NAMES = tuple(policy.name for policy in POLICIES)


def in_force(config: Config, *, evidence: bool, checks: bool = False) -> tuple[str, ...]:
    """The policies that act on an answer: switched on, and (for those fitted on its ratings) under the evidence
    scorer (`evidence`); deciding only under the short answer, confirming only a decision and only with an
    endpoint's model (the embedded one confirms where its counts beat a rule's: none with the shipped weights);
    checking only where the weights read the check (`checks`: `CriticModel.reads_check`)."""
    on = [
        p.name
        for p in POLICIES
        if getattr(config, p.name) and (evidence or not p.evidence_only) and not (evidence and p.paper_only)
    ]
    on = [name for name in on if name not in ("decide", "denials") or "lead" in on]
    on = [name for name in on if name != "check" or checks]
    return tuple(name for name in on if name != "confirm" or ("decide" in on and not config.embedded))


def explain(config: Config, *, evidence: bool, fitted_for: str = "", checks: bool = False) -> str:
    """Which preset, scorer and policies are in force, in one line; with the evidence scorer, its weights file and
    the model it was fitted for (`fitted_for`, `engine.fitted.FittedFor.describe`)."""
    policies = ", ".join(in_force(config, evidence=evidence, checks=checks)) or "none (the paper's algorithm only)"
    weights = config.scorer_weights or "shipped"
    scorer = (
        f"evidence (weights {weights}{f', fitted for {fitted_for}' if fitted_for else ''})" if evidence else "paper"
    )
    return f"preset {config.preset}, scorer {scorer}; policies in force: {policies}"
