"""What every benchmark system shares: the system registry (`System`, `parse_system`), the prompt book, the
per-question `Context`, the `Outcome` a system returns, and the helpers for numbered documents, citations,
usage and one critic call on a (statement, chunk) pair.

The systems under test, all on the same model and the same BM25 index (dispatched by answer.py):

    no-retrieval   one call, the model's own knowledge (answer_direct / verify_claim_direct)
    rag            plain RAG: top-ndocs chunks in one prompt, one answer, citations requested
                   (rag_answer / rag_verify_claim)
    selfrag        the engine (SelfRAG.aanswer) for QA (qa.py); the closed-set protocol (claims.py) for claims.
                   Greedy by default; --beam-width 2 for the beam; ablations by flags:
                   --critic separate, --w-sup 0, --mode always; `+short` is the paper's short-form
                   setting (depth 1: one answer per passage, best by the critic score; shortform.py);
                   `+pooled` adds one candidate per step written from all its chunks (--pooled)
    critic         critic agreement (qa.py): ISSUP of the engine's critic prompt on gold-labelled (statement,
                   document) pairs: CLIMATE-FEVER's claim/sentence labels, HaluEval's right vs hallucinated
                   answer with the same knowledge

A system never decides correctness: it returns what it answered, cited and retrieved; metrics are computed
from the samples later (score.py), so a run can be re-scored without the model.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..config import Config, config_dict
from ..engine.calibration import PaperRater, Rater
from ..engine.context import Deps, Run
from ..engine.critic import defaulted_critique
from ..errors import ConfigError, FatalLLMError, LLMError
from ..labels import CriticMode, Mode
from ..llm.base import ChatModel
from ..llm.replies import REPLY_MODELS, CritiqueReply, check_quote, critique_from
from ..prompts import PromptBook, prompts_dir
from ..retrieval import as_searcher
from ..schema import Chunk, Critique, Meter
from .datasets import Dataset, Example
from .replies import BENCH_REPLY_MODELS

KINDS = ("no-retrieval", "rag", "selfrag", "critic")
LABELS = {"supports": "SUPPORT", "refutes": "CONTRADICT", "nei": "NEI"}  # prompt label -> dataset label
BENCH_DEFAULTS: dict[str, Any] = {
    "max_depth": 3,
    "ndocs": 5,
    "nonce_seed": "selfrag-bench",
    "deadline": 900.0,
    "lead": False,  # the tables were measured without the short-answer call; `--lead` measures it
    "scorer": "paper",  # `selfrag` is the paper's critic; `selfrag+evidence` names the fitted one
}

# knobs added after runs were measured: described (and so in the run hash) only when set otherwise, so the
# folders of earlier runs keep their hash
LATER_KNOBS: dict[str, Any] = {
    "pooled": False,
    "lead_ahead": True,
    "short_replies": False,
    "hops": True,
    "ground": True,
    "extract": True,
    "ask_plainly": True,
    "disowned": True,
    "check": True,
}


class BenchPrompts(PromptBook):
    """The engine's prompts plus the benchmark's own (prompts/bench/), with both sets of reply models."""

    def __init__(self, folder: Path | None = None) -> None:
        bench = prompts_dir() / "bench"
        super().__init__(folder or prompts_dir(), bench, models={**REPLY_MODELS, **BENCH_REPLY_MODELS})


@dataclass(frozen=True, slots=True)
class System:
    """A system kind plus the engine knobs it runs with (the same Config for every kind of a comparison)."""

    kind: str
    config: Config
    oracle_flip: float | None = None  # diagnostic: gold-derived ISREL/ISSUP, each flipped with this probability

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown system {self.kind!r}; known: {', '.join(KINDS)}")
        if self.oracle_flip is not None and not 0.0 <= self.oracle_flip <= 1.0:
            raise ConfigError(f"the oracle's flip probability must be from 0 to 1, got {self.oracle_flip}")

    @property
    def label(self) -> str:
        """A short name with the ablations that differ from the defaults, e.g. `selfrag-b2+separate`."""
        if self.kind == "critic":
            return self.kind if self.config.scorer in ("paper", "auto") else f"critic+{self.config.scorer}"
        if self.kind != "selfrag":
            return self.kind
        c, parts = self.config, ["selfrag" if self.config.beam_width == 1 else f"selfrag-b{self.config.beam_width}"]
        if c.critic is CriticMode.SEPARATE:
            parts.append("separate")
        if c.w_sup != 1.0:
            parts.append(f"wsup{c.w_sup:g}")
        if c.mode is not Mode.ADAPTIVE:
            parts.append(c.mode.value)
        if c.max_depth == 1:
            parts.append("short")  # the paper's short-form setting: one answer per passage, best by f
        if c.scorer not in ("paper", "auto"):  # auto is made concrete before a run (`config.resolve_scorer`)
            parts.append(c.scorer)
        if c.abstain_below is not None:
            parts.append(f"abstain{c.abstain_below:g}")
        if c.pooled:
            parts.append("pooled")
        if self.oracle_flip is not None:
            parts.append(f"oracle{self.oracle_flip:g}")
        return "+".join(parts)

    def describe(self) -> dict[str, Any]:
        later = {k: v for k, v in LATER_KNOBS.items() if getattr(self.config, k) == v}
        config = {k: v for k, v in config_dict(self.config).items() if k not in later}
        described = {"kind": self.kind, "label": self.label, "config": config}
        return described if self.oracle_flip is None else {**described, "oracle_flip": self.oracle_flip}


def parse_system(name: str, config: Config) -> System:
    """A system from its name; the labels `System.label` prints are accepted back, so
    `selfrag-beam2` / `selfrag-b2` set beam width 2 and `+separate`, `+wsup0`, `+always` set the ablations."""
    base, *mods = name.split("+")
    values: dict[str, Any] = {}
    oracle = None
    match = re.fullmatch(r"selfrag-(?:beam|b)(\d+)", base)
    if match:
        base, values["beam_width"] = "selfrag", int(match.group(1))
    if base == "critic" and all(mod in ("paper", "evidence") for mod in mods):
        return System(base, config.with_values(scorer=mods[-1]) if mods else config)
    if mods and base != "selfrag":
        raise ConfigError(f"ablations ({'+'.join(mods)}) apply to selfrag only, not to {base!r}")
    for mod in mods:
        if mod in ("separate", "fused"):
            values["critic"] = mod
        elif mod in ("always", "never", "adaptive"):
            values["mode"] = mod
        elif mod in ("paper", "evidence"):
            values["scorer"] = mod
        elif mod == "short":
            values["max_depth"] = 1
        elif mod == "pooled":
            values["pooled"] = True
        elif (weight := re.fullmatch(r"wsup(-?[0-9.]+(?:e[-+]?[0-9]+)?)", mod)) is not None:
            values["w_sup"] = float(weight.group(1))
        elif (cut := re.fullmatch(r"abstain([0-9.]+)", mod)) is not None:
            values["abstain_below"] = float(cut.group(1))
        elif (flip := re.fullmatch(r"oracle([0-9.]+)", mod)) is not None:
            oracle = float(flip.group(1))
        else:
            raise ConfigError(
                f"unknown ablation {mod!r} in {name!r}; use separate, always, never, short, evidence, pooled, "
                "wsup<weight> or oracle<flip probability>"
            )
    return System(base, config.with_values(**values) if values else config, oracle)


@dataclass
class Outcome:
    """What a system did for one example (no judgement of correctness)."""

    prediction: str = ""  # the answer without citation markers (QA), or the label (claims)
    display: str = ""  # the answer as shown, with [n] markers
    label: str | None = None  # claims: SUPPORT | CONTRADICT | NEI
    citations: list[str] = field(default_factory=list)  # chunk key of each cited segment, in order
    cited_texts: list[str] = field(default_factory=list)  # the text that cites it (for sentence alignment)
    retrieved: list[str] | None = None  # every chunk key retrieved; None for a system that never retrieves
    queries: list[str] = field(default_factory=list)  # the search queries the system used
    confidence: float | None = None  # from the critique (None for systems without one)
    segments: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)  # selfrag QA: every candidate of every step
    label_scores: dict[str, float] | None = None
    pairs: list[dict[str, Any]] | None = None
    stop_reason: str = "final"
    abstained: bool | None = None  # selfrag QA: the engine said the documents do not say (None: no such notion)
    lead_from: str | None = None  # selfrag QA with a short answer: "model" (one call), or `result.DECIDED` (no call)
    lead_reply: str | None = None  # selfrag QA: the short-answer call's reply, printed or not (`Trace.lead_reply`)
    lead_held: str | None = None  # selfrag QA: that reply as checked where it was held back (`Trace.lead_held`)
    answer_check: float | None = None  # selfrag QA: the model's check of the sentences (`Trace.answer_check`)
    usage: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ClaimRater(Rater, Protocol):
    """A rater the claim benchmarks and critic agreement can use: the engine's members, and `verdict_cut`, the
    P(supported) at or above which a given statement is judged supported (critic agreement), and `refutes`,
    P(a text that settles a claim refutes it), or None where the rater has no such head (the writer's verdict
    stands). The engine calls neither."""

    @property
    def verdict_cut(self) -> float: ...

    def refutes(self, claim: str, text: str) -> float | None: ...


@dataclass
class Context:
    """What every system shares for one question."""

    dataset: Dataset
    index: Any  # selfrag.retrieval.index.Index (or any retriever with find_relevant_chunks)
    chunks: dict[str, Chunk]
    prompts: PromptBook
    chat: ChatModel  # a per-question view of the (cached) endpoint
    critic_chat: ChatModel | None = None
    rater: ClaimRater = field(default_factory=PaperRater)  # the system's scorer, its weights read once per run

    def run(self, system: System, question: str, meter: Meter) -> Run:
        deps = Deps(self.chat, as_searcher(self.index), self.prompts, self.critic_chat, self.rater)
        secret = (system.config.nonce_seed or "selfrag-bench").encode()
        return Run(deps, system.config, question, "", meter, secret)


def usage_of(meter: Meter, *, rounds: int, retrieval_frequency: float) -> dict[str, Any]:
    return {
        "llm_calls": meter.llm_calls,
        "prompt_tokens": meter.prompt_tokens,
        "completion_tokens": meter.completion_tokens,
        "total_tokens": meter.prompt_tokens + meter.completion_tokens,
        "rounds": rounds,
        "retrieval_frequency": retrieval_frequency,
        "reasks": meter.reasks,
        "parse_failures": meter.parse_failures,
        "by_prompt": {name: list(counts) for name, counts in meter.by_prompt.items()},
    }


def documents_block(run: Run, chunks: list[Chunk]) -> str:
    """Numbered document blocks for one prompt, each with its own delimiter nonce."""
    blocks = []
    for n, chunk in enumerate(chunks, 1):
        values = run.document_values(f"rag{n}", chunk)
        blocks.append(
            f'<document n="{n}" nonce="{values["nonce"]}" id="{values["doc_id"]}">\n{values["document"]}\n'
            f'</document nonce="{values["nonce"]}">'
        )
    return "\n\n".join(blocks) if blocks else "(no documents found)"


def cited_chunks(numbers: list[int], chunks: list[Chunk]) -> list[Chunk]:
    """The chunks a reply cites by number: valid numbers only, first mention only, in order."""
    seen: dict[int, Chunk] = {}
    for n in numbers:
        if isinstance(n, int) and 1 <= n <= len(chunks) and n not in seen:
            seen[n] = chunks[n - 1]
    return list(seen.values())


async def ask_over_top_chunks(
    system: System, example: Example, ctx: Context, prompt: str, **values: str
) -> tuple[Any, list[Chunk], list[Chunk], dict[str, Any]]:
    """Plain RAG's one call: the top-ndocs chunks in numbered blocks, one reply. Returns the reply, the chunks,
    the chunks the reply cites (valid numbers, first mention) and the usage."""
    meter = Meter()
    run = ctx.run(system, example.question, meter)
    chunks = [hit.chunk for hit in ctx.index.find_relevant_chunks(example.question, system.config.ndocs)]
    parsed = await run.ask(prompt, logprobs=False, documents=documents_block(run, chunks), **values)
    cited = cited_chunks(list(parsed.value.citations), chunks)  # type: ignore[attr-defined]
    return parsed.value, chunks, cited, usage_of(meter, rounds=1, retrieval_frequency=1.0)


async def judge_pair(run: Run, question: str, statement: str, chunk: Chunk) -> tuple[Critique, str]:
    """One critic call on (statement, chunk); conservative labels when the reply stays invalid."""
    document = run.document_values("critic", chunk)
    try:
        parsed = await run.ask(
            "critique_candidate",
            critic=True,
            question=question,
            draft=run.draft(""),
            sentence=statement,
            **document,
            **run.version_values(chunk, document["nonce"]),
        )
    except FatalLLMError:
        raise
    except LLMError:
        return defaulted_critique(), ""
    assert isinstance(parsed.value, CritiqueReply)
    critique = critique_from(parsed, with_evidence=True, sentence_field=None)
    return check_quote(critique, parsed.value.evidence, chunk.text), parsed.value.support
