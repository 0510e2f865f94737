"""④ Evidence features of a candidate: what can be checked about a sentence and its chunk without a model.

A 135M model calls nearly every chunk relevant and nearly every sentence supported; these signals it cannot
fake. Each is a number in [0, 1], computed from text alone (pure functions, no I/O):

    rank_inv        1 / (1 + the chunk's rank in its retrieval)
    score_rel       the chunk's retrieval score over the best score of that retrieval (1 for the top chunk)
    question_in     share of the question's content words found in the chunk (is it about the question?)
    names_in        share of the question's numbers, dates and names found in the chunk (1 when it has none):
                    a chunk about another film or person shares the question's common words, not its names
    sentence_in     share of the sentence's content words found in the chunk
    new_in          share of the sentence's words that are not in the question and are found in the chunk:
                    the part of the sentence that answers must come from the chunk
    novelty         share of the sentence's content words that are not in the question (a restated question
                    has none)
    facts_in        share of the sentence's numbers, dates and names found in the chunk (1 when it has none)
    has_facts       1 when the sentence carries a number, a date or a name
    quote_ok        the model's evidence quote occurs in the chunk (0.5 when no quote was asked for)
    agreement       share of the sentence's new words that a candidate written from another chunk also says
    model_rel       the model's own P(relevant)        (from its labels, or its logprobs where they exist)
    model_sup       the model's own support credit     (P(fully) + 0.5 P(partially))

`drawn_on` says which chunks a sentence written from several at once draws its words from: the one it cites,
plus the one holding the most of what that one lacks (a two-hop sentence needs both of its facts' chunks).

`polarity` gives the cues that a text which settles a claim refutes it rather than supports it (the claim
protocol's third head, `POLARITY`):

    claim_negated       the claim says "not", "no", "never", "n't", ...
    text_negated        the text does
    negation_differs    one of the two does and the other does not
    direction_differs   one says a quantity rises (increase, more, higher, warming, ...) where the other says it
                        falls (decrease, less, lower, cooling, ...)

Whether a written sentence may be kept as written is the `filters` policy's (`engine.filters`); what it states
that its chunk does not hold is the `ground` policy's (`engine.grounding`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

FEATURES = (
    "rank_inv",
    "score_rel",
    "question_in",
    "names_in",
    "sentence_in",
    "new_in",
    "novelty",
    "facts_in",
    "has_facts",
    "quote_ok",
    "agreement",
    "model_rel",
    "model_sup",
)

POLARITY = ("claim_negated", "text_negated", "negation_differs", "direction_differs")

_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers him his how i if in into is it its itself just me more most my no nor not now of off on once
    only or other our ours out over own same she should so some such than that the their theirs them then there
    these they this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yes""".split()
)
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
FACT = re.compile(r"\b\d[\d,.:/-]*\b|(?<![.!?]\s)(?<!^)\b[A-Z][\w'’-]+")  # a number, a date or a name
_CLOSING = r"[\"')\]’”]"  # a quote or bracket that closes round what comes before it
# the space after a sentence's end: its full stop, "!" or "?", and the quotes or brackets that close round it, which
# stay with it ('He said "Go." Then ...': 'He said "Go."'), before a capital, a digit or an opening quote or bracket
_SENTENCE_END = re.compile(rf"(?:(?<=[.!?])|(?<=[.!?]{_CLOSING})|(?<=[.!?]{_CLOSING}{{2}}))\s+(?=[A-Z0-9\"'(\[‘“])")
# a break in a text's layout that ends a sentence whatever its punctuation: a blank line, or a line break before a
# Markdown heading, list item or table row ("... of up to 60 minutes each.\n- Commuter membership: $15 per month.")
_BLOCK_BREAK = re.compile(r"\r?\n[ \t\r]*\n\s*|\r?\n[ \t]*(?=#{1,6}[ \t]|[-*+•][ \t]|\d{1,3}[.)][ \t]|\|)")
_HEADING = re.compile(r"#{1,6}[ \t]")
_LIST_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])[ \t]+")
_LINE_BREAK = re.compile(r"[ \t\r]*\n[ \t]*")
_STRONG = re.compile(r"(?<!\w)\*\*(\S(?:.*?\S)?)\*\*(?!\w)")  # Markdown's bold: "**In the app.** Download ..."
_NOT_AN_END = re.compile(  # a full stop that ends an abbreviation or an initial, not a sentence
    r"(?:\b(?:[A-Za-z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Sgt|Capt|Gov|Sen|Rep|No|Vol|vs|v|etc|e\.g|i\.e|U\.S|"
    rf"Inc|Ltd|Co|Corp|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.){_CLOSING}*$"
)
AUXILIARY = r"(?:is|are|am|was|were|do|does|did|can|could|will|would|shall|should|has|have|had|may|might|must)\b"
_YES_NO = re.compile(rf"^\s*{AUXILIARY}", re.I)
_ASKED = re.compile(r"(?<=[.!])\s+(?=[A-Z])")  # a statement before the question ends with "." or "!"
# a condition or a setting before the question, then a comma or a dash, and the question asked of a person or a
# thing ("If my account is suspended, can I still vote?", "On a Household plan, can each of us ...?", "I joined
# last week - can I take an e-bike?"); not HaluEval's "Extras, is a British sitcom ... which ...?"
_SETTING = re.compile(
    r"^\s*(?:(?:if|when|whenever|while|once|on|in|at|as|for|since|after|before|with|without|during|unless)\b"
    r"[^?]*?,|[^?]*?\s[-–—])\s+"
    rf"(?={AUXILIARY}\s+(?:i|we|you|he|she|it|they|there|my|our|your|his|her|their|the|a|an|this|that|each|any)\b)",
    re.I,
)
# a polite request wrapped round the question: "Could you please tell me how long ...?", "Would you kindly give me
# the phone number?"; it is a yes/no question only where what it asks is ("Can you tell me whether ...?")
_REQUEST = re.compile(
    r"^\s*(?:(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+)?|please\s+)"
    r"(?:tell|give|send|show|remind|let)\s+(?:me|us)\s+(?:know\s+)?(?:please\s+)?",
    re.I,
)
_WHETHER = re.compile(r"^\s*(?:whether|if)\b", re.I)
QUESTION_WORDS = r"(?:who|whom|whose|what|which|how|when|where|why)\b"
# a yes/no question with no verb, as typed in a search box: what it asks of a thing ("Riverside Park station open in
# winter?", "Rebalancing rides on e-bikes allowed?") or a value to confirm ("Commuter plan $15 a month now?")
_STATE = (
    r"allowed|permitted|required|mandatory|compulsory|free|open|closed|available|included|possible|ok|okay|needed"
    r"|necessary|refundable|covered|accepted|banned|forbidden|prohibited|valid|insured"
)
_VERBLESS = re.compile(
    rf"^(?!.*\b(?:{AUXILIARY}|{QUESTION_WORDS}))(?=.*(?:\b(?:{_STATE})\b|[$€£]\d|\d\s*%))[^?]*\?\s*$", re.I
)
VERBLESS_WORDS = 10  # a longer question with no verb is a sentence that lost one, not a search-box question
# asks a value: "when", "where" and "why" only in the question itself, not in a condition before it ("If ... when I
# arrive, do I ...?")
_WH = re.compile(r"\b(?:which|what|who|whom|whose|how)\b|\b(?:when|where|why)\b(?=[^,]*$)", re.I)
# words that ask for a value or a choice; not "who" or "which", which may open a relative clause ("Is the man who
# directed Jaws American?" is a yes/no question)
_OPEN = re.compile(r"\b(what|how many|how much|which year|or)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|nothing|none|nor|neither|cannot|without)\b|n['’]t\b", re.I)
_RISES = re.compile(
    r"\b(?:increas\w*|rise|rises|rising|rose|more|higher|warm\w*|grow\w*|gain\w*|expand\w*|accelerat\w*)\b", re.I
)
_FALLS = re.compile(
    r"\b(?:decreas\w*|declin\w*|fall|falls|falling|fell|less|lower|cool\w*|shrink\w*|loss|lose|losing|lost|slow\w*"
    r"|drop\w*|reduc\w*)\b",
    re.I,
)
NUMBER_WORDS = tuple(  # a count written out, by its value ("four" is NUMBER_WORDS[4])
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()
)
MAX_SOURCES = 2  # a sentence is judged against at most this many chunks (HotpotQA's questions need two)


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=4096)
def terms(text: str) -> frozenset[str]:
    """Content words of a text, lower-cased and stemmed, stopwords left out."""
    return frozenset(_stemmer().stemWords([w for w in words(text) if w not in _STOPWORDS]))


def words(text: str) -> list[str]:
    """A text's words, lower-cased, as `terms` reads them ("isn't" and "e-bike" are one word each)."""
    return _WORD.findall(text.lower())


def denies(word: str) -> bool:
    """The word is a denial: "not", "no", "never", "nothing", "cannot", "without", an "-n't" ("isn't")."""
    return bool(_NEGATION.search(word))


def facts(text: str) -> frozenset[str]:
    """Numbers, dates and capitalised names in a text (not its first word), lower-cased."""
    return frozenset(match.lower().rstrip(".,:/-") for match in FACT.findall(text.strip()))


def share(part: Iterable[str], whole: frozenset[str], empty: float = 0.0) -> float:
    """The share of `part`'s items that `whole` holds (`empty` when `part` has none)."""
    items = list(part)
    return sum(item in whole for item in items) / len(items) if items else empty


# a full stop with a capital right after it; before it three letters or digits (not an abbreviation's: "St.Mary's",
# "Mr.Li") or a closing bracket or quote ("... (born 1971).Anette Olsson", '... "Tiny Dancer".Elton John ...')
_GLUED = re.compile(r"(?:(?<=[a-z0-9]{3})|(?<=[)\"\u201d]))\.(?=[A-Z][a-z])")


def spaced(text: str) -> str:
    """A text whose sentences run together with no space ("...in Philadelphia.First for Women is ...", as in
    HaluEval's snippets) with a space put back, so `sentences` reads each as one. The one owner of this repair:
    the critic's extracted sentences and the comparisons' own sentences both read texts through it."""
    return _GLUED.sub(". ", text)


def sentences(text: str) -> list[str]:
    """A text cut into sentences (a light splitter: end punctuation followed by a capital or a digit, but not
    after an initial or a common abbreviation: "Dred Scott v. Sandford", "J. R. R. Tolkien", "Dr. Smith"). A quote
    or bracket that closes round a sentence's end stays with it ('He said "Go."'), curly ones as straight ones.

    The text's layout ends a sentence too: a paragraph, a list item and a table row are each their own, with the
    item's bullet or number taken off, and a line broken inside a sentence is joined with a space. A Markdown
    heading's own line names a section and states nothing: it is no sentence (the lines under it are)."""
    out: list[str] = []
    blocks = [b.strip() for b in _BLOCK_BREAK.split(text.strip())]
    for block in blocks:
        if _HEADING.match(block):  # the heading's own line; the lines under it stay ("# Fees\nThe fee is ...")
            block = block.partition("\n")[2].strip()
        if not block:
            continue
        if len(blocks) > 1:  # a list's item: in a text of one line, "- May 7, 1762)" or "815) is" is a fragment
            block = _LIST_MARKER.sub("", block, count=1)
            if not _WORD.search(block):
                continue  # a table's rule ("|---|---|") or a lone bullet
        block = _STRONG.sub(r"\1", block)
        first = len(out)
        for part in (_LINE_BREAK.sub(" ", p.strip()) for p in _SENTENCE_END.split(block)):
            if not part:
                continue
            if len(out) > first and _NOT_AN_END.search(out[-1]):
                out[-1] = f"{out[-1]} {part}"
            else:
                out.append(part)
    return out


def features(
    question: str,
    sentence: str,
    chunk_text: str,
    *,
    rank: int,
    score_rel: float | None,
    quote_ok: bool | None,
    model_rel: float,
    model_sup: float,
    others: Sequence[str] = (),
) -> dict[str, float]:
    """The feature vector of one candidate (see the module docstring); `others` are the sentences written
    from the other chunks of the same beam this step."""
    asked, said, chunk = terms(question), terms(sentence), terms(chunk_text)
    new = said - asked
    chunk_facts = facts(chunk_text)
    chunk_lower = chunk_text.lower()
    asked_facts = facts(question)
    said_facts = [f for f in facts(sentence) if f not in asked_facts]
    elsewhere = frozenset().union(*(terms(other) for other in others)) if others else frozenset()
    return {
        "rank_inv": 1.0 / (1 + max(rank, 0)),
        "score_rel": 0.5 if score_rel is None else min(max(score_rel, 0.0), 1.0),
        "question_in": share(asked, chunk),
        "names_in": share(asked_facts, chunk_facts | _present(sorted(asked_facts), chunk_lower), empty=1.0),
        "sentence_in": share(said, chunk),
        "new_in": share(new, chunk),
        "novelty": len(new) / len(said) if said else 0.0,
        "facts_in": share((f for f in said_facts), chunk_facts | _present(said_facts, chunk_lower), empty=1.0),
        "has_facts": 1.0 if said_facts else 0.0,
        "quote_ok": 0.5 if quote_ok is None else float(quote_ok),
        "agreement": share(new, elsewhere) if others else 0.0,
        "model_rel": model_rel,
        "model_sup": model_sup,
    }


def _present(items: Sequence[str], text_lower: str) -> frozenset[str]:
    """The items that occur in the text as written (a name the fact pattern split differently)."""
    return frozenset(item for item in items if item in text_lower)


def drawn_on(question: str, sentence: str, texts: Sequence[str], cited: int) -> tuple[int, ...]:
    """The chunks (indices into `texts`) a sentence written from all of them draws on: the cited one first,
    then, up to `MAX_SOURCES`, the chunk holding the most of the sentence's new words, numbers and names that
    the chosen ones lack (ties: the earlier chunk). A sentence that one chunk covers draws on that one alone."""
    new_terms = terms(sentence) - terms(question)
    new_facts = sorted(facts(sentence) - facts(question))
    held = [  # what each chunk holds of the sentence's new words and facts (facts prefixed, kept apart from words)
        new_terms & terms(text) | {f"fact:{f}" for f in facts_held(new_facts, text)} for text in texts
    ]
    chosen = [cited]
    while len(chosen) < min(MAX_SOURCES, len(texts)):
        missing = frozenset().union(*held) - frozenset().union(*(held[i] for i in chosen))
        best = max((i for i in range(len(texts)) if i not in chosen), key=lambda i: (len(missing & held[i]), -i))
        if not missing & held[best]:
            break
        chosen.append(best)
    return tuple(chosen)


def facts_held(items: Sequence[str], text: str) -> frozenset[str]:
    """The numbers, dates and names among `items` that the text holds."""
    return frozenset(items) & (facts(text) | _present(items, text.lower()))


def vector(values: Mapping[str, float]) -> list[float]:
    return [float(values[name]) for name in FEATURES]


def polarity(claim: str, text: str) -> list[float]:
    """The `POLARITY` cues of a text against a claim, in that order (see the module docstring)."""
    claim_negated, text_negated = bool(_NEGATION.search(claim)), bool(_NEGATION.search(text))
    claim_way, text_way = _direction(claim), _direction(text)
    return [
        float(claim_negated),
        float(text_negated),
        float(claim_negated != text_negated),
        float(claim_way * text_way < 0),
    ]


def _direction(text: str) -> int:
    """1 when the text says something rises and nothing falls, -1 the reverse, else 0."""
    return int(bool(_RISES.search(text))) - int(bool(_FALLS.search(text)))


def asks_yes_no(question: str) -> bool:
    """The question is answered yes or no ("Is ...?", "Does ...?", "Were both ...?"): it opens with an auxiliary
    verb and asks for no value and no choice ("Was Summit or Crosstrack ...?", "Will Penny was ... of what
    nationality?" and "Do You Believe?, released in which year, ...?" are not). A question after a statement
    ("X has an OBE. Does Y also have one?"), a condition or a setting ("If I report a fault, am I charged?", "On
    a Household plan, can we ...?") is read from its last part; a polite request ("Could you tell me how long
    ...?") by what it asks (`unwrapped`). With no verb and no question word, a short question asking a state
    ("E-bikes allowed on the trails?") or confirming an amount ("Day pass still $5?") is a yes/no question."""
    request = _REQUEST.match(question)
    if request is not None:
        return bool(_WHETHER.match(question[request.end() :]))
    if _VERBLESS.match(question) and len(question.split()) <= VERBLESS_WORDS:
        return True
    asked = question if _YES_NO.match(question) else _ASKED.split(question.strip())[-1]
    if _YES_NO.match(asked):
        return not _OPEN.search(asked)
    setting = _SETTING.match(asked)
    return setting is not None and not _OPEN.search(asked) and not _WH.search(asked)


def unwrapped(question: str) -> str:
    """The question a polite request wraps ("Could you please tell me how long X?" -> "how long X?"), or the
    question itself where no request does."""
    return _REQUEST.sub("", question, count=1)
