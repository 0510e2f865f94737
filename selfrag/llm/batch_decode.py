"""The embedded model's chat completions, decoded several at a time in one llama.cpp context.

llama-cpp-python's server decodes one request at a time. Here a batch of chat requests is one multi-sequence
decode: the prompts are laid out as a prefix tree (`prefix_tree`), so the tokens several prompts share (a
step's candidates share everything before their document) are computed once for all of them, and every step
of generation decodes one token of each live sequence in a single `llama_decode` call.

What a request means stays llama-cpp-python's: its own chat handler renders the messages, builds the grammar
from the response format and sets the stop words (`prepare` captures the arguments the handler passes to
`create_completion`), and the sampling mirrors `Llama._init_sampler` (repetition penalties, grammar, then
greedy or temperature sampling). At temperature 0 a sequence therefore reads what the server would write,
up to the floating-point differences of batched matrix products.

- Grammar fast path (temperature 0): the grammar is tried on the best tokens one by one, in order of score,
  and applied to the whole vocabulary only when none of the best 32 is allowed. The greedy pick is the same
  (the first allowed token in score order is the best allowed token); llama.cpp's own common sampler also
  tries the best token first.
- Guessed tokens (temperature 0): a sequence's next tokens are guessed and decoded in the same step as its
  pending token; the model's own picks decide how many stand (`_check`), so guesses change no text. A reply
  under a flat JSON schema is guessed from the schema where it decides the text (`skeleton.Skeleton`: key names,
  the rest of an enum value, the comma and next key, up to AHEAD tokens); elsewhere by prompt lookup (what
  followed the last occurrence of the last LOOKUP tokens, up to DRAFT tokens).
- A sequence's failure (a prompt longer than the context, a grammar that does not parse) is its slot's
  exception; the other sequences are decoded. A failing `llama_decode` fails the sequences of that pass.
- Not handled here (the caller sends them to the server app): streaming, logprobs, n > 1, tools, logit bias,
  min_tokens, mirostat.
"""

from __future__ import annotations

import ctypes
import math
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .kept import KeptPrefixes, Reuse, common_prefix
from .skeleton import Skeleton

SHORTLIST = 32  # greedy under a grammar: the best tokens tried one by one before the whole vocabulary is checked
LOOKUP = 3  # tokens matched to find a guess
DRAFT = 3  # greedy sequences: tokens guessed from the text so far (prompt lookup), checked in the same step
AHEAD = 8  # greedy sequences under a JSON schema: tokens guessed from what the schema decides next
SPLITS = 4096  # texts a schema decided whose split into tokens, as the model wrote them, a decoder remembers
UNBATCHABLE = ("stream", "logprobs", "top_logprobs", "tools", "functions", "logit_bias", "min_tokens")


@dataclass(frozen=True, slots=True)
class Entry:
    """One prompt token laid out in the batch, shared by every sequence whose prompt has this prefix."""

    token: int
    pos: int
    seqs: tuple[int, ...]  # the sequences (indices into the prompts) that share the prefix ending here
    ends: tuple[int, ...]  # those whose prompt ends here: they sample their first token from its logits


def prefix_tree(prompts: Sequence[Sequence[int]]) -> list[Entry]:
    """The prompts as a prefix tree, one entry per node, in position order (so every sequence's tokens come in
    order). Identical prefixes are one entry; `len(prefix_tree(p))` is the number of cells they need."""
    entries: list[Entry] = []
    groups = [tuple(i for i, p in enumerate(prompts) if p)]
    pos = 0
    while groups:
        deeper: list[tuple[int, ...]] = []
        for group in groups:
            by_token: dict[int, list[int]] = {}
            for seq in group:
                by_token.setdefault(prompts[seq][pos], []).append(seq)
            for token, members in by_token.items():
                ends = tuple(s for s in members if len(prompts[s]) == pos + 1)
                entries.append(Entry(token, pos, tuple(members), ends))
                if len(ends) < len(members):
                    deeper.append(tuple(s for s in members if len(prompts[s]) > pos + 1))
        groups, pos = deeper, pos + 1
    return entries


def passes(jobs: Sequence[Job], *, n_ctx: int, n_seq_max: int) -> list[list[int]]:
    """Jobs grouped in input order so that a group holds at most `n_seq_max` jobs and its prompt tree plus every
    job's max_tokens fits `n_ctx` cells (a job that shares a prefix with one of its group needs only the rest)."""
    groups: list[list[int]] = []
    cells = 0
    for i, job in enumerate(jobs):
        group = groups[-1] if groups else []
        shared = max((common_prefix(job.prompt, jobs[j].prompt) for j in group), default=0)
        need = len(job.prompt) - shared + job.max_tokens
        if not group or len(group) >= n_seq_max or cells + need > n_ctx:
            groups.append([i])
            cells = len(job.prompt) + job.max_tokens
        else:
            group.append(i)
            cells += need
    return groups


@dataclass(frozen=True, slots=True)
class Job:
    """One chat completion to decode, as llama-cpp-python's handler prepared it."""

    prompt: tuple[int, ...]
    max_tokens: int
    stop: tuple[bytes, ...]  # stop words: the text ends before the first
    grammar: Any  # a llama_cpp.LlamaGrammar, or None
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    typical_p: float
    repeat_penalty: float
    frequency_penalty: float
    presence_penalty: float
    seed: int | None
    model: str  # the request's model name, echoed in the reply
    skeleton: Skeleton | None = None  # the reply's JSON schema where a grammar holds it to one (the guesses)


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    finish_reason: str  # "stop" or "length"
    prompt_tokens: int
    completion_tokens: int


def batchable(body: dict[str, Any]) -> bool:
    """Whether a chat request (JSON body) can be decoded here rather than by the server app."""
    if any(body.get(name) for name in UNBATCHABLE) or body.get("mirostat_mode"):
        return False
    return body.get("n") in (None, 1)


class PromptTooLong(ValueError):
    """The prompt does not fit the model's context (worded as llama-cpp-python's server words it)."""

    def __init__(self, n_ctx: int, prompt_tokens: int, max_tokens: int) -> None:
        super().__init__(
            f"This model's maximum context length is {n_ctx} tokens. However, you requested "
            f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion). "
            "Please reduce the length of the messages or completion."
        )


class _Captured(Exception):
    def __init__(self, arguments: dict[str, Any]) -> None:
        super().__init__("captured")
        self.arguments = arguments


class _Recorder:
    """Stands for the Llama object in front of its chat handler: everything passes through but the
    completion, whose arguments are captured instead."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **arguments: Any) -> Any:
        raise _Captured(arguments)


def prepare(llama: Any, request: dict[str, Any]) -> Job:
    """The Job for one chat request (the server app's request fields), rendered by the model's own chat handler;
    PromptTooLong when the prompt does not fit the context. The handler's stopping criterion (the template's
    end-of-turn token) is covered by the end-of-generation check that stops every sequence."""
    handler = llama.chat_handler or llama._chat_handlers.get(llama.chat_format) or _handler_by_name(llama.chat_format)
    fields = {k: v for k, v in request.items() if k not in ("n", "logit_bias_type", "user", "min_tokens", "grammar")}
    if request.get("grammar"):
        fields["grammar"] = _grammar_class().from_string(request["grammar"], verbose=False)
    try:
        handler(llama=_Recorder(llama), **fields)
    except _Captured as captured:
        arguments = captured.arguments
    else:  # pragma: no cover - every handler ends in create_completion
        raise RuntimeError("the chat handler did not ask for a completion")
    prompt = arguments["prompt"]
    if isinstance(prompt, str):
        prompt = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    n_ctx = llama.n_ctx()
    if len(prompt) >= n_ctx:
        raise PromptTooLong(n_ctx, len(prompt), arguments.get("max_tokens") or 0)
    max_tokens = arguments.get("max_tokens")
    if max_tokens is None or max_tokens <= 0:  # as Llama.create_completion: up to the end of the context
        max_tokens = n_ctx - len(prompt)
    max_tokens = min(max_tokens, n_ctx - len(prompt))
    stop = arguments.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    grammar = arguments.get("grammar")
    return Job(
        prompt=tuple(prompt),
        max_tokens=max_tokens,
        stop=tuple(s.encode("utf-8") for s in stop if s),
        grammar=grammar,
        temperature=arguments.get("temperature", 0.8),
        top_k=arguments.get("top_k", 40),
        top_p=arguments.get("top_p", 0.95),
        min_p=arguments.get("min_p", 0.05),
        typical_p=arguments.get("typical_p", 1.0),
        repeat_penalty=arguments.get("repeat_penalty", 1.0),
        frequency_penalty=arguments.get("frequency_penalty", 0.0),
        presence_penalty=arguments.get("presence_penalty", 0.0),
        seed=arguments.get("seed"),
        model=arguments.get("model") or llama.model_path,
        skeleton=Skeleton.of_response_format(request.get("response_format")) if grammar is not None else None,
    )


def _handler_by_name(name: str) -> Any:
    from llama_cpp import llama_chat_format

    return llama_chat_format.get_chat_completion_handler(name)


def _grammar_class() -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar


def chat_body(decoded: Decoded, model: str) -> dict[str, Any]:
    """An OpenAI chat completion body, shaped as llama-cpp-python's server shapes it."""
    return {
        "id": f"chatcmpl-{uuid.uuid4()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": decoded.text},
                "logprobs": None,
                "finish_reason": decoded.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": decoded.prompt_tokens,
            "completion_tokens": decoded.completion_tokens,
            "total_tokens": decoded.prompt_tokens + decoded.completion_tokens,
        },
    }


@dataclass(slots=True)
class PassStats:
    """Where one pass's time went (read by benchmarks/local_speed.py and the tests)."""

    sequences: int = 0
    reused: int = 0  # prompt tokens per sequence read from a kept prefix
    evaluated: int = 0  # prompt tokens evaluated (the prefix tree's cells from `reused` on)
    steps: int = 0  # decoding steps (one token of every live sequence each, plus its guessed tokens)
    drafted: int = 0  # tokens guessed by prompt lookup and decoded with the step
    accepted: int = 0  # of those, the ones the model wrote (each saves a step of its sequence)
    prompt_s: float = 0.0  # seconds evaluating the prompts
    steps_s: float = 0.0  # seconds in the decoding steps, sampling included


@dataclass(slots=True)
class _Sequence:
    """One job while it is decoded."""

    job: Job
    pickers: Any
    context: list[int] = field(default_factory=list)  # prompt and tokens written so far
    follower: dict[tuple[int, ...], int] = field(default_factory=dict)  # a pair of tokens -> where its last
    # occurrence in the context was followed (prompt lookup)
    tokens: list[int] = field(default_factory=list)
    pending: int | None = None  # the token picked and not yet decoded
    watched: list[tuple[bytes, int, int]] = field(default_factory=list)  # schema guesses whose split by the
    # model is still to be learned: (the text the schema decided, the text's length then, the token count then)
    finish: str | None = None
    text: bytes = b""


class BatchDecoder:
    """Decodes batches of Jobs in its own llama.cpp context on the Llama object's model.

    The context holds `n_seq_max` sequences in one unified cache of `n_ctx` cells; a batch that needs more
    cells (prompt tree plus every job's max_tokens) is decoded in several passes. Between passes the prompt
    prefix common to a pass's jobs stays in the cache under a keeper sequence (`kept`, see llm/kept.py), and a
    later pass that starts with the same tokens reads them from there. Not thread-safe: the caller runs one
    batch at a time."""

    def __init__(
        self,
        llama: Any,
        *,
        n_ctx: int,
        n_seq_max: int,
        n_batch: int = 512,
        kept: KeptPrefixes | None = None,
        draft: int = DRAFT,
        ahead: int = AHEAD,
    ) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._llama = llama
        self.n_ctx, self.n_seq_max, self.n_batch, self.draft, self.ahead = n_ctx, n_seq_max, n_batch, draft, ahead
        self.kept = kept if kept is not None else KeptPrefixes()
        self.splits: dict[bytes, tuple[int, ...]] = {}  # text a schema decided -> the tokens the model wrote it in
        self.stats: list[PassStats] = []  # one per pass, in order
        params = llama_cpp.llama_context_params.from_buffer_copy(llama.context_params)
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, n_batch, n_batch
        params.n_seq_max, params.kv_unified = n_seq_max + self.kept.slots, True
        self._ctx = llama_cpp.llama_init_from_model(llama.model, params)
        if not self._ctx:
            raise ValueError(f"llama.cpp could not make a context of {n_ctx} cells for batched decoding")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, n_seq_max)
        self._vocab = llama._model.vocab
        self._n_vocab = llama.n_vocab()
        from llama_cpp import _internals

        self._internals = _internals
        self._candidates = _internals.LlamaTokenDataArray(n_vocab=self._n_vocab)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)

    def close(self) -> None:
        if self._ctx:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._ctx = None

    # -- batches ------------------------------------------------------------------------------------------

    def decode(self, jobs: Sequence[Job]) -> list[Decoded | Exception]:
        """Every job's result or exception, in input order."""
        results: list[Decoded | Exception] = [RuntimeError("not decoded")] * len(jobs)
        room = self.n_ctx - self._guess_cells()  # a step's guesses hold a few cells until checked
        for group in passes(jobs, n_ctx=room, n_seq_max=self.n_seq_max):
            try:
                decoded = self._decode_pass([jobs[i] for i in group])
            except Exception as error:  # llama_decode failed: this pass's jobs fail, the next pass runs
                decoded = [error] * len(group)
            for i, result in zip(group, decoded, strict=True):
                results[i] = result
        return results

    def _decode_pass(self, jobs: Sequence[Job]) -> list[Decoded | Exception]:
        sequences: list[_Sequence | Exception] = []
        for job in jobs:
            try:
                sequences.append(_Sequence(job, self._pickers(job), list(job.prompt), _followers(job.prompt)))
            except Exception as error:  # e.g. a grammar llama.cpp refuses
                sequences.append(error)
        live = [s if isinstance(s, _Sequence) else None for s in sequences]
        stats = PassStats(sequences=sum(s is not None for s in live))
        self.stats.append(stats)
        try:
            read = self._read_kept(live)
            start = time.perf_counter()
            stats.reused, stats.evaluated = read.tokens, self._prefill(live, read.tokens)
            stats.prompt_s, start = time.perf_counter() - start, time.perf_counter()
            while True:
                step = [(seq_id, s) for seq_id, s in enumerate(live) if s is not None and s.finish is None]
                if not step:
                    break
                rows: list[tuple[int | None, int, tuple[int, ...], bool]] = []
                spans = []
                for seq_id, s in step:
                    guess, pos = self._guess(s), len(s.job.prompt) + len(s.tokens) - 1
                    spans.append((seq_id, s, len(rows), guess, pos))
                    rows += [(s.pending, pos, (seq_id,), True)]
                    rows += [(token, pos + 1 + i, (seq_id,), True) for i, token in enumerate(guess)]
                self._fill(rows)
                self._run()
                for seq_id, s, row, guess, pos in spans:
                    stats.accepted += self._check(seq_id, s, row, guess, pos)
                    stats.drafted += len(guess)
                stats.steps += 1
            stats.steps_s = time.perf_counter() - start
            self._leave_kept(live, read)
        except BaseException:
            self.kept.forget()  # the cache may hold half a pass: start the next one from nothing
            self._lib.llama_memory_clear(self._memory, True)
            raise
        finally:
            for s in live:
                if s is not None:
                    _free(s.pickers)
        return [s if isinstance(s, Exception) else self._result(s) for s in sequences]

    def _read_kept(self, live: list[_Sequence | None]) -> Reuse:
        """Give the pass's sequences the kept prefix they share (cells copied, not computed)."""
        prompts = [s.job.prompt for s in live if s is not None]
        need = len(prefix_tree(prompts)) + sum(s.job.max_tokens for s in live if s is not None)
        if need > self.n_ctx - self._guess_cells() - self.kept.cells:  # the keepers' cells are needed
            self.kept.forget()
            self._lib.llama_memory_clear(self._memory, True)
        read = self.kept.reuse(prompts)
        if read.slot is not None:
            for seq_id, s in enumerate(live):
                if s is not None:
                    self._lib.llama_memory_seq_cp(self._memory, self._keeper(read.slot), seq_id, 0, read.tokens)
        return read

    def _leave_kept(self, live: list[_Sequence | None], read: Reuse) -> None:
        """Move the pass's common prefix to a keeper, then free the pass's sequences."""
        memory, first = self._memory, next((i for i, s in enumerate(live) if s is not None), None)
        keep = self.kept.keep([s.job.prompt for s in live if s is not None], read) if first is not None else None
        if keep is not None:
            keeper = self._keeper(keep.slot)
            self._lib.llama_memory_seq_rm(memory, keeper, keep.start, -1)
            self._lib.llama_memory_seq_cp(memory, first, keeper, keep.start, keep.end)
        for seq_id in range(len(live)):
            self._lib.llama_memory_seq_rm(memory, seq_id, -1, -1)

    def _guess_cells(self) -> int:
        return max(self.draft, self.ahead) * self.n_seq_max

    def _keeper(self, slot: int) -> int:
        return self.n_seq_max + slot

    def _prefill(self, live: list[_Sequence | None], start: int = 0) -> int:
        """Evaluate the prompts from position `start` on (the tokens before are in the cache already); the number
        of tokens evaluated."""
        prompts = [s.job.prompt if s is not None else () for s in live]
        entries = [e for e in prefix_tree(prompts) if e.pos >= start]
        for first in range(0, len(entries), self.n_batch):
            chunk = entries[first : first + self.n_batch]
            self._fill([(e.token, e.pos, e.seqs, bool(e.ends)) for e in chunk])
            self._run()
            for row, entry in enumerate(chunk):
                for seq_id in entry.ends:
                    sequence = live[seq_id]
                    assert sequence is not None
                    self._advance(sequence, row)
        return len(entries)

    def _fill(self, rows: Sequence[tuple[int | None, int, tuple[int, ...], bool]]) -> None:
        batch = self._batch
        for i, (token, pos, seqs, logits) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = len(seqs)
            for k, seq_id in enumerate(seqs):
                batch.seq_id[i][k] = seq_id
            batch.logits[i] = logits
        batch.n_tokens = len(rows)

    def _run(self) -> None:
        code = self._lib.llama_decode(self._ctx, self._batch)
        if code != 0:
            raise RuntimeError(f"llama_decode failed with code {code} (batch of {self._batch.n_tokens} tokens)")

    # -- one sequence ---------------------------------------------------------------------------------------

    def _guess(self, s: _Sequence) -> list[int]:
        """The tokens guessed to follow the sequence's pending one (greedy sequences only: a guess is checked
        against the greedy pick): what its schema decides next, else prompt lookup, the tokens that followed the
        last occurrence of its last LOOKUP tokens."""
        if s.job.temperature != 0.0:
            return []
        room = min(s.job.max_tokens - len(s.tokens) - 1, self.n_batch // self.n_seq_max - 1)
        if self.ahead and s.job.skeleton is not None and room > 0:
            ahead = s.job.skeleton.ahead(s.text.decode("utf-8", errors="ignore")).encode("utf-8")
            if ahead:
                tokens = self.splits.get(ahead)
                if tokens is None:  # guessed as the tokenizer splits it; learned as the model splits it
                    tokens = tuple(self._llama.tokenize(ahead, add_bos=False, special=False))
                    s.watched.append((ahead, len(s.text), len(s.tokens)))
                return list(tokens[: min(self.ahead, room)])
        if not self.draft or len(s.context) < LOOKUP:
            return []
        after = s.follower.get(tuple(s.context[-LOOKUP:]))
        room = min(self.draft, room)
        return s.context[after : after + room] if after is not None and room > 0 else []

    def _check(self, seq_id: int, s: _Sequence, row: int, guess: list[int], pos: int) -> int:
        """Advance `s` along its rows while the model picks the guessed tokens; drop the cells of the guesses
        after the first miss. The guessed tokens it wrote."""
        taken = 0
        for i in range(len(guess) + 1):
            self._advance(s, row + i)
            if s.finish is not None or i == len(guess) or s.pending != guess[i]:
                break
            taken += 1
        if taken < len(guess):  # cells of positions pos + taken + 1 on hold tokens the model did not write
            self._lib.llama_memory_seq_rm(self._memory, seq_id, pos + taken + 1, -1)
        return taken

    def _advance(self, s: _Sequence, row: int) -> None:
        """Pick the next token of `s` from the logits of batch row `row`, and decide whether `s` is done."""
        token = self._pick(s, row)
        if self._lib.llama_vocab_is_eog(self._vocab, token):  # the end of turn ends the text, as in the server
            s.finish = "stop"
            return
        s.tokens.append(token)
        s.context.append(token)
        if len(s.context) > LOOKUP:
            s.follower[tuple(s.context[-LOOKUP - 1 : -1])] = len(s.context) - 1
        s.text = self._llama.detokenize(s.tokens, prev_tokens=list(s.job.prompt))
        if s.watched:
            self._learn(s)
        for word in s.job.stop:
            if word in s.text:
                s.text, s.finish = s.text[: s.text.index(word)], "stop"
                return
        if len(s.tokens) >= s.job.max_tokens:
            s.finish = "length"
            return
        s.pending = token

    def _learn(self, s: _Sequence) -> None:
        """Remember how the model split the text a schema decided, once it has written past it: the tokens from
        the guess on whose text lies within the decided text (a later guess of the same text offers them)."""
        waiting = []
        for ahead, start, first in s.watched:
            if len(s.text) < start + len(ahead):
                waiting.append((ahead, start, first))
                continue
            if s.text[start : start + len(ahead)] != ahead:
                continue  # the model wrote something else (other spaces): nothing to learn
            tokens, length = [], 0
            for token in s.tokens[first:]:
                length += len(self._llama.detokenize([token]))
                if length > len(ahead):
                    break
                tokens.append(token)
            if tokens:
                if len(self.splits) >= SPLITS:
                    self.splits.clear()
                self.splits[ahead] = tuple(tokens)
        s.watched = waiting

    def _pickers(self, job: Job) -> tuple[Any, Any, Any]:
        """(penalties, grammar or None, the rest of the chain or None for greedy), as Llama._init_sampler
        would build them."""
        make = self._internals.LlamaSampler
        penalties = make()
        penalties.add_penalties(
            n_vocab=self._n_vocab,
            penalty_last_n=self._llama.last_n_tokens_size,
            penalty_repeat=job.repeat_penalty,
            penalty_freq=job.frequency_penalty,
            penalty_present=job.presence_penalty,
        )
        grammar = None
        if job.grammar is not None:  # as LlamaSampler.add_grammar, but a grammar llama.cpp refuses is an error
            grammar = make()
            rules, root = job.grammar._grammar.encode("utf-8"), job.grammar._root.encode("utf-8")
            parsed = self._lib.llama_sampler_init_grammar(self._vocab, rules, root)
            if not parsed:
                raise ValueError("llama.cpp could not parse the grammar made from this request's response_format")
            self._lib.llama_sampler_chain_add(grammar.sampler, parsed)
        rest = None
        if job.temperature != 0.0:
            rest = make()
            seed = job.seed if job.seed is not None else random.getrandbits(32)
            if job.temperature < 0.0:
                rest.add_dist(seed)
            else:
                rest.add_top_k(job.top_k)
                rest.add_typical(job.typical_p, 1)
                rest.add_top_p(job.top_p, 1)
                rest.add_min_p(job.min_p, 1)
                rest.add_temp(job.temperature)
                rest.add_dist(seed)
        return penalties, grammar, rest

    def _pick(self, s: _Sequence, row: int) -> int:
        lib, candidates = self._lib, self._candidates
        penalties, grammar, rest = s.pickers
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(self._ctx, row), shape=(self._n_vocab,))
        candidates.copy_logits(logits)
        array = ctypes.byref(candidates.candidates)
        lib.llama_sampler_apply(penalties.sampler, array)
        if rest is None:
            token = self._greedy(grammar, candidates.candidates_data.logit, array)
        else:
            if grammar is not None:
                lib.llama_sampler_apply(grammar.sampler, array)
            lib.llama_sampler_apply(rest.sampler, array)
            token = int(candidates.candidates_data.id[candidates.candidates.selected])
        for sampler in (penalties, grammar, rest):
            if sampler is not None:
                lib.llama_sampler_accept(sampler.sampler, token)
        return token

    def _greedy(self, grammar: Any, scores: np.ndarray, array: Any) -> int:
        """The best token the grammar allows. The best few tokens are tried against the grammar one by one (a
        check of one token is cheap); the grammar is applied to the whole vocabulary (costly) only when none of
        them is allowed. Same pick as applying the grammar first: the first allowed token in order of score (ties
        by token id) is the best allowed one."""
        best = int(np.argmax(scores))
        if grammar is None or self._allowed(grammar, best, float(scores[best])):
            return best
        few = np.argpartition(-scores, SHORTLIST)[:SHORTLIST].tolist()
        for token in sorted(few, key=lambda t: (-scores[t], t)):
            if self._allowed(grammar, token, float(scores[token])):
                return token
        self._lib.llama_sampler_apply(grammar.sampler, array)
        return int(np.argmax(scores))

    def _allowed(self, grammar: Any, token: int, logit: float) -> bool:
        one = self._one[0]
        one.id, one.logit, one.p = token, logit, 0.0
        self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
        self._lib.llama_sampler_apply(grammar.sampler, ctypes.byref(self._one_array))
        return not math.isinf(self._one[0].logit)

    def _result(self, s: _Sequence) -> Decoded:
        return Decoded(
            text=s.text.decode("utf-8", errors="ignore"),
            finish_reason=s.finish or "length",
            prompt_tokens=len(s.job.prompt),
            completion_tokens=len(s.tokens),
        )


def _followers(prompt: Sequence[int]) -> dict[tuple[int, ...], int]:
    """Each LOOKUP consecutive prompt tokens -> the index of the token after their last occurrence."""
    return {tuple(prompt[i - LOOKUP : i]): i for i in range(LOOKUP, len(prompt))}


def _free(pickers: tuple[Any, Any, Any]) -> None:
    for sampler in pickers:
        if sampler is not None:
            sampler.close()
