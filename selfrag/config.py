"""Configuration: the paper's knobs under the paper's names, the endpoint, and the per-answer budgets.

Frozen dataclasses with range checks; `ConfigError` names the field and its allowed range. Which value wins
when a knob is set in several places (flag > SELFRAG_* environment > TOML file > default) is decided in
`selfrag.settings`; this module only holds and checks values, and resolves which key goes to which endpoint.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from urllib.parse import urlsplit

from .errors import ConfigError
from .labels import CriticMode, Mode

OPENAI_HOSTS = ("api.openai.com",)
VARIANT_KINDS = ("multi", "hyde", "decompose")  # query variants the LLM may write (see engine/retriever.py)
DENSE_MODES = ("auto", "on", "off")
LOGPROBS_MODES = ("auto", "on", "off")  # whether the engine asks for logprobs (see llm/costs.py)
SCORERS = ("auto", "paper", "evidence")  # how a candidate's critique becomes P(relevant), P(supported)
_ON = dict.fromkeys(
    (
        "supersession",
        "filters",
        "ask_plainly",
        "disowned",
        "ground",
        "extract",
        "hops",
        "lead",
        "decide",
        "confirm",
        "denials",
        "check",
    ),
    True,
)
# a preset: the scorer and every policy's switch (engine.policies); "paper" runs the paper's algorithm and nothing
# else, "default" adds every policy, each safe with any model (a decided answer is checked before it is printed)
PRESETS: dict[str, dict[str, object]] = {
    "default": {"scorer": "auto", **_ON},
    "paper": {"scorer": "paper", **dict.fromkeys(_ON, False)},
}
PROTOCOLS = ("auto", "chat", "reflection-tokens")  # how the endpoint's model talks (see llm/reflection_chat.py)
PLACEHOLDER_KEY = "sk-no-key-needed"  # local servers want some key; this one is never a secret


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """One OpenAI-compatible chat endpoint."""

    base_url: str | None = None  # None: OPENAI_BASE_URL, else the SDK's default (OpenAI)
    model: str | None = None  # None: the endpoint's first listed model
    api_key: str | None = field(default=None, repr=False)  # never printed; see resolve_endpoint
    send_openai_key: bool = False  # allow OPENAI_API_KEY to go to a base URL that is not OpenAI's
    max_concurrency: int = 32  # requests in flight at once (a cap: the calls the server serves at once lower
    # it for good, 429s for a while; see llm/parallel.py and llm/limiter.py)
    timeout: float = 60.0  # seconds per HTTP request (the SDK retries timeouts)
    max_retries: int = 2  # the SDK's transport retries per request
    top_logprobs: int = 10  # alternatives per token when logprobs are available
    logprobs: str = "auto"  # auto: ask for logprobs where the probe finds them cheap (costs.py); on; off
    breaker_threshold: int = 8  # consecutive failed calls that open the circuit breaker
    breaker_cooldown: float = 30.0  # seconds the open breaker refuses calls before one trial
    protocol: str = "auto"  # chat (JSON replies) | reflection-tokens (Self-RAG checkpoints); auto: by model name

    def __post_init__(self) -> None:
        _check_range("max_concurrency", self.max_concurrency, 1, 1024)
        _check_range("timeout", self.timeout, 0.1, 3600)
        _check_range("max_retries", self.max_retries, 0, 10)
        _check_range("top_logprobs", self.top_logprobs, 1, 20)
        if isinstance(self.logprobs, bool):  # TOML `logprobs = true` reads as on
            object.__setattr__(self, "logprobs", "on" if self.logprobs else "off")
        _check_choice("logprobs", self.logprobs, LOGPROBS_MODES)
        _check_range("breaker_threshold", self.breaker_threshold, 1, 1000)
        _check_range("breaker_cooldown", self.breaker_cooldown, 0.0, 3600)
        _check_choice("protocol", self.protocol, PROTOCOLS)
        if self.base_url is not None:
            check_base_url(self.base_url)


@dataclass(frozen=True, slots=True)
class Config:
    """Every knob of one answer. Names follow the paper (and its reference code) on purpose."""

    mode: Mode = Mode.ADAPTIVE  # when to retrieve: adaptive (soft rule), always, never
    threshold: float = 0.2  # adaptive: retrieve when P(yes or continue) / P(any) > threshold
    beam_width: int = 1  # partial answers kept per step (1 = greedy)
    max_depth: int = 7  # most segments (sentences) in an answer
    ndocs: int = 5  # chunks retrieved per step = candidates per beam
    w_rel: float = 1.0  # weight of ISREL in a candidate's score
    w_sup: float = 1.0  # weight of ISSUP
    w_use: float = 0.5  # weight of ISUSE in f with the paper's scorer (the evidence scorer leaves it out)
    use_seqscore: bool = False  # add the sentence's geometric-mean token probability when logprobs exist
    critic: CriticMode = CriticMode.FUSED  # fused: one call writes and judges; separate: a second call judges
    gate_irrelevant: bool = False  # hard gate: drop candidates judged irrelevant
    gate_unsupported: bool = False  # hard gate: drop candidates with no support
    preset: str = "default"  # which policies are on (PRESETS): default (safe with any model) | paper (the
    # paper's algorithm only); a switch set on its own (lead, decide, ground, ...) wins over the preset's
    scorer: str | None = None  # paper: the model's labels alone; evidence: labels + evidence features, fitted;
    # auto: evidence on the embedded model (where the weights were fitted and measured to win), and on an
    # endpoint whose model has weights (engine.fitted.pick: `selfrag calibrate`, or scorer_weights), else paper;
    # None: the preset's (default: auto; paper: paper)
    scorer_weights: str | None = None  # evidence scorer: a weights file from `selfrag calibrate` or `selfrag critic
    # fit` (None: those calibrated for the endpoint's model, else the shipped ones on the embedded model)
    lead: bool | None = None  # a yes/no, choice or factoid question gets its short answer first (one more call)
    lead_ahead: bool = True  # an endpoint's model: the short answer's call is sent while a step writes, not after
    # the loop (no round of its own; a call for nothing where the answer reads other documents: engine.lead.EarlyLead)
    decide: bool | None = None  # the documents may decide that short answer with no call (engine.decide,
    # engine.values), checked against the kept sentences first (engine.denials); off: the model's own short answer
    confirm: bool | None = None  # a decided short answer is printed only where the model, asked a closed-set question
    # about the clause that decided it, agrees (prompts/confirm_decision.toml; one call); else the model's own short
    # answer. An endpoint's model only: the embedded one where its own counts beat the rule's (engine.confirm)
    denials: bool | None = None  # the model's own "Yes." or chosen option prints as "The documents don't settle
    # it." where a kept sentence or a document read denies it (engine.denials: "X is not waterproof")
    check: bool | None = None  # the answer's confidence reads the model's verdict that the answer gives what the
    # question asks (prompts/check_answer.toml; one call), where the weights' answered head reads it (engine.check)
    filters: bool | None = None  # degenerate sentences are declined or cut (restating the question, repeating the
    # draft, about the document, several at once: engine.filters)
    pooled: bool = False  # one more candidate per beam and step, written from all its chunks at once (plain RAG's
    # view), when it has two or more; one more call per beam and step
    hops: bool | None = None  # evidence scorer: the answer's second hop (engine.hops), a sentence the search wrote
    # from a chunk the kept one's chunk names, added after the search (no call)
    ground: bool | None = None  # evidence scorer: a sentence stating a number, date or name its chunk does not
    # hold is replaced by the chunk's sentence it was drawn from, or declined (engine.grounding.grounded)
    extract: bool | None = None  # evidence scorer: from each chunk of several sentences, its own sentence that shares
    # most with the question is extracted and rated beside the model's (engine.extract; no call)
    ask_plainly: bool | None = None  # a sentence that restates the question is asked for once more, with the question
    # after the document and a plain instruction to answer it (one more call); if that one is degenerate too, its
    # chunk's own best sentence competes (engine.ask_plainly)
    disowned: bool | None = None  # paper's scorer: sentences the model itself calls irrelevant and unsupported are
    # declined where their beam has no other sentence left, so none becomes the answer alone (engine.disowned)
    abstain_below: float | None = None  # answer support under which a sentence is not kept (the weights' answers
    # head's probability, else P(relevant)·P(supported): engine.calibration); None: the
    # weights' own threshold with the evidence scorer, never with the paper's
    reasks: int = 1  # corrective re-asks after an invalid structured reply
    short_replies: bool = False  # the reply schema caps free-text fields (llm.replies.SHORT_REPLY_CHARS)
    max_chunk_chars: int = 2000  # longest chunk text put in one prompt
    max_llm_calls: int = 400  # per-answer budget of HTTP requests
    max_total_tokens: int = 400_000  # per-answer budget of prompt + completion tokens
    deadline: float = 600.0  # seconds per answer
    nonce_seed: str | None = None  # fixes the document delimiters (reproducible prompts for caching)
    strategy: str = "top"  # top: chunks as found; window: each hit widened with its neighbouring chunks
    fusion: str = "none"  # none | rrf | weighted: fuse stemmed and unstemmed BM25 (index built with both)
    rerank: bool = False  # cheap lexical-overlap reranking of the BM25 hits
    freshness: float = 0.0  # 0 off; e.g. 0.05: a recency bonus for dated chunks that breaks near-ties
    supersession: bool | None = None  # a chunk of a superseded document yields to its newer version (when linked)
    supersede_from: str = ""  # index time: comma list of folders whose documents may supersede others ("": any)
    query_variants: str = ""  # comma list of multi, hyde, decompose: LLM-written queries fused with the query
    variant_count: int = 3  # paraphrases (multi) and most sub-questions (decompose) per variant call
    dense: str = "auto"  # auto: use the index's dense vectors if it has them; on: require them; off: BM25 only
    embedding_model: str | None = None  # None: the model the index was embedded with (a different one is refused)
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    critic_endpoint: EndpointConfig | None = None  # separate critic on another model (None: same endpoint)
    embedded: bool = False  # the chat model is the embedded one (set by resolve_scorer, not a knob): its own reading
    # of a question's kind and of a decision does not count (the regexes and the rules stand)

    def __post_init__(self) -> None:
        _check_choice("preset", self.preset, tuple(PRESETS))
        for name, value in PRESETS[self.preset].items():  # None: the preset's; a value set on its own wins
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        object.__setattr__(self, "mode", _enum(Mode, "mode", self.mode))
        object.__setattr__(self, "critic", _enum(CriticMode, "critic", self.critic))
        _check_range("threshold", self.threshold, 0.0, 1.0)
        _check_range("beam_width", self.beam_width, 1, 16)
        _check_range("max_depth", self.max_depth, 1, 50)
        _check_range("ndocs", self.ndocs, 1, 20)
        for name in ("w_rel", "w_sup", "w_use"):
            _check_range(name, getattr(self, name), -10.0, 10.0)
        _check_choice("scorer", self.scorer, SCORERS)
        if self.abstain_below is not None:
            _check_range("abstain_below", self.abstain_below, 0.0, 1.0)
        if self.scorer_weights is not None and not str(self.scorer_weights).strip():
            raise ConfigError("scorer_weights must be a file path, or unset for the shipped weights")
        _check_range("reasks", self.reasks, 0, 5)
        _check_range("max_chunk_chars", self.max_chunk_chars, 100, 100_000)
        _check_range("max_llm_calls", self.max_llm_calls, 1, 1_000_000)
        _check_range("max_total_tokens", self.max_total_tokens, 1, 1_000_000_000)
        _check_range("deadline", self.deadline, 0.01, 86_400)
        _check_choice("strategy", self.strategy, ("top", "window"))
        _check_choice("fusion", self.fusion, ("none", "rrf", "weighted"))
        _check_range("freshness", self.freshness, 0.0, 1.0)
        object.__setattr__(self, "query_variants", ",".join(variant_kinds(self.query_variants)))
        object.__setattr__(self, "supersede_from", ",".join(supersede_folders(self.supersede_from)))
        _check_range("variant_count", self.variant_count, 1, 10)
        _check_choice("dense", self.dense, DENSE_MODES)
        if self.embedding_model is not None and not self.embedding_model.strip():
            raise ConfigError("embedding_model must be a model name, or unset to use the index's own")

    def with_values(self, **values: object) -> Config:
        """A copy with some knobs changed (checked again); unknown names raise ConfigError. A new preset sets the
        switches not given with it."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if "preset" in values:
            values = {**dict.fromkeys(PRESETS.get(str(values["preset"]), {})), **values}
        return replace(self, **values)  # type: ignore[arg-type]


SECRET_FIELDS = frozenset({"api_key", "nonce_seed"})  # masked as "***" in public views
MASK = "***"


def config_dict(config: Config, *, public: bool = False) -> dict[str, object]:
    """The configuration as plain values (enums as their values).

    Default: the knobs of one answer, as a Result records them (no endpoint tables). `public=True`: every field,
    the endpoint tables included, each secret masked as "***" and credentials cut from base URLs (`config show`).
    """
    return _table(config, public)


def _table(value: Config | EndpointConfig, public: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    for spec in fields(value):
        item = getattr(value, spec.name)
        if spec.name in ("endpoint", "critic_endpoint"):
            if public:
                out[spec.name] = _table(item, public) if item is not None else None
        elif public and spec.name in SECRET_FIELDS:
            out[spec.name] = MASK if item is not None else None
        elif public and spec.name == "base_url" and item is not None:
            out[spec.name] = redact_url(item)
        else:
            out[spec.name] = getattr(item, "value", item)
    return out


def variant_kinds(text: str) -> tuple[str, ...]:
    """The query-variant kinds of a comma list ("multi, hyde"), lower-cased and deduplicated, in order."""
    if not isinstance(text, str):
        raise ConfigError(f"query_variants must be a comma list of {', '.join(VARIANT_KINDS)}, got {text!r}")
    kinds = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in VARIANT_KINDS]
    if unknown:
        raise ConfigError(
            f"query_variants: unknown kind(s) {', '.join(unknown)}; use a comma list of {', '.join(VARIANT_KINDS)}"
        )
    return kinds


def supersede_folders(value: object) -> tuple[str, ...]:
    """The folders of `supersede_from` (a comma list, or a TOML list) as relative paths without a trailing
    slash ("policies/, ./rules" -> ("policies", "rules")); an absolute path, `..` or an empty name is refused."""
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, list | tuple) or not all(isinstance(p, str) for p in parts):
        raise ConfigError(f"supersede_from must be a comma list of folders such as 'policies/', got {value!r}")
    folders = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        names = [n for n in part.replace("\\", "/").split("/") if n not in ("", ".")]
        if part.startswith(("/", "\\")) or ".." in names or not names or "\x00" in part:
            raise ConfigError(
                f"supersede_from: {part!r} is not a folder inside the indexed paths; give one such as 'policies/'"
            )
        folders.append("/".join(names))
    return tuple(dict.fromkeys(folders))


def _enum(kind: type, name: str, value: object) -> object:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)  # type: ignore[attr-defined]
        raise ConfigError(f"{name} must be one of {allowed}, got {value!r}") from None


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"{name} must be a number from {low} to {high}, got {value!r}")


def check_base_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base_url must look like http(s)://host[:port]/v1, got {redact_url(url)!r}")
    if parts.username is not None or parts.password is not None:
        raise ConfigError("base_url holds credentials (user:password@): put the key in SELFRAG_API_KEY instead")


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def is_private_host(url: str | None) -> bool:
    """A server on this machine or a private network (loopback, 10/8, 172.16/12, 192.168/16, link-local, a
    name without a dot, .local, .lan, .internal): where self-hosted servers with few slots run."""
    host = (urlsplit(url).hostname or "").lower() if url else ""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host or host.endswith((".local", ".lan", ".internal", ".localhost"))
    return address.is_private or address.is_loopback or address.is_link_local


def redact_url(url: str) -> str:
    """The URL without user:password@ (safe to print or log)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()


@dataclass(frozen=True, slots=True)
class ResolvedEndpoint:
    """Where requests go and with which key; `key_source` says why (for doctor and config show)."""

    base_url: str | None
    api_key: str = field(repr=False)
    key_source: str
    settings: EndpointConfig

    @property
    def nothing_configured(self) -> bool:
        """No base URL and no key anywhere: the default chat model is the embedded one (api.default_chat)."""
        return self.base_url is None and self.key_source == "placeholder"


def is_openai(base_url: str | None) -> bool:
    return base_url is None or (urlsplit(base_url).hostname or "") in OPENAI_HOSTS


def resolve_endpoint(endpoint: EndpointConfig, environ: Mapping[str, str]) -> ResolvedEndpoint:
    """Pick the base URL and the key for one endpoint.

    The SDK would send OPENAI_API_KEY to any base URL; we do not. OPENAI_API_KEY goes only to OpenAI, to the
    URL in OPENAI_BASE_URL (the SDK's own pair, set together by the user), or anywhere when send_openai_key is on.
    A key configured for this endpoint (api_key, or SELFRAG_API_KEY) always wins. Otherwise a placeholder.
    """
    base_url = endpoint.base_url
    paired = False
    if base_url is None and environ.get("OPENAI_BASE_URL"):
        base_url, paired = environ["OPENAI_BASE_URL"], True
        check_base_url(base_url)
    if endpoint.api_key:
        return ResolvedEndpoint(base_url, endpoint.api_key, "config", endpoint)
    if environ.get("SELFRAG_API_KEY"):
        return ResolvedEndpoint(base_url, environ["SELFRAG_API_KEY"], "SELFRAG_API_KEY", endpoint)
    openai_key = environ.get("OPENAI_API_KEY")
    if openai_key and (paired or is_openai(base_url) or endpoint.send_openai_key):
        plain_http = base_url is not None and urlsplit(base_url).scheme == "http" and not is_loopback(base_url)
        if plain_http and not paired:  # a pair set together in the environment is the user's own choice
            raise ConfigError(
                f"refusing to send OPENAI_API_KEY over plain http to {redact_url(base_url)}: use https, "
                "or give that server its own key in SELFRAG_API_KEY"
            )
        return ResolvedEndpoint(base_url, openai_key, "OPENAI_API_KEY", endpoint)
    return ResolvedEndpoint(base_url, PLACEHOLDER_KEY, "placeholder", endpoint)


def resolve_scorer(config: Config, *, embedded: bool) -> Config:
    """The config with `scorer` "auto" made concrete: the evidence scorer when the writer is the embedded model
    (its weights were fitted on that model's labels, and it beats the paper's critic there), else the paper's
    (a stronger model's own labels may be worth more than weights fitted on a 135M model's); and `embedded` set.
    An endpoint's model with weights of its own has had its scorer made evidence first (`engine.fitted.pick`)."""
    if config.scorer != "auto":
        return config if config.embedded == embedded else config.with_values(embedded=embedded)
    return config.with_values(scorer="evidence" if embedded else "paper", embedded=embedded)
