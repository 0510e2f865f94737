"""The steps of `critic.tidy`, each on its own (pure functions, no model), and the order `tidy` runs them in."""

from __future__ import annotations

from dataclasses import replace

from selfrag.engine.critic import outdated, tidy
from selfrag.engine.filters import cut_to_one, degeneracy_of, unframe
from selfrag.engine.grounding import grounded, unstated_verdict
from selfrag.labels import Relevance, Support, Utility
from selfrag.schema import Beam, Candidate, Chunk, Critique, Flag, Segment, Version

CRITIQUE = Critique(
    utility={u: float(u is Utility.U5) for u in Utility},
    is_final=False,
    relevance={Relevance.RELEVANT: 1.0, Relevance.IRRELEVANT: 0.0},
    support={Support.FULLY: 1.0, Support.PARTIALLY: 0.0, Support.NO: 0.0},
)
MADIGAN = Chunk(
    "madigan.md", 0, "Frederik Madigan was born in 1850 in Copenhagen. He painted harbours and ships for forty years."
)
OLD = Chunk("old.md", 0, "Madigan was born in 1849.", version=Version(False, "2001", newer=("madigan.md",)))
BORN = "When was Frederik Madigan born?"
PAINTER = "Was Frederik Madigan a painter?"
THREE = "Madigan was born in 1850. He painted ships. He lived in Copenhagen."


def written(text: str, chunk: Chunk | None = MADIGAN, *, draft: tuple[str, ...] = (), **fields) -> Candidate:
    """A candidate written from `chunk` (the only chunk its beam was given) after `draft`."""
    fields.setdefault("evidence", (chunk,) if chunk else ())
    beam = Beam("0", segments=tuple(Segment(s, CRITIQUE) for s in draft))
    return Candidate(beam, 0, chunk=chunk, text=text, critique=fields.pop("critique", CRITIQUE), **fields)


def test_a_sentence_is_outdated_only_where_the_version_that_replaces_it_was_given_too():
    assert outdated(written("Madigan was born in 1849.", OLD, evidence=(OLD, MADIGAN)))
    assert not outdated(written("Madigan was born in 1849.", OLD, evidence=(OLD,)))  # nothing newer in hand
    assert not outdated(written("Madigan was born in 1850."))  # no versions
    assert not outdated(written("Madigan was born in 1850.", None))  # written without documents


def test_unframe_takes_a_reports_frame_off_and_says_whether_a_topic_is_left():
    candidate, topic = unframe(written("The document states that Madigan was born in 1850."))
    assert (candidate.text, topic) == ("Madigan was born in 1850.", False)
    assert candidate.chunk is MADIGAN and candidate.flag is None  # the sentence changes, nothing else
    candidate, topic = unframe(written("The document is about Madigan's paintings."))
    assert (candidate.text, topic) == ("Madigan's paintings.", True)
    same = written("Madigan was born in 1850.")
    assert unframe(same) == (same, False)


def test_degeneracy_of_reads_the_candidates_documents_and_its_kind_of_segment():
    assert degeneracy_of(written(BORN), BORN, []) is Flag.RESTATES_QUESTION
    assert degeneracy_of(written("Madigan was born in 1850."), BORN, ["Madigan was born in 1850."]) is (
        Flag.REPEATS_DRAFT
    )
    # a document's id as the prompt shows it, only for the documents this candidate was given
    assert degeneracy_of(written("Madigan was born in 1850, see madigan.md #0."), BORN, []) is Flag.ABOUT_THE_DOCUMENT
    assert degeneracy_of(written("Madigan was born in 1850, see other.md #0."), BORN, []) is None
    assert degeneracy_of(written(THREE), BORN, []) is Flag.SEVERAL_SENTENCES
    checkpoint = replace(CRITIQUE, estimator="reflection-labels")  # a Self-RAG segment is one unit
    assert degeneracy_of(written(THREE, critique=checkpoint), BORN, []) is None


def test_cut_to_one_keeps_the_sentence_worth_keeping_and_says_what_is_wrong_with_it():
    cut, flaw = cut_to_one(written(THREE), BORN, [])
    assert (cut.text, cut.flag, flaw) == ("Madigan was born in 1850.", Flag.SEVERAL_SENTENCES, None)
    # the one kept names its document as the prompt shows it: cut, and declined all the same
    cut, flaw = cut_to_one(
        written("Madigan was born in 1850 per madigan.md #0. He painted ships. He lived here."), BORN, []
    )
    assert (cut.text, flaw) == ("Madigan was born in 1850 per madigan.md #0.", Flag.ABOUT_THE_DOCUMENT)


def test_grounded_quotes_the_chunk_for_what_it_does_not_hold_or_declines():
    quoted, flaw = grounded(written("Madigan was born in 1985."), BORN, [])
    assert flaw is None and quoted.flag is Flag.QUOTED
    assert (quoted.text, quoted.written) == (
        "Frederik Madigan was born in 1850 in Copenhagen.",
        "Madigan was born in 1985.",
    )
    assert grounded(written("The museum closes at 5 pm on Sundays."), BORN, [])[1] is Flag.UNSTATED  # nothing to quote
    held = written("Madigan was born in 1850.")
    assert grounded(held, BORN, []) == (held, None)
    without = written("Madigan was born in 1985.", None)  # no chunk: nothing to hold it to
    assert grounded(without, BORN, []) == (without, None)


def test_a_bare_verdict_to_a_yes_no_question_is_unstated():
    assert unstated_verdict(written("Yes."), PAINTER) is Flag.UNSTATED
    assert unstated_verdict(written("No, he was not."), PAINTER) is Flag.UNSTATED
    assert unstated_verdict(written("Yes, he painted ships."), PAINTER) is None  # says what a document can hold
    assert unstated_verdict(written("Yes."), BORN) is None  # not a yes/no question


def test_tidy_runs_the_steps_in_order_and_the_first_flaw_ends_them():
    on = {"ground": True, "verdicts": False}
    superseded = tidy(written("The document states that it was 1849.", OLD, evidence=(OLD, MADIGAN)), BORN, **on)
    assert superseded.flag is Flag.SUPERSEDED and superseded.text.startswith("The document")  # nothing else ran
    repeated = written("Madigan was born in 1985.", draft=("Madigan was born in 1985.",))
    assert tidy(repeated, BORN, **on).flag is Flag.REPEATS_DRAFT  # declined before it is grounded (quoted)
    framed = tidy(written("The document states that Madigan was born in 1985."), BORN, **on)
    assert (framed.text, framed.flag) == ("Frederik Madigan was born in 1850 in Copenhagen.", Flag.QUOTED)
    died = tidy(written("Madigan was born in 1850. He painted ships. He died in 1920."), BORN, **on)
    assert (died.text, died.flag) == ("Madigan was born in 1850.", Flag.SEVERAL_SENTENCES)  # cut, then grounded
    assert tidy(written("Yes."), PAINTER, **on).flag is Flag.UNSTATED
    assert tidy(written("Yes."), PAINTER, ground=True, verdicts=True).flag is None  # the model's verdict is taken


def test_tidy_without_filters_cuts_and_declines_nothing_as_degenerate():
    framed = written("The document states that Madigan was born in 1850.")
    assert tidy(framed, BORN, ground=False, verdicts=True, filters=False) == framed  # no step runs
    kept = tidy(written(THREE), BORN, ground=True, verdicts=True, filters=False)
    assert (kept.text, kept.flag) == (THREE, None)  # not cut; grounded: its chunk holds it
    assert tidy(written(BORN), BORN, ground=True, verdicts=True, filters=False).flag is None
