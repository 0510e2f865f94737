"""Test doubles for selfrag's users and its own tests; the engine never imports this package.

- `scripted`: `ScriptedChatModel`, a chat model that answers from a script keyed by prompt name (`Scripted`
  replies can carry label probabilities as token logprobs), and `ListRetriever`, a retriever over a list.
- `fake_server`: `FakeOpenAIServer`, a loopback OpenAI-compatible server with fault modes
  (`python -m selfrag.testing.fake_server`).
"""

from .scripted import ListRetriever, Scripted, ScriptedChatModel, fake_logprobs

__all__ = ["ListRetriever", "Scripted", "ScriptedChatModel", "fake_logprobs"]
