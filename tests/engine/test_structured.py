"""Parsing structured replies and re-asking on invalid output, against the scripted fake."""

from __future__ import annotations

import pytest

from selfrag.errors import CritiqueError
from selfrag.llm.base import ChatRequest, Message
from selfrag.llm.structured import ask, extract_json
from selfrag.replies import DecideReply, FusedReply
from selfrag.schema import Meter
from selfrag.testing import Scripted, ScriptedChatModel

GOOD = '{"retrieve": "yes", "query": "refund days"}'


def request(schema=DecideReply):
    return ChatRequest("retrieve_decide", (Message("system", "s"), Message("user", "u")), schema)


@pytest.mark.parametrize("wrapped", [GOOD, f"```json\n{GOOD}\n```", f"Sure! {GOOD} Hope it helps", f"  {GOOD}\n"])
def test_extract_json_strips_fences_and_prose(wrapped):
    assert DecideReply.model_validate_json(extract_json(wrapped)).query == "refund days"


async def test_valid_reply_needs_one_call():
    model = ScriptedChatModel({"retrieve_decide": GOOD})
    parsed = await ask(model, request(), meter := Meter())
    assert parsed.value.query == "refund days" and parsed.attempts == 1
    assert meter.llm_calls == 1 and meter.reasks == 0


async def test_malformed_reply_is_reasked_once_with_the_reason():
    model = ScriptedChatModel({"retrieve_decide": ['{"retrieve": "yes"', GOOD]})
    parsed = await ask(model, request(), meter := Meter(), reasks=1)
    assert parsed.value.retrieve == "yes"
    assert meter.llm_calls == 2 and meter.reasks == 1 and meter.parse_failures == 1
    reask = model.calls[1].messages
    assert reask[-2].role == "assistant" and reask[-2].content == '{"retrieve": "yes"'
    assert "not valid" in reask[-1].content


async def test_still_invalid_after_the_reask_raises_critique_error():
    bad = '{"relevance": "very", "sentence": "x"}'
    model = ScriptedChatModel({"retrieve_decide": [bad, bad, GOOD]})
    with pytest.raises(CritiqueError) as caught:
        await ask(model, request(FusedReply), meter := Meter(), reasks=1)
    assert caught.value.raw_text == bad
    assert meter.llm_calls == 2  # one re-ask, never more


async def test_truncated_reply_is_reasked_with_a_larger_token_budget():
    model = ScriptedChatModel({"retrieve_decide": [Scripted('{"retrieve": "ye', finish_reason="length"), GOOD]})
    await ask(model, request(), Meter())
    assert model.calls[1].max_tokens == 2 * model.calls[0].max_tokens


async def test_empty_and_whitespace_sentences_are_invalid():
    empty = {
        "relevance": "relevant",
        "sentence": "  ",
        "evidence": "",
        "support": "no",
        "utility": 3,
        "is_final": True,
        "retrieve_next": "no",
        "next_query": "",
    }
    model = ScriptedChatModel({"retrieve_decide": [empty]})
    with pytest.raises(CritiqueError, match="sentence"):
        await ask(model, request(FusedReply), Meter(), reasks=0)


async def test_an_invalid_decision_label_is_not_a_parse_failure():
    model = ScriptedChatModel({"retrieve_decide": '{"retrieve": "perhaps", "query": "q"}'})
    parsed = await ask(model, request(), Meter(), reasks=0)
    assert parsed.value.retrieve == "perhaps"  # the engine maps it to "yes"


@pytest.mark.parametrize("content", ["", "   ", "I'm sorry, I can't help with that."])
async def test_empty_or_refusing_replies_are_reasked_then_reported(content):
    model = ScriptedChatModel({"retrieve_decide": [content, content]})
    with pytest.raises(CritiqueError):
        await ask(model, request(), meter := Meter(), reasks=1)
    assert meter.llm_calls == 2 and meter.parse_failures == 2
