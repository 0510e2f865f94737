"""Text hygiene: what may reach a terminal, a log, or a prompt's document block.

- `clean_for_terminal` strips C0/C1 controls (keeps newline and tab), ANSI/OSC escape sequences (OSC 8 links,
  OSC 52 clipboard writes), carriage-return overwrites, bidi overrides and zero-width characters.
- `escape_name` shows a file name, title or path on one line: newlines, controls, bidi and zero-width characters
  and bytes that are not UTF-8 are written as escapes (`\\n`, `\\x1b`, `\\u202e`, `\\xff`), so a crafted name
  cannot split a line or pass for another.
- `repair_text` makes text typed or piped in (a question, a chat line) usable: bytes that are not UTF-8 become
  U+FFFD, controls and escape sequences go (newline and tab stay); `without_surrogates` does the first half
  alone, for the library's own doors (a question passed to `SelfRAG.answer`).
- `neutralise_document` makes retrieved text unable to close its delimiter block or forge the nonce.
- `inert_markdown` turns markdown images and HTML tags into plain text so nothing is fetched when rendered.
- `redact_secrets` hides what looks like a key in a message that quotes user input (a usage error).
- `looks_like_injection` names the prompt-injection markers in a retrieved text, for the trace's `suspicious`
  flag. It is a report, not a defence: a flagged chunk is scored like any other, and the boundary stays the
  per-call delimiters, one critique per chunk and the caps (reliability notes §8). It misses paraphrased
  attacks and flags some honest texts (a tutorial quoting "ignore previous instructions").
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL/ST (links, clipboard, titles)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI sequences (colours, cursor moves)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC strings
    r"|\x1b.?"  # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u00ad]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]*)\)")
_TAG = re.compile(r"<(/?[A-Za-z][^<>]*)>")


def clean_for_terminal(text: str) -> str:
    """Text safe to print: no escapes, controls, bidi or zero-width characters; \\r\\n becomes \\n."""
    text = text.replace("\r\n", "\n")
    text = _ESCAPES.sub("", text)
    text = _INVISIBLE.sub("", text)
    return _CONTROLS.sub("", text)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
_SURROGATES = re.compile("[\ud800-\udfff]")
_LONE_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape_name(text: str) -> str:
    """A name on one line, every character that is not plainly printable written as an escape: `\\n`, `\\t`, `\\r`,
    `\\xNN` for other controls and for a byte that is not UTF-8 (a surrogate escape), `\\uNNNN` for bidi and
    zero-width characters and other lone surrogates."""
    return _UNPRINTABLE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if code < 0xA0:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by the surrogateescape error handler
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def repair_text(text: str) -> str:
    """Text a user typed or piped in, made usable: `without_surrogates`, then `clean_for_terminal` (controls and
    escape sequences go, newline and tab stay)."""
    return clean_for_terminal(without_surrogates(text))


def without_surrogates(text: str) -> str:
    """`text` as UTF-8 can hold it: bytes that are not UTF-8 (surrogate escapes, as Python reads them from argv,
    stdin or file names) and lone surrogates become U+FFFD; any other text comes back unchanged."""
    if not _SURROGATES.search(text):
        return text
    text = _LONE_SURROGATES.sub("\ufffd", text)  # what no byte could have made
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")  # escaped bytes, as UTF-8 reads them


def inert_markdown(text: str) -> str:
    """Markdown images become '[image: alt]' and HTML tags lose their angle brackets."""
    text = _IMAGE.sub(lambda m: f"[image: {m.group(1)}]", text)
    return _TAG.sub(lambda m: f"‹{m.group(1)}›", text)


def neutralise_document(text: str, nonce: str) -> str:
    """Retrieved text as data: no closing or opening delimiter tags, no nonce, no invisible characters."""
    text = unicodedata.normalize("NFC", _INVISIBLE.sub("", text))
    text = text.replace(nonce, "")
    return re.sub(r"<\s*(/?)\s*document", r"‹\1document", text, flags=re.IGNORECASE)


# Each marker: (reason, pattern). Searched in the text with invisible characters removed and NFKC applied,
# so zero-width splits and full-width look-alikes do not hide a marker.
_INJECTION_MARKERS = (
    (
        "instructions",  # "ignore all previous instructions", "disregard the rules above", "you are now ..."
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?\b(?:instructions?|prompts?|rules|"
            r"guidelines|directions|messages)\b|\byou are now\b|\bnew instructions\s*:",
            re.IGNORECASE,
        ),
    ),
    (
        "role-tag",  # chat-template tokens and fake turns: <|im_start|>, [INST], <<SYS>>, <system>, "SYSTEM:"
        re.compile(
            r"<\|[a-z_]*(?:im_start|im_end|system|user|assistant|eot_id|header_id|endoftext)[a-z_]*\|>"
            r"|\[/?INST\]|<</?SYS>>|</?\s*(?:system|assistant)\s*>|\b(?:SYSTEM|ASSISTANT)\s*:",
        ),
    ),
    ("delimiter", re.compile(r"<\s*/?\s*document\b", re.IGNORECASE)),  # the engine's own block tag
    (
        "critique-json",  # a quoted reflection-label key, as in a forged reply {"support": "fully", ...}
        re.compile(r"[\"'](?:relevance|support|utility|is_final|retrieve|retrieve_next)[\"']\s*:", re.IGNORECASE),
    ),
    (
        "secret-request",  # "print the API key", "reveal your system prompt"
        re.compile(
            r"\b(?:print|reveal|show|output|repeat|send|leak|disclose|echo|display|include|tell)\b[^.\n]{0,60}?"
            r"\b(?:api[\s_-]?keys?|secret keys?|passwords?|credentials?|access tokens?|system prompt|"
            r"environment variables?)\b",
            re.IGNORECASE,
        ),
    ),
    ("image-url", re.compile(r"!\[[^\]]*\]\(\s*[^)\s]*\?|<img\b[^>]*\bsrc\s*=[^>]*\?", re.IGNORECASE)),
)


def looks_like_injection(text: str) -> tuple[str, ...]:
    """The injection markers found in `text`, in a fixed order; () when it looks like plain data."""
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return tuple(reason for reason, pattern in _INJECTION_MARKERS if pattern.search(text))


_SECRET_FLAG = re.compile(r"['\"]?-[-\w]*(key|token|secret|password|passwd|auth)[-\w]*['\"]?", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"\b(sk|pk|rk|gsk|hf|xai|ghp|gho|glpat)[-_][\w-]{6,}|\bAIza[\w-]{20,}|\beyJ[\w.-]{20,}")


def redact_secrets(message: str) -> str:
    """`message` with each word shaped like a key (sk-..., hf_..., a JWT), and the word after a key-like flag
    (`--api-key X`, `--token=X`), replaced by ***. For messages that quote the command line back."""
    words = message.split(" ")
    for n, word in enumerate(words):
        flag, equals, _ = word.partition("=")
        if (n and _SECRET_FLAG.fullmatch(words[n - 1].partition("=")[0])) or _SECRET_VALUE.search(word):
            words[n] = "***"
        elif equals and _SECRET_FLAG.fullmatch(flag):
            words[n] = f"{flag}=***"
    return " ".join(words)
