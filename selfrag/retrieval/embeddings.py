"""Text embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (the same endpoint as the chat model).

- `Embedder` is the seam: `OpenAIEmbedder` speaks HTTP through the SDK's `client.embeddings.create`; tests may
  pass any object with `model` and `embed`.
- Texts go in batches of `batch_size`; batches run concurrently under one semaphore per endpoint
  (`max_concurrency`). Vectors come back float32, in input order, each scaled to unit length (a zero vector
  stays zero), so a dot product is the cosine.
- Transport retries belong to the SDK (`max_retries`), as for chat. Every HTTP request, retries included, is
  counted in the Meter's `llm_calls`, and the reported tokens in `prompt_tokens`.
- A 404 or 405 on the route means the server has no embeddings endpoint, or does not serve the model: that is
  a ConfigError saying what to do, not a transient failure.
- What it does not do: tokenise. Texts longer than `MAX_INPUT_CHARS` are cut (about 2,000 tokens of English),
  and an empty text is sent as one space (the API rejects empty strings).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx2
import numpy as np
import openai
from openai import AsyncOpenAI

from ..config import ResolvedEndpoint, redact_url
from ..errors import ConfigError, LLMError
from ..llm.openai_chat import attempts_spent, translate_error
from ..schema import Meter

BATCH_SIZE = 64  # texts per request
MAX_INPUT_CHARS = 8_000
MISSING_ROUTE = (404, 405)


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors, one row per text."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str], meter: Meter) -> np.ndarray: ...


class OpenAIEmbedder:
    """An Embedder over one OpenAI-compatible endpoint; one client per event loop, like `OpenAIChatModel`."""

    def __init__(
        self,
        endpoint: ResolvedEndpoint,
        model: str,
        *,
        batch_size: int = BATCH_SIZE,
        http_client_factory: Callable[[], httpx2.AsyncClient] | None = None,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("an embedding model is needed: pass --embedding-model (e.g. text-embedding-3-small)")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self._endpoint, self._model, self.batch_size = endpoint, model.strip(), batch_size
        self._http_client_factory = http_client_factory
        self._clients: dict[int, tuple[AsyncOpenAI, asyncio.Semaphore]] = {}

    @property
    def model(self) -> str:
        return self._model

    @property
    def where(self) -> str:
        return redact_url(self._endpoint.base_url or "https://api.openai.com/v1")

    def _loop_state(self) -> tuple[AsyncOpenAI, asyncio.Semaphore]:
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._clients:
            settings = self._endpoint.settings
            client = AsyncOpenAI(
                api_key=self._endpoint.api_key,
                base_url=self._endpoint.base_url,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                http_client=self._http_client_factory() if self._http_client_factory else None,
            )
            self._clients = {loop_id: (client, asyncio.Semaphore(settings.max_concurrency))}
        return self._clients[loop_id]

    async def aclose(self) -> None:
        for client, _ in self._clients.values():
            await client.close()
        self._clients = {}

    async def embed(self, texts: Sequence[str], meter: Meter) -> np.ndarray:
        """Unit vectors for `texts` (shape: len(texts) × dimensions), in input order."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        inputs = [text[:MAX_INPUT_CHARS] if text.strip() else " " for text in texts]
        batches = [inputs[i : i + self.batch_size] for i in range(0, len(inputs), self.batch_size)]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._batch(batch, meter)) for batch in batches]
        except BaseExceptionGroup as failed:  # the first failure cancels the other batches; raise it as itself
            first: BaseException = failed
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        parts = [task.result() for task in tasks]
        if len({part.shape[1] for part in parts}) != 1:
            raise LLMError(f"the embeddings endpoint returned vectors of different lengths for model {self.model}")
        return normalise(np.concatenate(parts))

    async def _batch(self, texts: list[str], meter: Meter) -> np.ndarray:
        client, semaphore = self._loop_state()
        async with semaphore:
            try:
                raw = await client.embeddings.with_raw_response.create(
                    input=texts, model=self.model, encoding_format="float"
                )
                meter.llm_calls += 1 + raw.retries_taken
                reply = raw.parse()
            except openai.APIStatusError as error:
                meter.llm_calls += attempts_spent(error, self._endpoint.settings.max_retries)
                meter.failed_calls += 1
                if error.status_code in MISSING_ROUTE:
                    raise self._missing(error) from None
                raise translate_error(error, self._endpoint.api_key) from None
            except openai.APIError as error:
                meter.llm_calls += attempts_spent(error, self._endpoint.settings.max_retries)
                meter.failed_calls += 1
                raise translate_error(error, self._endpoint.api_key) from None
            except (ValueError, TypeError) as error:  # a 200 that is not an embeddings list
                meter.llm_calls += 1
                meter.failed_calls += 1
                raise LLMError(f"the embeddings endpoint answered 200 with an unusable body ({error})") from None
        usage = getattr(reply, "usage", None)
        meter.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        return _matrix(reply, len(texts), self.model)

    def _missing(self, error: openai.APIStatusError) -> ConfigError:
        detail = str(getattr(error, "message", "") or error).replace(self._endpoint.api_key, "***").splitlines()[0]
        return ConfigError(
            f"the endpoint {self.where} offers no embeddings for model {self.model!r} "
            f"({error.status_code}: {detail[:200]}); point --base-url at a server with /v1/embeddings, pass an "
            "--embedding-model it serves, or leave dense retrieval off (index without --embed, or dense = off)"
        )


def _matrix(reply: Any, expected: int, model: str) -> np.ndarray:
    """The reply's vectors as a float32 matrix in input order; LLMError when it breaks the contract."""
    data = list(getattr(reply, "data", None) or [])
    if len(data) != expected:
        raise LLMError(f"the embeddings endpoint returned {len(data)} vectors for {expected} texts (model {model})")
    data.sort(key=lambda item: item.index)
    try:
        matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise LLMError(f"the embeddings endpoint returned malformed vectors ({error})") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.all(np.isfinite(matrix)):
        raise LLMError(f"the embeddings endpoint returned malformed vectors (shape {matrix.shape}, model {model})")
    return matrix


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); all-zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
