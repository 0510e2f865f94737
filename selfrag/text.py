"""Text hygiene: what may reach a terminal, a log, or a prompt's document block.

- `clean_for_terminal` strips C0/C1 controls (keeps newline and tab), ANSI/OSC escape sequences (OSC 8 links,
  OSC 52 clipboard writes), carriage-return overwrites, bidi overrides and zero-width characters.
- `neutralise_document` makes retrieved text unable to close its delimiter block or forge the nonce.
- `inert_markdown` turns markdown images and HTML tags into plain text so nothing is fetched when rendered.
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


def inert_markdown(text: str) -> str:
    """Markdown images become '[image: alt]' and HTML tags lose their angle brackets."""
    text = _IMAGE.sub(lambda m: f"[image: {m.group(1)}]", text)
    return _TAG.sub(lambda m: f"‹{m.group(1)}›", text)


def neutralise_document(text: str, nonce: str) -> str:
    """Retrieved text as data: no closing or opening delimiter tags, no nonce, no invisible characters."""
    text = unicodedata.normalize("NFC", _INVISIBLE.sub("", text))
    text = text.replace(nonce, "")
    return re.sub(r"<\s*(/?)\s*document", r"‹\1document", text, flags=re.IGNORECASE)
