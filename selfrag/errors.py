"""The one error tree of selfrag.

    SelfRagError            catch this to catch everything selfrag raises on purpose
    ├── ConfigError         a knob out of range, an unknown prompt, a prompt variable missing or undeclared
    │   ├── SettingTypeError  a setting not of its declared type (2.5 for a whole number): exit 2, as usage
    │   └── PromptNotSupportedError  the chat model cannot pose this prompt (a Self-RAG checkpoint's own format)
    ├── InputError          bad user input: an empty question, an unreadable path, a malformed file
    │   └── UsageError      a command-line argument cannot be used as given (the CLI exits 2, as argparse does)
    ├── RetrievalError      the index is missing, corrupt, from another format, or the corpus is empty
    ├── SessionError        a named session is damaged, too large, from a newer selfrag, or locked too long
    ├── LLMError            a call failed after the SDK's own transport retries (keeps status and request id)
    │   ├── FatalLLMError   retrying cannot help: bad key, no permission, unknown model, quota exhausted,
    │   │                   or a rate-limit wait (429 Retry-After) longer than the answer has left
    │   ├── ContextLengthError  the prompt is longer than the model's context (shrink the evidence)
    │   ├── RefusalError    the model refused, or a content filter stopped the reply (never re-asked)
    │   └── CritiqueError   structured output still invalid after the last re-ask (keeps raw text and reason)
    └── BudgetError         a per-answer budget (calls, tokens, deadline) ran out

One candidate's failure never raises out of a step: the stage records it and the beam drops it. Only when
nothing can go on does the controller raise. Only the command line turns these into one line and an exit code.
`MODEL_FAILURES` are the call failures the endpoint answered (the model's reply, or the prompt, is at fault): asking
again gets the same, so they are the question's, never counted against the endpoint.
"""

from __future__ import annotations


class SelfRagError(Exception):
    """Base of every error selfrag raises on purpose."""


class ConfigError(SelfRagError):
    """A configuration value or prompt file is invalid; the message names the field and the allowed values."""


class SettingTypeError(ConfigError):
    """A setting's value is not of the type it declares (2.5 or true where a whole number is declared), from a
    flag, a SELFRAG_* variable or the config file; the message names the setting and where it came from. The
    command line exits 2 for it, as for a usage error: the value cannot be used as given."""


class PromptNotSupportedError(ConfigError):
    """The chat model has no form for this prompt (the fine-tuned Self-RAG models speak only the engine's own
    four); a stage that is a courtesy (the short answer first) skips itself instead of failing the answer."""


class InputError(SelfRagError):
    """User input cannot be used as given (empty question, unreadable file, malformed line)."""


class UsageError(InputError):
    """A command's argument cannot be used as given (a flag out of range, a missing QUERY): a usage error."""


class RetrievalError(SelfRagError):
    """The index cannot be used; the message says how to rebuild it."""


class SessionError(SelfRagError):
    """A named session cannot be read or written; the file is left as it was and the message says what to do."""


class LLMError(SelfRagError):
    """A call to the chat endpoint failed after the SDK's transport retries."""

    def __init__(self, message: str, *, status: int | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.request_id = request_id


class FatalLLMError(LLMError):
    """The endpoint refused in a way retrying cannot fix (401, 403, 404, exhausted quota)."""


class ContextLengthError(LLMError):
    """The prompt did not fit the model's context: the server said so, or silently cut it."""


class RefusalError(LLMError):
    """The model declined (`message.refusal`) or the endpoint's content filter stopped the reply
    (`finish_reason: content_filter`). Not a parse failure: asking again will not help, so it is never re-asked;
    the candidate is dropped with this reason. `kind` is "refusal" or "content_filter"."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class CritiqueError(LLMError):
    """The model's structured output stayed invalid after the last re-ask."""

    def __init__(self, message: str, *, raw_text: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.raw_text = raw_text
        self.reason = reason


class BudgetError(SelfRagError):
    """A per-answer budget (LLM calls, tokens, deadline) ran out."""


# the endpoint answered, but the reply cannot be used or the prompt cannot be posed: asking again gets the same
MODEL_FAILURES = (CritiqueError, RefusalError, ContextLengthError)
