"""The HTTP seam for tests: openai 3.x sends through httpx2, respx routes speak httpx; this bridges them.

`openai_client(router)` is a real `AsyncOpenAI` whose transport hands every request to a respx router,
so the SDK's own request building, retries and response parsing all run. No global patching.
"""

from __future__ import annotations

import httpx
import httpx2
import respx
from openai import AsyncOpenAI

BASE = "http://mock.test/v1"


def respx_transport(router: respx.MockRouter) -> httpx2.MockTransport:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        content = await request.aread()
        mirrored = httpx.Request(
            request.method, str(request.url), headers=list(request.headers.multi_items()), content=content
        )
        answer = await router.async_handler(mirrored)
        body = await answer.aread()
        return httpx2.Response(answer.status_code, headers=list(answer.headers.multi_items()), content=body)

    return httpx2.MockTransport(handler)


def openai_client(router: respx.MockRouter, *, api_key: str = "sk-test", max_retries: int = 0) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key=api_key,
        base_url=BASE,
        max_retries=max_retries,
        http_client=httpx2.AsyncClient(transport=respx_transport(router)),
    )


def completion(
    content: str | None,
    *,
    logprobs: list | None = None,
    finish_reason: str = "stop",
    choices: int = 1,
    usage: dict | None = None,
    message: dict | None = None,
) -> dict:
    """A ChatCompletion body; `message` adds fields to the message (`refusal`, `reasoning_content`)."""
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content, **(message or {})},
        "finish_reason": finish_reason,
        "logprobs": {"content": logprobs} if logprobs is not None else None,
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{**choice, "index": i} for i in range(choices)],
        "usage": usage if usage is not None else {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }
