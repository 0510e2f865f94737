"""Conversation history within its budget: the chat's `Conversation.render` and the API's `conversation=` text
both keep the most recent 4,000 characters, dropping the oldest turns first."""

from __future__ import annotations

import pytest
from helpers import fused, plain
from hypothesis import given, settings
from hypothesis import strategies as st

from selfrag.conversation import MAX_HISTORY_CHARS, Conversation, clip_history, questions_asked, small_talk
from selfrag.engine.questions import follows_on
from selfrag.errors import InputError

Q = "How long are refunds accepted?"
NO_RETRIEVAL = {"retrieve_decide": {"retrieve": "no", "query": ""}, "generate_plain": plain("Thirty days.")}


def talk(n: int, size: int) -> Conversation:
    conversation = Conversation()
    for i in range(n):
        conversation = conversation.add(f"question {i} " + "q" * size, f"answer {i} " + "a" * size)
    return conversation


def test_render_keeps_the_newest_whole_turns_and_drops_the_oldest_first() -> None:
    conversation = talk(6, 450)  # about 930 characters per turn: four fit in 4,000
    rendered = conversation.render()
    assert len(rendered) <= MAX_HISTORY_CHARS
    kept = [line.split()[2] for line in rendered.splitlines() if line.startswith("User: ")]
    assert kept == ["2", "3", "4", "5"]  # turns 0 and 1 dropped, order kept
    assert rendered.startswith("User: question 2") and rendered.endswith("answer 5 " + "a" * 450)
    assert talk(2, 10).render() == "\n".join(
        [f"User: question {i} {'q' * 10}\nAssistant: answer {i} {'a' * 10}" for i in range(2)]
    )  # under the budget: everything, unchanged
    assert Conversation().render() == ""


def test_a_newest_turn_longer_than_the_budget_keeps_its_most_recent_part() -> None:
    rendered = talk(3, 100).add("long question", "x" * 5_000 + " the end.").render()
    assert len(rendered) <= MAX_HISTORY_CHARS and rendered.endswith("x the end.")
    assert "question 2" not in rendered


def test_clip_history_cuts_at_a_turn_then_a_line_then_anywhere() -> None:
    assert clip_history("short history") == "short history"
    text = talk(10, 450).render(max_chars=10**9)
    clipped = clip_history(text)
    assert len(clipped) <= MAX_HISTORY_CHARS and text.endswith(clipped) and clipped.startswith("User: question 6")
    lines = "\n".join(f"line {i:04d}" for i in range(1_000))  # no turns: whole lines
    assert clip_history(lines, 100) == "\n".join(f"line {i:04d}" for i in range(990, 1_000))  # 99 characters
    assert clip_history("z" * 5_000 + "!", 10) == "z" * 9 + "!"  # one long line: the last characters
    exact = "User: old\nUser: new"
    assert clip_history(exact, len("User: new")) == "User: new"  # a turn starting right at the cut is kept


TEXT = st.text(st.characters(blacklist_characters=":", blacklist_categories=("Cs",)), max_size=1_500)


@settings(max_examples=200, deadline=None, database=None)
@given(turns=st.lists(st.tuples(TEXT, TEXT), max_size=12), budget=st.integers(50, 5_000))
def test_clipping_the_rendered_text_keeps_the_same_turns_as_render(turns: list[tuple[str, str]], budget: int) -> None:
    conversation = Conversation()
    for question, answer in turns:
        conversation = conversation.add(question, answer)
    full = conversation.render(max_chars=10**9)
    clipped = clip_history(full, budget)
    assert len(clipped) <= budget and full.endswith(clipped)
    rendered = conversation.render(max_chars=budget)
    if rendered.startswith("User: "):  # whole turns fitted: the text form keeps exactly those
        assert clipped == rendered


def test_the_api_sends_only_the_most_recent_4000_characters_of_a_conversation(engine) -> None:  # type: ignore[no-untyped-def]
    history = "User: OLDEST question\nAssistant: the first answer\n" + talk(12, 450).render(max_chars=10**9)
    history += "\nUser: NEWEST question\nAssistant: the latest answer"
    assert len(history) > 10_000
    rag = engine(NO_RETRIEVAL, lead=False)
    assert rag.answer(Q, conversation=history).answer == "Thirty days."
    (decide,) = rag.chat.calls_to("retrieve_decide")
    prompt = "\n".join(m.content for m in decide.messages)
    kept = clip_history(history)
    assert kept in prompt and "NEWEST question" in prompt and "OLDEST" not in prompt
    assert len(kept) <= MAX_HISTORY_CHARS and kept.startswith("User: ")
    for call in rag.chat.calls:  # no prompt carries more of the history
        assert "OLDEST" not in "\n".join(m.content for m in call.messages)


def test_a_conversation_that_is_not_text_is_refused_before_any_call(engine) -> None:  # type: ignore[no-untyped-def]
    rag = engine(NO_RETRIEVAL)
    with pytest.raises(InputError, match="conversation must be text"):
        rag.answer(Q, conversation=["User: hi"])  # type: ignore[arg-type]
    assert rag.chat.calls == []


@pytest.mark.parametrize(
    ("message", "reply"),
    [
        ("Hi there!", "Hello. Ask me a question about the documents."),
        ("Good morning all", "Hello. Ask me a question about the documents."),
        ("Hello! Thanks for the help earlier.", "You're welcome."),
        ("OK thanks!", "You're welcome."),
        ("thanks, bye", "You're welcome. Goodbye."),
        ("Bye for now", "Goodbye."),
        ("okay", "Ask me another question whenever you like."),
        # anything to look up goes to the search
        ("Hi, how many days for refunds?", None),
        ("Thanks for telling me what the late fee is", None),  # more than a few words of thanks
        ("Thanks for the answer and what about members", None),
        ("Is it ok", None),
        ("Great bikes", None),
        ("hi?", None),  # a question mark asks something
        ("", None),
    ],
)
def test_small_talk_is_answered_and_anything_else_is_not(message, reply):
    assert small_talk(message) == reply


HELMETS = "User: Is a helmet required?\nAssistant: No [1]."


def test_the_questions_asked_are_read_back_from_a_rendered_conversation() -> None:
    talk = Conversation().add("Is a helmet required?", "No [1].").add("Where can I borrow\none?", "At the Depot.")
    assert questions_asked(talk.render()) == ["Is a helmet required?", "Where can I borrow one?"]
    assert questions_asked(clip_history(talk.render(), 60)) == ["Where can I borrow one?"]  # the turn that fits
    assert questions_asked("") == [] and questions_asked("(none)") == []


@pytest.mark.parametrize(
    ("question", "history", "earlier"),
    [
        ("Where can I borrow one?", HELMETS, "Is a helmet required?"),  # points back, names one thing
        ("How much does it cost?", HELMETS, "Is a helmet required?"),
        ("And for children?", HELMETS, "Is a helmet required?"),  # opens as a continuation
        ("What about e-bikes?", HELMETS, "Is a helmet required?"),
        ("Why?", HELMETS, "Is a helmet required?"),  # names nothing of its own
        ("For how long?", HELMETS, "Is a helmet required?"),  # a phrase without its subject
        # a follow-up of a follow-up goes back to the question both go on from; a multi-line question is one
        ("For how long can I keep it?", f"{HELMETS}\nUser: Where can I borrow\none?\nAssistant: At the Depot.",
         "Is a helmet required? Where can I borrow one?"),
        # standing on its own: nothing added
        ("How much is a day pass?", HELMETS, ""),
        ("Is there a student discount?", HELMETS, ""),  # "there" points nowhere
        ("In what year was the co-op founded?", HELMETS, ""),  # a preposition, then a question of its own
        ("What is the fee that applies to late returns of e-bikes?", HELMETS, ""),  # "that" with four things named
        ("Where can I borrow one?", "", ""),  # no conversation
        ("Where can I borrow one?", "(none)", ""),
    ],
)  # fmt: skip
def test_a_follow_up_is_read_with_the_question_it_goes_on_from(question, history, earlier):
    assert follows_on(question, history) == earlier


def test_a_follow_up_searches_with_the_question_it_goes_on_from(engine) -> None:  # type: ignore[no-untyped-def]
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": ""},
        "generate_fused": fused("For two years."),
        "generate_plain": plain("As long as you like."),
    }
    history = "User: What does the warranty cover?\nAssistant: Manufacturing defects [1]."
    followed = engine(script, ndocs=1, lead=False).answer("For how long?", conversation=history)
    (beam,) = followed.trace.steps[0].beams
    assert beam.chunks == ["warranty.md#0"] and "follow-up" in (beam.retrieval_note or "")
    assert followed.answer == "For two years [1]."
    alone = engine(script, ndocs=1, lead=False).answer(
        "For how long?"
    )  # no conversation: the bare question finds nothing
    assert alone.trace.steps[0].beams[0].chunks == [] and alone.trace.steps[0].beams[0].retrieval_note is None
