"""Token counting: a `TokenCounter` protocol, an offline tiktoken counter, and a whitespace counter for tests.

`TiktokenCounter` builds the cl100k_base encoding from the vocabulary shipped inside the package
(`selfrag/data/cl100k_base.tiktoken`, SHA-256 checked). It never downloads anything, never reads or writes
tiktoken's cache folder and never sets environment variables: `tiktoken.load.load_tiktoken_bpe` would copy the
file into `$TIKTOKEN_CACHE_DIR` (or `<tmp>/data-gym-cache`), so the file is parsed here in the same format.

The chunker needs to know where tokens start, not only how many there are: `TokenOffsets.token_starts(text)`
gives the character offset at which each token begins (non-decreasing; a token that starts inside a
multi-byte character is placed after that character). Counts are of ordinary text: special-token strings
such as "<|endoftext|>" inside a document are counted as text.

Limits: only cl100k_base is shipped (o200k_base would add 3.6 MB); other encodings are out of scope.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_WORD = re.compile(r"\S+")
Offsets = Sequence[int] | npt.NDArray[np.integer[Any]]  # character offset where each token starts


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens in a text."""

    def count(self, text: str) -> int: ...


@runtime_checkable
class TokenOffsets(TokenCounter, Protocol):
    """A counter that also says where each token starts (what the token splitter needs)."""

    def token_starts(self, text: str) -> Offsets: ...


class WhitespaceCounter:
    """Counts whitespace-separated words; exact, fast and dependency-free, for tests."""

    name = "whitespace"

    def count(self, text: str) -> int:
        return len(text.split())

    def token_starts(self, text: str) -> list[int]:
        return [match.start() for match in _WORD.finditer(text)]


class TiktokenCounter:
    """cl100k_base token counts, offline; the encoding is built on first use and kept on the instance."""

    name = "cl100k_base"

    def __init__(self, vocabulary: Path | None = None) -> None:
        self._vocabulary = vocabulary  # None: the copy shipped in selfrag/data
        self._encoding: tiktoken.Encoding | None = None
        self._leads: npt.NDArray[np.int64] | None = None

    def count(self, text: str) -> int:
        return len(self._tiktoken().encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self._tiktoken().encode_ordinary(text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self._tiktoken().decode(list(tokens), errors="replace")

    def token_starts(self, text: str) -> npt.NDArray[np.int64]:
        ids = np.asarray(self._tiktoken().encode_ordinary(text), dtype=np.int64)
        leads = self._lead_counts()[ids]  # characters that begin inside each token
        return np.cumsum(leads) - leads

    def _tiktoken(self) -> tiktoken.Encoding:
        if self._encoding is None:
            import tiktoken  # imported on first use: it costs about 0.1 s

            ranks = load_ranks(self._vocabulary)
            leads = np.zeros(max(ranks.values()) + 1, dtype=np.int64)
            for token, rank in ranks.items():
                leads[rank] = len(token.translate(None, _CONTINUATION_BYTES))
            self._leads = leads
            self._encoding = tiktoken.Encoding(
                name="cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=CL100K_SPECIAL
            )
        return self._encoding

    def _lead_counts(self) -> npt.NDArray[np.int64]:
        self._tiktoken()
        assert self._leads is not None
        return self._leads


def load_ranks(path: Path | None = None) -> dict[bytes, int]:
    """The BPE ranks of cl100k_base, read from `path` or the packaged file, refused unless the SHA-256 matches."""
    if path is None:
        data = (resources.files(__package__ or "selfrag") / "data" / "cl100k_base.tiktoken").read_bytes()
    else:
        data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise ConfigError(
            "the cl100k_base vocabulary file is damaged (SHA-256 mismatch); "
            "reinstall selfrag: pip install --force-reinstall selfrag"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def make_counter(name: str) -> TokenOffsets:
    """The counter a chunking setting names: "cl100k_base" or "whitespace"."""
    if name == TiktokenCounter.name:
        return TiktokenCounter()
    if name == WhitespaceCounter.name:
        return WhitespaceCounter()
    raise ConfigError(f"unknown tokenizer {name!r}; use 'cl100k_base' or 'whitespace'")


def head(text: str, max_tokens: int, counter: TokenOffsets) -> str:
    """The longest prefix of `text` that holds at most `max_tokens` tokens (cut at a token boundary)."""
    starts = counter.token_starts(text)
    if len(starts) <= max_tokens:
        return text
    return text[: int(starts[max_tokens])].rstrip()
