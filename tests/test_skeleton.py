"""What a reply's JSON schema decides next (llm/skeleton.py), the source of the embedded decoder's schema guesses.
The guesses on the real model are tested in tests/local/test_batched.py."""

from __future__ import annotations

import json

import pytest

from selfrag.llm.replies import FusedReply
from selfrag.llm.skeleton import Field, Skeleton

FUSED = Skeleton.of(FusedReply.model_json_schema())
REPLY = {
    "relevance": "irrelevant",
    "sentence": 'The fee is "15" dollars, {not} 20.',
    "evidence": "",
    "support": "partially",
    "utility": 4,
    "is_final": False,
    "retrieve_next": "continue",
    "next_query": "late fee",
}


def aheads(text: str) -> list[tuple[str, str]]:
    assert FUSED is not None
    return [(text[:n], FUSED.ahead(text[:n])) for n in range(len(text) + 1)]


def test_the_fused_reply_schema_is_read_in_its_order_with_its_choices():
    assert FUSED is not None
    assert [f.name for f in FUSED.fields] == list(REPLY)
    assert FUSED.fields[0] == Field("relevance", "string", ('"relevant"', '"irrelevant"'))
    assert FUSED.fields[4] == Field("utility", "integer", ("1", "2", "3", "4", "5"))
    assert FUSED.fields[5] == Field("is_final", "boolean")


def test_every_guess_along_a_reply_spaced_as_json_dumps_is_what_follows():
    text = json.dumps(REPLY)
    steps = aheads(text)
    assert all(text.startswith(prefix + ahead) for prefix, ahead in steps)
    guessed = {prefix: ahead for prefix, ahead in steps}
    assert guessed[""] == '{"relevance": "'
    assert guessed['{"relevance": "i'] == 'rrelevant", "sentence": "'  # one choice left: its rest, then the next key
    assert guessed['{"relevance": "irrelevant", "sentence": "The'] == ""  # free text: the schema says nothing
    at = text.index('"support": "') + len('"support": "p')
    assert guessed[text[:at]] == 'artially", "utility": '
    at = text.index('"is_final": f') + len('"is_final": f')
    assert guessed[text[:at]] == 'alse, "retrieve_next": "'
    assert guessed[text[: text.index('"next_query": "') + 3]] == 'xt_query": "'
    assert guessed[text[:-2]] == ""  # inside the last free string
    assert guessed[text[:-1]] == "}"
    assert guessed[text] == ""
    decided = sum(len(ahead) > 0 for _, ahead in steps)
    assert decided > len(text) // 3  # keys, choices and separators: a good part of the reply


def test_quotes_and_braces_inside_a_string_do_not_end_it():
    text = json.dumps(REPLY)
    inside = text.index("dollars")
    assert FUSED is not None and FUSED.ahead(text[:inside]) == ""
    closing = text.index('20."') + len('20."')
    assert FUSED.ahead(text[:closing]) == ', "evidence": "'


def test_the_spaces_are_guessed_as_the_reply_spaced_them_last():
    assert FUSED is not None
    text = '{ "relevance" : "relevant" ,"sentence" : "Yes."'
    assert FUSED.ahead(text) == ' ,"evidence" : "'
    assert FUSED.ahead('{ "relevance" : "relevant" ,"sentence" :') == ' "'
    assert FUSED.ahead('{ "relevance" : "relevant" ,"sentence" : ') == '"'  # the space is written already
    assert FUSED.ahead("{") == '"relevance": "'  # nothing seen yet: json.dumps' spacing
    assert FUSED.ahead("{ ") == '"relevance": "'


def test_a_choice_still_open_between_two_values_is_not_guessed():
    assert FUSED is not None
    prefix = json.dumps(REPLY)[: json.dumps(REPLY).index('"retrieve_next": "') + len('"retrieve_next": "')]
    assert FUSED.ahead(prefix) == ""  # yes, no or continue
    assert FUSED.ahead(prefix + "c") == 'ontinue", "next_query": "'
    assert FUSED.ahead(prefix + "n") == 'o", "next_query": "'


def test_text_off_the_schema_gets_no_guess():
    assert FUSED is not None
    assert FUSED.ahead('{"answer": "') == ""  # another key
    assert FUSED.ahead("Sure! {") == ""
    assert FUSED.ahead('{"relevance": "maybe"') == ""  # not one of the choices
    assert FUSED.ahead(json.dumps(REPLY) + " ") == ""


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}, "required": ["a"]},
        {"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"]},
        {"type": "object", "properties": {}, "required": []},
        {"type": "object", "properties": {"a": {"type": "string", "enum": []}}, "required": ["a"]},
        "not a schema",
    ],
)
def test_a_schema_shape_the_walk_cannot_follow_has_no_skeleton(schema):
    assert Skeleton.of(schema) is None


def test_the_skeleton_comes_from_either_response_format_flavour():
    schema = FusedReply.model_json_schema()
    strict = {"type": "json_schema", "json_schema": {"name": "FusedReply", "schema": schema, "strict": True}}
    assert Skeleton.of_response_format(strict) == FUSED
    assert Skeleton.of_response_format({"type": "json_object", "schema": schema}) == FUSED
    assert Skeleton.of_response_format({"type": "json_object"}) is None
    assert Skeleton.of_response_format(None) is None


def test_no_text_makes_the_walk_fail_and_a_reply_spaced_as_it_began_is_always_guessed_right():
    """Seeded random replies (spaces chosen once per reply, strings with escapes, quotes, braces and non-ASCII)
    and random junk: `ahead` never raises, and every guess along a reply is what the reply goes on with."""
    import random

    assert FUSED is not None
    chance = random.Random(7)
    alphabet = ["a", " ", '"', "\\", "{", "}", ",", ":", "é", "\n", "1", "t"]
    for _ in range(60):
        colon, comma = chance.choice([":", " :", ": ", " : "]), chance.choice([",", " ,", ", ", " , "])
        values = {
            "relevance": chance.choice(["relevant", "irrelevant"]),
            "sentence": "".join(chance.choice(alphabet) for _ in range(chance.randrange(12))),
            "evidence": "".join(chance.choice(alphabet) for _ in range(chance.randrange(6))),
            "support": chance.choice(["fully", "partially", "no"]),
            "utility": chance.randrange(1, 6),
            "is_final": chance.choice([True, False]),
            "retrieve_next": chance.choice(["yes", "no", "continue"]),
            "next_query": "",
        }
        body = comma.join(json.dumps(k) + colon + json.dumps(v, ensure_ascii=False) for k, v in values.items())
        text = "{" + chance.choice(["", " "]) + body + comma[: len(comma) - len(comma.lstrip())] + "}"
        first_comma = text.index(comma, text.index('"relevance"'))  # nothing before it holds the comma's text
        for n in range(len(text) + 1):
            ahead = FUSED.ahead(text[:n])
            if n > first_comma + len(comma):  # every space seen once: the guesses are the reply's own
                assert text.startswith(text[:n] + ahead), (text[:n], ahead)
        junk = "".join(chance.choice(alphabet) for _ in range(40))
        for n in range(len(junk) + 1):
            FUSED.ahead(junk[:n])
            FUSED.ahead(text[: len(text) // 2] + junk[:n])
