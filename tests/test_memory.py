"""The managed conversation memory: topics, collapsed repeats, eviction by worth, recall routed and reranked."""

from __future__ import annotations

from selfrag.memory import DEFAULT_BUDGET, Budget, Memory, MemoryTurn, noted, recall, remember, render

REFUNDS = [
    ("How many days do I have to ask for a refund?", "Refunds are accepted within 30 days of purchase."),
    ("Do refunds need a receipt?", "Yes, a receipt is required for every refund."),
]
NAMES = "amber birch cedar dune ember fern gold hazel iris jade".split()
SHIPPING = [
    ("Where do orders ship from?", "Shipping is from the Lyon warehouse."),
    ("How much does express shipping cost?", "Express shipping costs 9 euros."),
]


def remembered(pairs: list[tuple[str, str]], memory: Memory | None = None, budget: Budget = DEFAULT_BUDGET) -> Memory:
    memory = memory or Memory()
    for question, answer in pairs:
        memory = remember(memory, MemoryTurn(question, answer), budget)
    return memory


def test_turns_join_the_topic_of_a_similar_turn_and_new_subjects_open_new_topics() -> None:
    memory = remembered([REFUNDS[0], SHIPPING[0], REFUNDS[1], SHIPPING[1]])
    topics = [t.topic for t in memory.turns]
    assert topics[0] == topics[2] and topics[1] == topics[3] and topics[0] != topics[1]
    assert [t.number for t in memory.turns] == [1, 2, 3, 4]


def test_recall_routes_by_topic_reranks_against_the_question_and_ends_with_the_last_turn() -> None:
    memory = remembered([REFUNDS[0], SHIPPING[0], REFUNDS[1], SHIPPING[1]])
    recalled = recall(memory, "Is a receipt needed for a refund after 30 days?")
    questions = [t.question for t in recalled]
    assert questions == [REFUNDS[0][0], REFUNDS[1][0], SHIPPING[1][0]]  # best match first; the last turn last
    assert SHIPPING[0][0] not in questions  # another topic, no shared word: not recalled
    follow_up = recall(memory, "and for members?")  # shares no word: the last turn's topic carries it
    assert [t.question for t in follow_up] == [SHIPPING[0][0], SHIPPING[1][0]]
    text = render(recalled)
    assert text.startswith(f"User: {REFUNDS[0][0]}\nAssistant: {REFUNDS[0][1]}")
    assert text.endswith(f"User: {SHIPPING[1][0]}\nAssistant: {SHIPPING[1][1]}")


def test_a_repeated_question_replaces_the_old_turn_so_a_revised_fact_is_recalled_once_in_its_new_form() -> None:
    memory = remembered([REFUNDS[0], SHIPPING[0], ("How many days do I have to ask for a refund?", "Now 60 days.")])
    assert len(memory.turns) == 2 and memory.collapsed == 1
    recalled = render(recall(memory, "refund days"))
    assert "Now 60 days." in recalled and "30 days" not in recalled


def test_recall_fits_its_budget_and_keeps_the_last_turn() -> None:
    pairs = [(f"refund question {w}", "refund answer " + "x" * 900) for w in NAMES[:10]]
    memory = remembered(pairs)
    recalled = recall(memory, "refund question", Budget(recall_chars=3_000))
    assert len(render(recalled)) <= 3_000 and recalled[-1] == memory.turns[-1] and len(recalled) == 3


def test_eviction_weighs_relevance_and_use_not_only_age() -> None:
    budget = Budget(max_turns=4)
    memory = remembered([REFUNDS[0], SHIPPING[0]], budget=budget)
    memory = noted(memory, [memory.turns[0]])  # the refunds turn proved useful: it was recalled
    memory = noted(memory, [memory.turns[0]])
    memory = remembered([SHIPPING[1], ("What do the warranty terms cover?", "Manufacturing defects.")], memory, budget)
    memory = remembered([("Is the warranty two years long?", "Two years.")], memory, budget)
    kept = [t.question for t in memory.turns]
    assert len(kept) == 4 and memory.evicted == 1
    assert REFUNDS[0][0] in kept  # the oldest survives: it was recalled twice
    assert SHIPPING[0][0] not in kept  # an older, never recalled, off-topic turn went first


def test_the_size_budget_is_kept_and_the_two_newest_turns_stay() -> None:
    budget = Budget(max_chars=2_000)
    memory = remembered([(f"question {w}", "y" * 600) for w in NAMES[:8]], budget=budget)
    assert memory.size <= 2_000 and [t.question for t in memory.turns][-2:] == ["question gold", "question hazel"]
    huge = remember(Memory(), MemoryTurn("q", "z" * 50_000), budget)
    assert len(huge.turns[0].answer) < 21_000  # one answer is cut, not stored whole
