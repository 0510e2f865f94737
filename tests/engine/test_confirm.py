"""A decision is printed only where the model that reads agrees (`Config.confirm`), and the question's kind is the
model's reading where it reads (`answer_lead` returns it): a decision the model disagrees with gives way to its own
short answer, one it agrees with is printed, the embedded model and the `paper` preset send no confirm call, a
yes/no question in another language gets the model's yes or no, and a list question the model reads as a list
gets no short answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from helpers import DIRECTORS, fused, plain

from selfrag import Chunk, Config
from selfrag.api import SelfRAG
from selfrag.config import EndpointConfig
from selfrag.engine.calibration import EvidenceRater, load_critic_model, reads_better
from selfrag.engine.context import Deps, Run
from selfrag.engine.controller import search
from selfrag.engine.policies import in_force
from selfrag.engine.questions import question_kind
from selfrag.engine.state import UNSETTLED, RunInfo
from selfrag.prompts import PromptBook
from selfrag.result import DECIDED, LeadEvent, SegmentEvent
from selfrag.retrieval import as_searcher
from selfrag.schema import Meter
from selfrag.testing import ListRetriever, ScriptedChatModel
from selfrag.testing.fake_server import FakeOpenAIServer, echo_responder

BORN_FIRST = "Who was born first, Pablo Trapero or Aleksander Ford?"  # the dates decide: Aleksander Ford (1908)
VELA = [
    Chunk("vela-pro.md", 0, "The Vela Pro is waterproof to 50 metres and comes with a steel strap."),
    Chunk("vela-lite.md", 0, "The Vela Lite is not waterproof, so keep it away from rain and the pool."),
]
RELEASE = [Chunk("release.md", 0, "Version 2.0 removed the fast mode and the legacy export.")]


def script(verdict: str, lead: dict, sentence: str = "Aleksander Ford was born in 1908.") -> dict:
    return {
        "retrieve_decide": {"retrieve": "yes", "query": "q"},
        "generate_fused": fused(sentence),
        "answer_lead": lead,
        "confirm_decision": {"verdict": verdict},
    }


def test_a_decision_the_model_disagrees_with_is_not_printed_and_its_own_answer_stands(engine):
    rag = engine(script("disagree", {"kind": "choice", "answer": "Pablo Trapero"}), chunks=DIRECTORS, ndocs=2)
    result = rag.answer(BORN_FIRST)
    assert result.lead == "Pablo Trapero." and result.lead_from == "model"
    assert "Aleksander Ford. by dates" in result.trace.lead_refused and "does not agree" in result.trace.lead_refused
    [asked] = rag.chat.calls_to("confirm_decision")  # one call, about the clause and the proposal
    values = dict(asked.values)
    assert values["proposal"] == "Aleksander Ford." and values["question"] == BORN_FIRST
    assert "1908" in values["clause"]
    assert result.trace.lead_confirm.endswith(": disagree")


def test_where_the_model_disagrees_and_gives_no_answer_of_its_own_the_documents_do_not_settle_it(engine):
    rag = engine(script("unclear", {"kind": "choice", "answer": "not settled"}), chunks=DIRECTORS, ndocs=2)
    assert rag.answer(BORN_FIRST).lead == UNSETTLED


def test_a_decision_the_model_agrees_with_is_printed_as_decided(engine):
    rag = engine(script("agree", {"kind": "choice", "answer": "Pablo Trapero"}), chunks=DIRECTORS, ndocs=2)
    result = rag.answer(BORN_FIRST)
    assert result.lead == "Aleksander Ford." and result.lead_from == "dates"
    assert len(rag.chat.calls_to("confirm_decision")) == 1 and result.trace.lead_confirm.endswith(": agree")


def test_agreement_is_read_from_logprobs_where_the_reply_has_them(engine):
    from selfrag.testing import Scripted

    unsure = Scripted({"verdict": "agree"}, probs={"verdict": {"agree": 0.4, "disagree": 0.6}})
    said = {**script("agree", {"answer": "not settled"}), "confirm_decision": unsure}
    result = engine(said, chunks=DIRECTORS, ndocs=2, logprobs=True).answer(BORN_FIRST)
    assert result.lead == UNSETTLED and "P(agree) 0.40" in result.trace.lead_confirm


def test_the_paper_preset_and_confirm_off_send_no_confirm_call(engine):
    for knobs in ({"preset": "paper", "lead": True, "decide": True}, {"confirm": False}):
        rag = engine(script("disagree", {"answer": "Pablo Trapero"}), chunks=DIRECTORS, ndocs=2, **knobs)
        result = rag.answer(BORN_FIRST)
        assert result.lead == "Aleksander Ford." and result.lead_from == "dates"  # the rule alone, as before
        assert not rag.chat.calls_to("confirm_decision") and not rag.chat.calls_to("answer_lead")


def test_the_embedded_model_confirms_no_decision_its_shipped_counts_do_not_back():
    lead = load_critic_model().lead  # the 135M model's yes or no 14 of 27 against the rules' 41 of 49 and up
    assert not any(reads_better(lead, kind, rule) for kind in ("yes_no", "choice", "factoid") for rule in DECIDED)
    assert reads_better({"yes_no": (30, 30), "one": (41, 49)}, "yes_no", "one")  # a model that reads better
    assert "confirm" not in in_force(Config(embedded=True), evidence=True)
    assert "confirm" in in_force(Config(), evidence=False) and "confirm" not in in_force(
        Config(preset="paper"), evidence=False
    )


async def test_the_embedded_model_sends_no_confirm_call_and_its_kind_is_the_regexes():
    said = {**script("disagree", {"kind": "list", "answer": "Pablo Trapero"}), "generate_plain": plain("Nothing.")}
    chat = ScriptedChatModel(said)
    deps = Deps(chat, as_searcher(ListRetriever(DIRECTORS)), PromptBook(), rater=EvidenceRater(load_critic_model()))
    config = Config(nonce_seed="t", scorer="evidence", embedded=True, ndocs=2, ground=False)
    run = Run(deps, config, BORN_FIRST, "", Meter(), b"secret")
    events = [event async for event in search(run, RunInfo())]
    result = events[-1].result
    assert result.lead == "Aleksander Ford." and result.lead_from == "dates"
    assert not chat.calls_to("confirm_decision")
    asked = Run(deps, config, "Ist die Vela Lite wasserdicht?", "", Meter(), b"secret")  # the regexes read no kind
    assert question_kind(asked.question) is None
    [event async for event in search(asked, RunInfo())]
    assert not chat.calls_to("answer_lead")


def test_a_yes_no_question_in_another_language_gets_the_models_yes_or_no(engine):
    question = "Ist die Vela Lite wasserdicht?"
    assert question_kind(question) is None  # the regexes read English only
    sentence = "The Vela Lite is not waterproof."
    rag = engine(script("agree", {"kind": "yes_no", "answer": "no"}, sentence), chunks=VELA, ndocs=2)
    events = list(_events(rag, question))
    result = events[-1].result
    assert result.lead == "No." and result.lead_from == "model"
    [asked] = rag.chat.calls_to("answer_lead")
    assert "in whatever language it is written" in asked.messages[0].content  # asked to read the kind
    kinds = [type(event) for event in events if isinstance(event, LeadEvent | SegmentEvent)]
    assert kinds[0] is LeadEvent  # the short answer comes first: the sentences waited for it


def test_a_list_question_the_model_reads_as_a_list_gets_no_short_answer(engine):
    question = "Which features were removed in version 2.0?"
    assert question_kind(question) == "factoid"  # the regexes would print a short answer first
    said = "the fast mode and the legacy export"
    listed = engine(script("agree", {"kind": "list", "answer": said}, RELEASE[0].text), chunks=RELEASE, ndocs=1)
    result = listed.answer(question)
    assert result.lead is None and result.trace.lead_reply == said  # asked, read as a list, not printed
    assert result.answer.startswith("Version 2.0 removed")
    factoid = engine(script("agree", {"kind": "factoid", "answer": said}, RELEASE[0].text), chunks=RELEASE, ndocs=1)
    assert factoid.answer(question).lead == "The fast mode and the legacy export."  # read as a factoid, printed


def _events(rag: SelfRAG, question: str) -> list:
    async def collect() -> list:
        return [event async for event in rag.astream(question)]

    return asyncio.run(collect())


def _replying(values: dict) -> Callable[[dict], str]:
    """A server whose model fills every reply schema from `values` (the capability probe's own is echoed)."""

    def reply(body: dict) -> str:
        fmt = body.get("response_format") or {}
        props = ((fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}).get("properties", {})
        if not props or not set(props) <= set(values):
            return echo_responder(body)
        return json.dumps({key: values[key] for key in props})

    return reply


def test_over_http_a_decision_the_model_disagrees_with_is_not_printed():
    values = {**fused("Aleksander Ford was born in 1908."), "retrieve": "yes", "query": "q"}
    values |= {"kind": "choice", "answer": "not settled", "verdict": "disagree"}
    with FakeOpenAIServer(responder=_replying(values)) as server:
        config = Config(nonce_seed="t", ndocs=2, endpoint=EndpointConfig(base_url=server.base_url, model="fake-model"))
        rag = SelfRAG(ListRetriever(DIRECTORS), config, environ={})
        try:
            result = rag.answer(BORN_FIRST)
        finally:
            rag.close()
    assert result.lead == UNSETTLED and "disagree" in result.trace.lead_confirm
    assert result.config["confirm"] is True and result.config["embedded"] is False
