"""Quotation marks between the engine and a model: shown curly, read back straight (`engine.context.Run.ask`)."""

from __future__ import annotations

import pytest
from helpers import fused

from selfrag import Chunk
from selfrag.engine.report import with_marker
from selfrag.llm.base import ChatRequest

NOVEL = [
    Chunk(
        "cat.md",
        0,
        'The film "That Darn Cat!" was based on the 1963 novel "Undercover Cat" by Gordon and Mildred Gordon.',
    )
]
Q = 'On which novel is "That Darn Cat!" based?'


def test_straight_quotes_reach_the_model_curly_and_its_reply_comes_back_straight(engine):
    shown: list[ChatRequest] = []

    def write(request: ChatRequest) -> dict:
        shown.append(request)
        return fused(
            "The film was based on the 1963 novel “Undercover Cat” by Gordon and Mildred Gordon.",
            evidence="the 1963 novel “Undercover Cat”",
        )

    rag = engine({"retrieve_decide": {"retrieve": "yes", "query": "novel"}, "generate_fused": write}, chunks=NOVEL)
    result = rag.answer(Q)
    prompt = shown[0].messages[1].content
    assert "the 1963 novel “Undercover Cat” by" in prompt  # the document
    assert "On which novel is “That Darn Cat!” based?" in prompt  # the question
    assert '<document nonce="' in prompt  # the block's own attributes keep their straight quotes
    assert result.answer == 'The film was based on the 1963 novel "Undercover Cat" by Gordon and Mildred Gordon [1].'
    candidate = result.trace.steps[0].candidates[0]
    assert candidate.status == "kept"  # the evidence quote, read back straight, was found in the chunk


def test_the_draft_and_the_sentence_a_critic_judges_are_shown_curly_too(engine):
    rag = engine(
        {
            "retrieve_decide": {"retrieve": "yes", "query": "novel"},
            "generate_segment": {"sentence": 'It was based on "Undercover Cat".'},
            "critique_candidate": {
                "relevance": "relevant",
                "evidence": "“Undercover Cat”",
                "support": "fully",
                "utility": 5,
                "is_final": True,
                "retrieve_next": "no",
                "next_query": "",
            },
        },
        chunks=NOVEL,
        critic="separate",
    )
    result = rag.answer(Q)
    judged = rag.chat.calls_to("critique_candidate")[0].messages[1].content
    assert "It was based on “Undercover Cat”." in judged
    assert result.answer == 'It was based on "Undercover Cat" [1].'  # the marker after the closing quote


@pytest.mark.parametrize(
    ("sentence", "marked"),
    [
        ('It was based on the novel "Undercover Cat".', 'It was based on the novel "Undercover Cat" [1].'),
        ("He played for the National Football League (NFL).", "He played for the National Football League (NFL) [1]."),
        ("Paris is the capital.", "Paris is the capital [1]."),
        ("Is it?!", "Is it [1]?!"),
    ],
)
def test_a_citation_marker_follows_a_closing_quote_or_bracket_and_precedes_the_full_stop(sentence, marked):
    assert with_marker(sentence, 1) == marked
