"""The whole loop against the scripted fake: decisions, fan-out, critique, beam, citations, failures, events."""

from __future__ import annotations

import time

import pytest
from helpers import by_document, distinct, document_of, fused, plain

from selfrag import Chunk, FatalLLMError, LLMError, SegmentEvent
from selfrag.config import Config
from selfrag.engine.report import with_marker
from selfrag.errors import ConfigError, ContextLengthError, CritiqueError, InputError, RefusalError
from selfrag.testing import Scripted, ScriptedChatModel

Q = "How long are refunds accepted?"
DECIDE_YES = {"retrieve": "yes", "query": "refunds"}
WARRANTY = "warranty covers manufacturing defects two years"


def test_greedy_answer_cites_the_chunk_each_sentence_came_from(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {
                "policy-2026.md": fused("Refunds are accepted within 30 days of purchase.", utility=5),
                "policy-2024.md": fused("Refunds are accepted within 14 days.", support="partially", utility=3),
            }
        ),
    }
    result = engine(script, lead=False).answer(Q)
    assert result.answer == "Refunds are accepted within 30 days of purchase [1]."
    assert [s.doc_id for s in result.sources] == ["policy-2026.md"]
    assert result.segments[0].citation == 1 and result.segments[0].chunk == "policy-2026.md#0"
    assert result.segments[0].score == pytest.approx(2.5)
    assert result.stop_reason == "final"
    assert result.usage.llm_calls == 3  # one decision + two candidates (two chunks matched the query)


def test_candidates_are_written_one_per_chunk_with_the_beams_query(engine):
    rag = engine(
        {
            "retrieve_decide": {"retrieve": "yes", "query": "warranty defects"},
            "generate_fused": fused("The warranty covers defects for two years."),
        },
        ndocs=3,
    )
    rag.answer("What does the warranty cover?")
    assert rag.deps.index.queries == ["warranty defects What does the warranty cover?"]  # query + question
    calls = rag.chat.calls_to("generate_fused")
    assert len(calls) == 1  # only one chunk shares a word with the query
    assert "warranty covers manufacturing defects" in calls[0].messages[-1].content


def test_shared_prompt_prefix_comes_before_the_document(engine):
    rag = engine(
        {"retrieve_decide": {"retrieve": "yes", "query": "refunds purchase"}, "generate_fused": fused("Thirty days.")},
        lead=False,
    )
    rag.answer(Q)
    first, second = (c.messages for c in rag.chat.calls_to("generate_fused"))
    assert first[0] == second[0]  # same system message
    head = lambda m: m[1].content.split("<document")[0]  # noqa: E731
    assert head(first) == head(second) and first[1].content != second[1].content


def test_beam_width_two_keeps_two_paths_and_returns_the_best(engine):
    first = by_document(
        {
            "policy-2026.md": fused(
                "Since April 2026 refunds are accepted within 30 days.", is_final=False, retrieve_next="continue"
            ),
            "policy-2024.md": fused(
                "Refunds are accepted within 14 days.",
                support="partially",
                utility=3,
                is_final=False,
                retrieve_next="continue",
            ),
        }
    )
    second = by_document(
        {
            "policy-2026.md": fused("The 30 days count from purchase.", evidence="within 30 days of purchase"),
            "policy-2024.md": fused(
                "The 14 days count from purchase.", evidence="within 14 days of purchase", utility=2
            ),
        }
    )
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": lambda r: first(r) if "(nothing yet)" in r.messages[1].content else second(r),
    }
    result = engine(script, beam_width=2, max_depth=3, lead=False).answer(Q)
    step0 = result.trace.steps[0]
    assert sorted(step0.kept) == sorted(c.child for c in step0.candidates)  # both children kept
    step1 = result.trace.steps[1]
    assert {b.decision for b in step1.beams} == {"continue"}  # each beam reused its own chunks
    assert len(step1.candidates) == 4 and sum(c.status == "kept" for c in step1.candidates) == 2
    assert result.answer == (
        "Since April 2026 refunds are accepted within 30 days [1]. The 30 days count from purchase [1]."
    )
    assert result.stop_reason == "final" and len(result.trace.steps) == 2
    assert result.trace.final_path[-1] in step1.kept


def test_stop_as_soon_as_every_kept_beam_is_final(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": [
            fused("One.", is_final=False, retrieve_next="continue"),
            fused("Two.", is_final=False),
            fused("Three.", is_final=True),
            fused("Four.", is_final=True),
        ],
    }
    result = engine(script, max_depth=7, lead=False).answer(Q)
    assert result.stop_reason == "final"
    assert len(result.trace.steps) == 2


def test_never_mode_writes_without_evidence_and_cites_nothing(engine):
    rag = engine({"generate_plain": plain("I cannot look that up.")}, mode="never", lead=False)
    result = rag.answer(Q)
    assert result.sources == [] and result.segments[0].citation is None
    assert rag.deps.index.queries == []
    assert result.usage.retrieval_frequency == 0.0 and result.confidence == 0.0


def test_always_mode_skips_the_decision_call_and_retrieves_every_step(engine):
    script = {
        "generate_fused": lambda r: (
            fused("Some sentence.", is_final=False, next_query="shipping")
            if "(nothing yet)" in r.messages[1].content
            else fused("Another sentence.")
        )
    }
    rag = engine(script, mode="always", max_depth=2, lead=False)
    result = rag.answer(Q)
    assert rag.chat.calls_to("retrieve_decide") == []
    assert [b.decision for s in result.trace.steps for b in s.beams] == ["yes", "yes"]
    assert rag.deps.index.queries == [Q, f"shipping {Q}"]  # step 2: the query written with the previous candidate


def test_adaptive_no_writes_a_plain_sentence_then_follows_the_next_decision(engine):
    script = {
        "retrieve_decide": {"retrieve": "no", "query": ""},
        "generate_plain": plain("Let me check the policy.", is_final=False, retrieve_next="yes"),
        "generate_fused": fused("You have 30 days."),
    }
    result = engine(script, lead=False).answer(Q)
    decisions = [b.decision for s in result.trace.steps for b in s.beams]
    assert decisions == ["no", "yes"]
    assert result.answer == "Let me check the policy. You have 30 days [1]."


def test_logprob_decision_uses_the_soft_threshold(engine):
    # the model says "no", but P(yes) = 0.25 > 0.2, so the engine retrieves (paper §3.3)
    script = {
        "retrieve_decide": Scripted(
            {"retrieve": "no", "query": "refund"}, probs={"retrieve": {"no": 0.75, "yes": 0.25}}
        ),
        "generate_fused": fused("Thirty days."),
    }
    result = engine(script, logprobs=True, lead=False).answer(Q)
    beam = result.trace.steps[0].beams[0]
    assert beam.decision == "yes" and beam.p_retrieve == pytest.approx(0.25, abs=1e-6)
    raised = engine(script, logprobs=True, threshold=0.3, chunks=None, lead=False)
    raised.chat._script["generate_plain"] = plain("No lookup.")
    assert raised.answer(Q).trace.steps[0].beams[0].decision == "no"


def test_label_probabilities_from_logprobs_feed_the_score(engine):
    reply = Scripted(
        fused("Refunds are accepted within 30 days.", utility=5, evidence="refunds are accepted within"),
        probs={
            "relevance": {"relevant": 0.9, "irrelevant": 0.1},
            "support": {"fully": 0.6, "partially": 0.4},
            "utility": {"5": 0.5, "4": 0.5},
        },
    )
    result = engine(
        {"retrieve_decide": DECIDE_YES, "generate_fused": reply}, logprobs=True, ndocs=1, lead=False
    ).answer(Q)
    critique = result.segments[0].critique
    assert critique.estimator == "logprobs"
    # 0.9 + (0.6 + 0.5*0.4) + 0.5*(0.5*1 + 0.5*0.5)
    assert result.segments[0].score == pytest.approx(0.9 + 0.8 + 0.375, abs=1e-6)


def test_one_failed_candidate_is_dropped_and_recorded(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document(
            {"policy-2026.md": LLMError("boom"), "policy-2024.md": fused("You have 14 days.")}
        ),
    }
    result = engine(script, lead=False).answer(Q)
    statuses = {c.chunk: c.status for c in result.trace.steps[0].candidates}
    assert statuses == {"policy-2026.md#0": "failed", "policy-2024.md#0": "kept"}
    assert "boom" in next(c.error for c in result.trace.steps[0].candidates if c.status == "failed")
    assert result.answer == "You have 14 days [1]."


def test_malformed_candidate_is_reasked_once_then_dropped(engine):
    bad = '{"relevance": "relevant", "sentence": "x"'
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": by_document({"policy-2026.md": bad, "policy-2024.md": fused("You have 14 days.")}),
    }
    rag = engine(script, lead=False)
    result = rag.answer(Q)
    assert len(rag.chat.calls_to("generate_fused")) == 3  # ask + one re-ask for the bad chunk, one for the good
    assert result.usage.reasks == 1 and result.usage.parse_failures == 2
    assert result.usage.by_prompt["generate_fused"].calls == 3  # a re-ask is a reply to the same prompt
    assert result.answer == "You have 14 days [1]."
    assert sum(c.status == "failed" for c in result.trace.steps[0].candidates) == 1


def test_every_candidate_failing_falls_back_to_a_sentence_without_evidence(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": CritiqueError("bad"),
        "generate_plain": plain("I could not find this in the documents."),
    }
    rag = engine(script, lead=False)
    result = rag.answer(Q)
    assert result.answer == "I could not find this in the documents."
    fallback = [c for c in result.trace.steps[0].candidates if c.fallback]
    assert len(fallback) == 1 and fallback[0].status == "kept"
    assert "could not be found" in rag.chat.calls_to("generate_plain")[0].messages[0].content


def test_everything_failing_ends_with_a_clear_error(engine):
    rag = engine(
        {"retrieve_decide": DECIDE_YES, "generate_fused": LLMError("down"), "generate_plain": LLMError("down")}
    )
    with pytest.raises(LLMError, match="every call"):
        rag.answer(Q)


def test_a_fatal_endpoint_error_aborts_at_once(engine):
    rag = engine({"retrieve_decide": DECIDE_YES, "generate_fused": FatalLLMError("bad key (401)")})
    with pytest.raises(FatalLLMError):
        rag.answer(Q)
    assert rag.chat.calls_to("generate_plain") == []


def test_one_step_costs_one_round_of_concurrent_calls(engine):
    latency = 0.2
    rag = engine(
        {"generate_fused": fused("Refunds within thirty days.")},
        mode="always",
        latency=latency,
        ndocs=5,
        chunks=None,
        lead=False,
    )
    rag.deps.index.chunks[:] = [Chunk(f"d{i}", 0, "Refunds within thirty days.") for i in range(5)]
    started = time.monotonic()
    result = rag.answer(Q)
    elapsed = time.monotonic() - started
    assert len(rag.chat.calls_to("generate_fused")) == 5
    assert rag.chat.max_in_flight == 5  # all five candidates were in flight together
    assert result.usage.rounds == 1
    assert elapsed < 2 * latency  # one round, not five sequential calls (5 x 0.2 s)


def test_separate_critic_judges_each_candidate_on_the_critic_model(engine):
    critic = ScriptedChatModel(
        {
            "critique_candidate": by_document(
                {
                    "policy-2026.md": {
                        "relevance": "relevant",
                        "evidence": "refunds are accepted within 30 days",
                        "support": "fully",
                        "utility": 5,
                        "is_final": True,
                        "retrieve_next": "no",
                        "next_query": "",
                    },
                    "policy-2024.md": {
                        "relevance": "irrelevant",
                        "evidence": "",
                        "support": "no",
                        "utility": 2,
                        "is_final": True,
                        "retrieve_next": "no",
                        "next_query": "",
                    },
                }
            )
        },
        name="critic",
    )
    script = {"retrieve_decide": DECIDE_YES, "generate_segment": {"sentence": "You have 30 days."}}
    rag = engine(script, critic_chat=critic, critic="separate", lead=False)
    result = rag.answer(Q)
    assert len(critic.calls_to("critique_candidate")) == 2
    assert rag.chat.calls_to("generate_fused") == []
    assert "Sentence to judge: You have 30 days." in critic.calls[0].messages[-1].content
    assert result.sources[0].doc_id == "policy-2026.md"
    assert result.usage.rounds == 3  # decide, write, critique


CRITIQUE_2024 = {
    "relevance": "relevant",
    "evidence": "refunds are accepted within 14 days",
    "support": "fully",
    "utility": 4,
    "is_final": True,
    "retrieve_next": "no",
    "next_query": "",
}


def separate(critic_reply, engine, **knobs):
    critic = ScriptedChatModel({"critique_candidate": critic_reply}, name="critic")
    script = {"retrieve_decide": DECIDE_YES, "generate_segment": {"sentence": "You have 14 days."}}
    return critic, engine(script, critic_chat=critic, critic="separate", **knobs).answer(Q)


def test_a_critique_cut_off_twice_ends_as_the_defaulted_critique(engine):
    cut = Scripted('{"relevance": "relevant", "evidence": "refunds are acc', finish_reason="length")
    critic, result = separate(lambda request: cut, engine, ndocs=1, max_depth=1, lead=False)
    calls = critic.calls_to("critique_candidate")
    assert len(calls) == 2 and calls[1].max_tokens == 2 * calls[0].max_tokens  # one larger re-ask, no more
    candidate = result.trace.steps[0].candidates[0]
    assert candidate.status == "kept" and candidate.error is None
    assert candidate.critique.status == "defaulted"
    assert (candidate.critique.relevance, candidate.critique.support) == ("irrelevant", "no")


def test_a_critic_refusal_drops_the_candidate_instead_of_defaulting_its_labels(engine):
    refusal = RefusalError("the model refused to answer: no", kind="refusal")
    critic, result = separate(
        by_document({"policy-2026.md": refusal, "policy-2024.md": CRITIQUE_2024}), engine, max_depth=1, lead=False
    )
    statuses = {c.chunk: (c.status, c.error) for c in result.trace.steps[0].candidates}
    assert statuses["policy-2026.md#0"] == ("failed", "RefusalError: the model refused to answer: no")
    assert statuses["policy-2024.md#0"] == ("kept", None)
    assert len(critic.calls_to("critique_candidate")) == 2  # one per candidate: the refusal was not re-asked


def test_claimed_support_without_a_quote_from_the_chunk_is_downgraded(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Refunds take 90 days.", evidence="refunds take 90 days", support="fully"),
    }
    result = engine(script, ndocs=1, lead=False).answer(Q)
    critique = result.segments[0].critique
    assert critique.support == "partially" and critique.quote_ok is False
    assert result.segments[0].score == pytest.approx(1.0 + 0.5 + 0.5)


def test_hard_gates_drop_unsupported_candidates_with_a_safe_fallback(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": fused("Unrelated.", relevance="irrelevant", support="no", evidence=""),
        "generate_plain": plain("The documents do not say."),
    }
    result = engine(script, gate_unsupported=True, lead=False).answer(Q)
    assert {c.status for c in result.trace.steps[0].candidates if not c.fallback} == {"gated"}
    assert result.answer == "The documents do not say."
    ungated = engine(script, lead=False, disowned=False).answer(Q)
    assert ungated.answer.startswith("Unrelated")  # gates are off by default (a disowned sentence: test_disowned)


def test_budget_ends_the_answer_with_what_is_settled(engine):
    more = distinct(lambda n: fused(f"Refund rule {n} applies.", is_final=False, retrieve_next="continue"))
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": more, "answer_lead": {"answer": "30 days"}}
    result = engine(script, max_llm_calls=6, max_depth=7).answer(Q)  # the lead's call, sent ahead, counts too
    assert result.stop_reason == "budget"
    assert result.segments and result.usage.llm_calls <= 6 + 2


def test_deadline_ends_the_answer(engine):
    more = distinct(lambda n: fused(f"Refund rule {n} applies.", is_final=False, retrieve_next="yes"))
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": more, "answer_lead": {"answer": "30 days"}}
    result = engine(script, latency=0.05, deadline=0.3, max_depth=50).answer(Q)
    assert result.stop_reason == "deadline" and result.usage.wall_time < 1.0


async def test_events_stream_settled_sentences_before_the_result(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": [
            fused("First.", is_final=False, retrieve_next="continue"),
            fused("Other first.", is_final=False, support="no", evidence="", retrieve_next="continue"),
            fused("Second."),
        ],
    }
    rag = engine(script, max_depth=2, ndocs=2, lead=False)
    rag.chat._script["generate_fused"].append(fused("Second again."))
    events = [event async for event in rag.astream(Q)]
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "StepEvent" and kinds[-1] == "DoneEvent"
    segments = [e for e in events if isinstance(e, SegmentEvent)]
    assert [s.text for s in segments] == [s.text for s in events[-1].result.segments]
    assert kinds.index("SegmentEvent") < kinds.index("DoneEvent")
    assert isinstance(events[1], SegmentEvent)  # greedy: the first sentence is settled after step 0


def test_empty_question_is_refused(engine):
    with pytest.raises(InputError):
        engine({}).answer("   ")


def test_a_sentence_repeating_the_draft_is_declined_and_the_beam_stops_there(engine):
    script = {
        "retrieve_decide": DECIDE_YES,
        "generate_fused": [
            fused("Warranty terms apply.", is_final=False, retrieve_next="yes", next_query=WARRANTY),
            fused("Warranty terms apply.", is_final=False, retrieve_next="yes", next_query=WARRANTY),
            fused("Two years of warranty."),
        ],
    }
    result = engine(script, ndocs=1, lead=False).answer(Q)
    assert result.answer == "Warranty terms apply [1]."
    assert [s.n for s in result.sources] == [1]
    assert [(c.status, c.flag) for c in result.trace.steps[1].candidates] == [("gated", "repeats_draft")]
    assert result.stop_reason == "final" and result.abstention is None


def test_a_prompt_too_long_for_the_model_is_retried_once_with_half_the_chunk(engine):
    def reply(request):
        if len(document_of(request)) > 450:
            return ContextLengthError("maximum context length exceeded")
        return fused("Refunds are accepted within 30 days.", evidence="refunds are accepted within 30 days")

    long_chunk = Chunk("long.md", 0, "Refunds are accepted within 30 days. " + "Filler words here. " * 40)
    rag = engine(
        {"retrieve_decide": DECIDE_YES, "generate_fused": reply}, chunks=[long_chunk], max_chunk_chars=600, lead=False
    )
    result = rag.answer(Q)
    assert result.answer == "Refunds are accepted within 30 days [1]."
    sizes = [len(document_of(call)) for call in rag.chat.calls_to("generate_fused")]
    assert len(sizes) == 2 and sizes[1] < sizes[0]


def test_an_over_long_question_is_refused_before_any_call(engine):
    rag = engine({})
    with pytest.raises(InputError, match="limit"):
        rag.answer("why? " * 5000)
    assert rag.chat.calls == []


def test_short_replies_cap_the_free_text_fields_in_the_schema_and_a_longer_reply_still_counts(engine):
    long_sentence = "Refunds are accepted within 30 days of purchase, " + "and more words follow here " * 12 + "."
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused(long_sentence, utility=5)}
    rag = engine(script, short_replies=True, lead=False)
    result = rag.answer(Q)
    schema = rag.chat.calls_to("generate_fused")[0].schema.model_json_schema()["properties"]
    assert {name: schema[name].get("maxLength") for name in ("sentence", "evidence", "next_query", "support")} == {
        "sentence": 200,
        "evidence": 100,
        "next_query": 60,
        "support": None,
    }
    assert rag.chat.calls_to("retrieve_decide")[0].schema.model_json_schema()["properties"]["query"]["maxLength"] == 60
    assert len(long_sentence) > 200 and result.usage.reasks == 0  # the cap is the grammar's, not a validation rule
    assert result.segments[0].text.startswith("Refunds are accepted within 30 days")
    rag_default = engine(script, lead=False)  # the default: no caps
    rag_default.answer(Q)
    default = rag_default.chat.calls_to("generate_fused")[0].schema.model_json_schema()["properties"]
    assert "maxLength" not in default["sentence"]


HOPS = [
    Chunk("cannes.md", 0, "Cannes is a city whose film festival honours a director every year.", title="Cannes"),
    Chunk("starfall.md", 0, "Starfall is a 1999 film directed by Mara Quist.", title="Starfall"),
    Chunk("oscars.md", 0, "Each year a film director wins the Oscar.", title="Oscars"),
    Chunk("quist.md", 0, "Mara Quist was born in Lisbon in 1961.", title="Mara Quist"),
]


def test_a_two_hop_question_writes_its_second_sentence_from_the_chunk_the_second_query_finds(engine):
    # the bare question never finds the director's birthplace: only a query about the fact the first hop
    # named (the director) does; the chunk already cited yields to fresh ones
    question = "In which city was the director of the film Starfall born?"
    off_topic = fused("Cannes honours a director every year.", relevance="irrelevant", support="no", utility=1)
    script = {
        "retrieve_decide": {"retrieve": "yes", "query": ""},
        "generate_fused": by_document(
            {
                "starfall.md": fused(
                    "Starfall was directed by Mara Quist.",
                    is_final=False,
                    retrieve_next="yes",
                    next_query="Mara Quist birthplace",
                    utility=3,
                ),
                "quist.md": fused("Mara Quist was born in Lisbon.", evidence="Mara Quist was born in Lisbon"),
                "cannes.md": off_topic,
                "oscars.md": off_topic,
            }
        ),
    }
    rag = engine(script, chunks=HOPS, ndocs=2, max_depth=3, lead=False)
    result = rag.answer(question)
    assert result.answer == "Starfall was directed by Mara Quist [1]. Mara Quist was born in Lisbon [2]."
    assert [s.doc_id for s in result.sources] == ["starfall.md", "quist.md"]
    assert rag.deps.index.queries == [question, f"Mara Quist birthplace {question}"]
    first, second = ([document_of(c) for c in calls] for calls in _by_step(rag.chat.calls_to("generate_fused")))
    assert not any('id="quist.md' in d for d in first)  # the first hop could not see it
    assert any('id="quist.md' in d for d in second) and not any('id="starfall.md' in d for d in second)
    assert result.stop_reason == "final" and len(result.trace.steps) == 2


def _by_step(calls):
    """The generate calls split at the first one whose draft is not empty (the second step's)."""
    at = next(i for i, c in enumerate(calls) if "(nothing yet)" not in c.messages[1].content)
    return calls[:at], calls[at:]


def test_a_calls_config_takes_the_engines_scorer_and_may_not_change_it(engine):
    script = {"retrieve_decide": DECIDE_YES, "generate_fused": fused("Refunds are accepted within 30 days.")}
    rag = engine(script, ndocs=1, scorer="paper")
    call = Config(nonce_seed="test", lead=False, ndocs=1, beam_width=2)  # scorer "auto", the default
    result = rag.answer(Q, config=call)
    assert result.config["scorer"] == "paper" and result.config["beam_width"] == 2  # the call's knobs, the rater's
    with pytest.raises(ConfigError, match="scorer 'paper'"):
        rag.answer(Q, config=call.with_values(scorer="evidence"))  # its rater was built with the engine


@pytest.mark.parametrize(
    ("sentence", "marked"),
    [
        ("Paris is the capital.", "Paris is the capital [1]."),
        ("Is it open?!", "Is it open [1]?!"),
        ("No end mark", "No end mark [1]"),
        # a title or an aside closes before the sentence's end: the marker is not put inside it
        ('The song is "Tiny Dancer".', 'The song is "Tiny Dancer" [1].'),
        ("A surcharge applies (lowered in 2026).", "A surcharge applies (lowered in 2026) [1]."),
        # a quote that closes round the end keeps its words as quoted
        ('He said "Go."', 'He said "Go." [1]'),
    ],
)
def test_a_citation_marker_goes_before_the_sentences_end_and_outside_what_it_quotes(sentence, marked):
    assert with_marker(sentence, 1) == marked
    assert with_marker(sentence, None) == sentence
