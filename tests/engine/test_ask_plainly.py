"""A sentence that restates the question is asked for once more, the question after the document; where that one
restates it too, the chunk's own best sentence competes; with the paper's scorer, sentences the model itself calls
irrelevant and unsupported are not the answer alone (scripted model; a loopback endpoint playing a model that
restates)."""

from __future__ import annotations

from functools import partial

import pytest
from helpers import by_document, fused

from selfrag import Chunk, Config, SelfRAG
from selfrag.cli.trace_html import render_trace_html
from selfrag.config import EndpointConfig
from selfrag.result import ABSTAIN_ANSWER, Result
from selfrag.testing.fake_server import FakeOpenAIServer, restating_responder

Q = "How many days after purchase are refunds accepted?"
DECIDE_YES = {"retrieve": "yes", "query": "refund days purchase"}
REFUNDS = Chunk("refunds.md", 0, "Refunds are handled by the front desk. They are accepted within 30 days of purchase.")
ANSWER = "Refunds are accepted within 30 days of purchase."
RESTATED = fused("How many days after purchase are refunds accepted?")  # relevant, fully, utility 5: it claims all
README_QUESTION = (
    "What is the late fee for a bike returned after 24 hours, and how many days do I have to dispute a charge?"
)


def script(direct: object, first: object = RESTATED) -> dict:
    return {"retrieve_decide": DECIDE_YES, "generate_fused": first, "generate_direct": direct}


def written(result: Result) -> list[tuple[str | None, bool, bool]]:
    """(flag, asked_again, extracted) of each candidate of the first step."""
    return [(c.flag, c.asked_again, c.extracted) for c in result.trace.steps[0].candidates]


def test_a_restated_question_is_asked_again_with_the_question_after_the_document(engine):
    rag = engine(script(fused(ANSWER)), chunks=[REFUNDS], ndocs=1, lead=False)
    result = rag.answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]." and result.abstention is None
    assert written(result) == [("restates_question", False, False), (None, True, False)]
    (asked,) = rag.chat.calls_to("generate_direct")  # once
    prompt = asked.messages[1].content
    assert prompt.index("</document") < prompt.index(f"Question: {Q}")  # the question comes after the document
    assert result.usage.llm_calls == 3  # the decision, the first sentence, the one asked again
    by_prompt = result.usage.by_prompt  # what each kind of call cost, for the calls-per-answer figures
    assert {name: u.calls for name, u in by_prompt.items()} == {
        "generate_direct": 1, "generate_fused": 1, "retrieve_decide": 1
    }  # fmt: skip
    assert sum(u.tokens for u in by_prompt.values()) == result.usage.total_tokens > 0
    assert ">asked again</span>" in render_trace_html(result)


def test_the_knob_off_the_restated_question_is_declined_and_the_answer_abstains(engine):
    rag = engine(script(fused(ANSWER)), chunks=[REFUNDS], ndocs=1, lead=False, ask_plainly=False)
    result = rag.answer(Q)
    assert result.answer == ABSTAIN_ANSWER and not rag.chat.calls_to("generate_direct")


def test_restated_again_the_chunks_own_sentence_competes_and_answers(engine):
    rag = engine(
        script(RESTATED), chunks=[REFUNDS], ndocs=1, lead=False
    )  # the paper's scorer: no sentence is extracted else
    result = rag.answer(Q)
    assert result.answer == "They are accepted within 30 days of purchase [1]."
    assert written(result) == [
        ("restates_question", False, False),
        ("restates_question", True, False),
        (None, False, True),
    ]
    assert len(rag.chat.calls_to("generate_direct")) == 1  # asked again once, not twice


def test_a_chunk_of_one_sentence_gives_it_when_the_model_restates_twice(engine):
    one = Chunk("refunds.md", 0, ANSWER)
    result = engine(script(RESTATED), chunks=[one], ndocs=1, lead=False).answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."


def test_a_failed_call_asking_again_lets_the_chunks_sentence_compete(engine):
    from selfrag.errors import LLMError

    result = engine(script(LLMError("timed out")), chunks=[REFUNDS], ndocs=1, lead=False).answer(Q)
    assert result.answer == "They are accepted within 30 days of purchase [1]."
    assert result.trace.steps[0].candidates[1].status == "failed"


def test_a_writer_with_no_form_for_the_plain_prompt_is_not_asked_again_and_the_chunks_sentence_competes(engine):
    from selfrag.errors import PromptNotSupportedError

    fixed = PromptNotSupportedError("prompt 'generate_direct' has no form for protocol reflection-tokens")
    result = engine(script(fixed), chunks=[REFUNDS], ndocs=1, lead=False).answer(
        Q
    )  # a Self-RAG checkpoint's fixed prompt
    assert result.answer == "They are accepted within 30 days of purchase [1]."


def test_nothing_supported_the_answer_abstains(engine):
    disowning = fused(Q, relevance="irrelevant", support="no")  # restated again, and the model disowns the chunk
    result = engine(script(disowning), chunks=[REFUNDS], ndocs=1, lead=False).answer(Q)
    assert result.answer == ABSTAIN_ANSWER
    assert [c.flag for c in result.trace.steps[0].candidates] == ["restates_question", "restates_question", "disowned"]
    assert "1 disowned" in result.abstention.message


def test_separate_mode_asks_the_writer_plainly_and_the_critic_judges(engine):
    judged = {"relevance": "relevant", "evidence": ANSWER, "support": "fully", "utility": 5, "is_final": True}
    rag = engine(
        {
            "retrieve_decide": DECIDE_YES,
            "generate_segment": {"sentence": Q},
            "generate_direct_segment": {"sentence": ANSWER},
            "critique_candidate": {**judged, "retrieve_next": "no", "next_query": ""},
        },
        chunks=[REFUNDS],
        ndocs=1,
        lead=False,
        critic="separate",
    )
    result = rag.answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."
    assert len(rag.chat.calls_to("critique_candidate")) == 2  # the first sentence and the one asked again


def test_the_evidence_scorer_asks_again_too(engine):
    rag = engine(script(fused(ANSWER)), chunks=[REFUNDS], ndocs=1, lead=False, scorer="evidence", abstain_below=0.0)
    result = rag.answer(Q)
    assert len(rag.chat.calls_to("generate_direct")) == 1
    assert (None, True, False) in written(result)  # it competes with the chunk's extracted sentence


# -- a sentence the model disowns -----------------------------------------------------------------------------

OTHER = Chunk("shipping.md", 0, "Orders ship within two business days from Lyon.")
DISOWNED = fused("Orders ship within two business days from Lyon.", relevance="irrelevant", support="no")


def test_a_sentence_the_model_disowns_is_not_the_answer_alone(engine):
    table = by_document({"refunds.md": RESTATED, "shipping.md": DISOWNED})
    knobs = {"chunks": [REFUNDS, OTHER], "ndocs": 2, "ask_plainly": False}
    result = engine({"retrieve_decide": DECIDE_YES, "generate_fused": table}, **knobs, lead=False).answer(Q)
    assert result.answer == ABSTAIN_ANSWER  # utility 5 no longer outweighs irrelevant and unsupported
    flags = {c.chunk: (c.status, c.flag) for c in result.trace.steps[0].candidates}
    assert flags == {"refunds.md#0": ("gated", "restates_question"), "shipping.md#0": ("gated", "disowned")}
    kept = engine({"retrieve_decide": DECIDE_YES, "generate_fused": table}, **knobs, lead=False, disowned=False).answer(
        Q
    )
    assert kept.answer == "Orders ship within two business days from Lyon [1]."  # as before the rule


def test_beside_a_sentence_the_model_owns_a_disowned_one_competes_and_ranks_below(engine):
    table = by_document({"refunds.md": fused(ANSWER), "shipping.md": DISOWNED})
    result = engine(
        {"retrieve_decide": DECIDE_YES, "generate_fused": table}, chunks=[REFUNDS, OTHER], ndocs=2, lead=False
    ).answer(Q)
    assert result.answer == ANSWER.removesuffix(".") + " [1]."
    assert {c.chunk: c.status for c in result.trace.steps[0].candidates} == {
        "refunds.md#0": "kept",
        "shipping.md#0": "pruned",
    }


def test_the_evidence_scorer_leaves_disowned_sentences_to_its_ratings(engine):
    knobs = {"chunks": [OTHER], "ndocs": 1, "scorer": "evidence", "abstain_below": 0.0, "ask_plainly": False}
    result = engine({"retrieve_decide": DECIDE_YES, "generate_fused": DISOWNED}, **knobs, lead=False).answer(Q)
    assert not any(c.flag == "disowned" for c in result.trace.steps[0].candidates)


# -- a loopback endpoint playing a model that restates every question ---------------------------------------------


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    from pathlib import Path

    from selfrag.cli import main

    out = tmp_path_factory.mktemp("sample") / "index"
    corpus = Path(__file__).resolve().parents[2] / "examples" / "corpus"
    assert main(["index", str(corpus), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.mark.parametrize("answers_plainly", [True, False], ids=["answers-when-asked-plainly", "restates-always"])
def test_a_restating_endpoint_answers_the_readmes_first_question_from_the_documents(sample_index, answers_plainly):
    responder = partial(restating_responder, answers_plainly=answers_plainly)
    with FakeOpenAIServer(responder=responder) as server:
        config = Config(endpoint=EndpointConfig(base_url=server.base_url), nonce_seed="test")  # defaults otherwise
        with SelfRAG.from_index(sample_index, config, environ={}) as rag:
            result = rag.answer(README_QUESTION)
    assert result.config["scorer"] == "paper" and result.abstention is None
    assert result.segments and all(segment.chunk for segment in result.segments)
    assert "$15" in result.answer and result.sources[0].doc_id == "late-returns-2026.md"
    restated = [c for step in result.trace.steps for c in step.candidates if c.flag == "restates_question"]
    assert restated  # the model did restate it


def answerable_sample(stride: int) -> list[str]:
    """Every `stride`-th question of each sample question set whose gold the documents state."""
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "examples" / "questions"
    picked = []
    for path in sorted(folder.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        picked += [row["question"] for row in rows if row["answer"] != "unsettled"][::stride]
    return picked


@pytest.mark.parametrize("answers_plainly", [True, False], ids=["answers-when-asked-plainly", "restates-always"])
def test_a_restating_endpoint_answers_the_sample_question_sets_from_the_documents(sample_index, answers_plainly):
    # the whole sets, counted: benchmarks/restating_endpoint.py (a few minutes); here every tenth answerable question
    questions = answerable_sample(10)
    assert len(questions) >= 25
    responder = partial(restating_responder, answers_plainly=answers_plainly)
    unanswered = []
    with FakeOpenAIServer(responder=responder) as server:
        config = Config(endpoint=EndpointConfig(base_url=server.base_url), nonce_seed="test")
        with SelfRAG.from_index(sample_index, config, environ={}) as rag:
            for question in questions:
                result = rag.answer(question)
                cited = bool(result.sources) and all(segment.chunk for segment in result.segments)
                if result.abstention is not None or not cited:
                    unanswered.append(question)
    assert unanswered == []
