"""Which weights file the embedded model serves: the shipped Q4_1 file, its F16 copy, or a BF16 copy.

- Kinds: `q4_1` is the shipped file as it is; `f16` and `bf16` are copies upcast once by llama.cpp into the cache
  folder's `models/` (written to a temporary name and renamed, with a small record of their size beside them; a
  copy that is missing, truncated or not GGUF is ignored and removed). F16 is lossless, BF16 is not: it rounds the
  weights to 8 bits of mantissa, so some replies change.
- The choice: with several kinds asked for (by default `LOSSLESS`: the shipped file and the F16 copy), the first
  use on a machine times each one on the same short work (`local_weights_timing`) and keeps the fastest; the timings go
  into a record beside the copies, which later processes reuse while the CPU and its features, llama.cpp's build
  and the source file stay the same. One kind asked for ($SELFRAG_WEIGHTS=q4_1, f16 or bf16) is served untimed.
- A record that is corrupt or of another format is ignored with one line (logger `selfrag.weights`) and the
  weights are timed again; a record that cannot be read, or a folder where none can be written, is said in one
  line and the F16 copy is served untimed, as before the timing existed (the shipped file when no copy can be
  made). Nothing here raises for a bad cache.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..files import write_atomic
from .local_weights_timing import (
    BadRecord,
    Machine,
    Measurement,
    OptionFailed,
    Timer,
    check_writable,
    machine_here,
    read_record,
    record_path,
    time_in_child,
    time_option,
    utc_now,
    write_record,
)

KINDS = ("q4_1", "f16", "bf16")
LOSSLESS = ("q4_1", "f16")  # timed against each other by default
FTYPES = {"f16": 1, "bf16": 32}  # the copies' llama_ftype: LLAMA_FTYPE_MOSTLY_F16, LLAMA_FTYPE_MOSTLY_BF16
FALLBACK = "f16"  # what was served before the timing existed, and still is when the choice cannot be recorded
GGUF_MAGIC = b"GGUF"
VARIABLE = "SELFRAG_WEIGHTS"

log = logging.getLogger("selfrag.weights")  # the command line shows these lines on stderr


def weights_asked(text: str | None) -> tuple[str, ...]:
    """The kinds $SELFRAG_WEIGHTS names: unset, empty or `auto` times `LOSSLESS`; one kind forces it; several,
    comma-separated, are timed against each other. Anything else is a UsageError naming the variable."""
    value = (text or "").strip().lower()
    if value in ("", "auto"):
        return LOSSLESS
    kinds = tuple(dict.fromkeys(part.strip() for part in value.split(",")))
    if not all(kind in KINDS for kind in kinds):
        raise UsageError(
            f"{VARIABLE} must be auto, {', '.join(KINDS[:-1])} or {KINDS[-1]} (or several, comma-separated, to time "
            f"them against each other); got {(text or '')[:40]!r}"
        )
    return kinds


@dataclass(frozen=True, slots=True)
class WeightsChoice:
    """The weights file served and why (for `selfrag doctor` and the benchmarks)."""

    kind: str  # q4_1, f16 or bf16
    file: Path
    reason: str  # why this kind
    measurement: Measurement | None = None  # the timings it rests on, when it was timed
    record: Path | None = None  # where they are recorded
    forced: bool = False  # one kind was asked for ($SELFRAG_WEIGHTS): nothing was timed

    def describe(self) -> str:
        timed = f": {self.measurement.describe()}" if self.measurement is not None else ""
        return f"{self.kind}, {self.reason}{timed}"

    def with_fallback(self, kind: str, file: Path, why: str) -> WeightsChoice:
        return WeightsChoice(kind, file, why, self.measurement, self.record, self.forced)


def choose_weights(
    source: Path,
    cache: Path,
    options: tuple[str, ...],
    *,
    threads: int,
    llama_cpp: Any,
    remeasure: bool = False,
    cpu: tuple[str, tuple[str, ...]] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    now: Callable[[], float] = time.time,
    timer: Timer | None = time_in_child,
) -> WeightsChoice:
    """The weights to serve for `source` among `options` (see the module docstring). `llama_cpp` is the llama_cpp
    module (or a fake of it); `remeasure` times again whatever is recorded (`selfrag doctor --refresh`); `cpu`,
    `clock` and `now` stand in for this machine's CPU identity and clocks; `timer` times one option (by default
    in a child process; None: in this process, on `llama_cpp`)."""
    if len(options) == 1:
        asked = _copy_or_source(source, cache, options[0], f"asked by ${VARIABLE} (not timed)", threads, llama_cpp)
        return replace(asked, forced=True)
    path = record_path(cache, source)
    machine = machine_here(source, llama_cpp, cpu)
    why = "doctor --refresh" if remeasure else "first use on this machine"
    if not remeasure:
        try:
            known = read_record(path)
        except BadRecord as error:
            log.warning("selfrag: ignoring the weights choice %s: %s; timing the weights again", path, error)
            known, why = None, "the record could not be used"
        except OSError as error:
            problem = f"cannot read the weights choice {path}: {_why(error)}"
            return _fallback(source, cache, options, problem, threads, llama_cpp)
        if known is not None:
            why = known.fits(machine, options)
            if not why:
                reason = f"the fastest when timed here, remembered in {path}"
                chosen = _copy_or_source(source, cache, known.chosen, reason, threads, llama_cpp)
                return WeightsChoice(chosen.kind, chosen.file, chosen.reason, known, path)
    try:
        check_writable(path.parent)
    except OSError as error:
        problem = f"cannot record the weights choice in {path.parent}: {_why(error)}"
        return _fallback(source, cache, options, problem, threads, llama_cpp)
    if timer is None:
        timer = partial(_time_here, llama_cpp, clock=clock)
    return _measure(source, cache, options, machine, threads, llama_cpp, path, why, (timer, clock, now))


def _time_here(llama_cpp: Any, path: Path, threads: int, *, clock: Callable[[], float]) -> float:
    try:
        return time_option(llama_cpp, path, threads, clock)
    except (ValueError, OSError, RuntimeError) as error:
        raise OptionFailed(f"did not load ({error})") from None


def _measure(
    source: Path,
    cache: Path,
    options: tuple[str, ...],
    machine: Machine,
    threads: int,
    llama_cpp: Any,
    path: Path,
    why: str,
    timing: tuple[Timer, Callable[[], float], Callable[[], float]],  # the timer, the clock, the wall clock
) -> WeightsChoice:
    """Time each option (making the copies first), keep the fastest, record it; unchosen copies are removed."""
    timer, clock, now = timing
    started = clock()
    files: dict[str, Path] = {}
    for kind in options:
        try:
            files[kind] = source if kind == "q4_1" else copy_for(source, cache, kind, threads, llama_cpp)
        except OSError as error:
            log.warning("selfrag: no %s copy of %s (%s); it is not timed", kind.upper(), source.name, _why(error))
    seconds: list[tuple[str, float]] = []
    failed: list[tuple[str, str]] = []
    for kind, file in files.items():
        try:
            seconds.append((kind, timer(file, threads)))
        except OptionFailed as error:
            log.warning("selfrag: the %s weights %s %s; not served", kind, file.name, error)
            failed.append((kind, str(error)))
            if file != source:
                discard(file)
    if not seconds:
        return _copy_or_source(source, cache, options[0], "no option could be timed", threads, llama_cpp)
    chosen = min(seconds, key=lambda pair: pair[1])[0]
    for kind, file in files.items():
        if kind != chosen and file != source:
            discard(file)  # a copy nobody serves on this machine: its disk space back
    took = round(clock() - started, 3)
    measurement = Measurement(machine, options, tuple(seconds), chosen, threads, utc_now(now()), took, tuple(failed))
    try:
        write_record(path, measurement)
        recorded: Path | None = path
    except OSError as error:
        then = "the next process times them again"
        log.warning("selfrag: cannot record the weights choice %s: %s; %s", path, _why(error), then)
        recorded = None
    return WeightsChoice(chosen, files[chosen], f"the fastest, timed now ({why})", measurement, recorded)


def _fallback(
    source: Path, cache: Path, options: tuple[str, ...], problem: str, threads: int, llama_cpp: Any
) -> WeightsChoice:
    """What was served before the timing existed (the F16 copy, else the shipped file), untimed, said in one line."""
    kind = FALLBACK if FALLBACK in options else options[0]
    log.warning("selfrag: %s; serving the %s weights untimed", problem, kind)
    return _copy_or_source(source, cache, kind, f"untimed ({problem})", threads, llama_cpp)


def _copy_or_source(source: Path, cache: Path, kind: str, reason: str, threads: int, llama_cpp: Any) -> WeightsChoice:
    """`kind` served: the shipped file, or its copy (made if missing); the shipped file when no copy can be made."""
    if kind == "q4_1":
        return WeightsChoice(kind, source, reason)
    try:
        return WeightsChoice(kind, copy_for(source, cache, kind, threads, llama_cpp), reason)
    except OSError as error:
        return WeightsChoice("q4_1", source, f"{reason}; no {kind.upper()} copy: {_why(error)}")


def _why(error: OSError) -> str:
    return str(error.strerror or error)


# -- the copies -----------------------------------------------------------------------------------------------------


def copy_for(source: Path, cache: Path, kind: str, threads: int, llama_cpp: Any = None) -> Path:
    """The cached `kind` copy of `source`, made if it is missing or damaged; OSError when it cannot be made."""
    cached = cached_f16(source, cache, kind)
    return cached or upcast_f16(source, cache, n_threads=threads, runtime=llama_cpp, weights=kind)


def f16_path(source: Path, cache: Path, weights: str = "f16") -> Path:
    """Where the F16 (or BF16) copy of `source` lives; the name changes when the source file does."""
    stat = source.stat()
    stem = source.name.removesuffix(".gguf").rsplit(".", 1)[0]
    return cache / "models" / f"{stem}.{weights.upper()}.{stat.st_size}-{stat.st_mtime_ns}.gguf"


def cached_f16(source: Path, cache: Path, weights: str = "f16") -> Path | None:
    """The F16 (or BF16) copy if it looks whole (its recorded size, the GGUF magic), else None (and it is removed)."""
    target = f16_path(source, cache, weights)
    try:
        record = json.loads(_sidecar(target).read_text(encoding="utf-8"))
        with target.open("rb") as file:
            whole = file.read(4) == GGUF_MAGIC and target.stat().st_size == record["size"]
    except (OSError, ValueError, KeyError, TypeError):
        whole = False
    if whole:
        return target
    discard(target)
    return None


def upcast_f16(source: Path, cache: Path, *, n_threads: int, runtime: Any = None, weights: str = "f16") -> Path:
    """Write the F16 (or BF16) copy of `source` into `cache` atomically and return it; OSError when that fails.
    `runtime` is the llama_cpp module (imported when None)."""
    llama_cpp = runtime or importlib.import_module("llama_cpp")
    target = f16_path(source, cache, weights)
    kind = f".{weights.upper()}."
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    try:
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # what Llama(verbose=False) does
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.allow_requantize, params.nthread = FTYPES[weights], True, n_threads
        if llama_cpp.llama_model_quantize(str(source).encode(), temporary.encode(), ctypes.byref(params)) != 0:
            raise OSError(f"llama.cpp could not write the {weights.upper()} copy of {source.name}")
        _fsync(temporary)
        os.replace(temporary, target)
        write_atomic(_sidecar(target), json.dumps({"source": str(source), "size": target.stat().st_size}))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    for old in target.parent.glob(f"{target.name.split(kind)[0]}{kind}*.gguf"):
        if old != target:
            discard(old)
    return target


def discard(path: Path) -> None:
    """Remove a cached model file and its record, if they exist (best effort)."""
    for stale in (path, _sidecar(path)):
        with contextlib.suppress(OSError):
            stale.unlink()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _fsync(path: str | Path) -> None:
    with open(path, "rb") as file:
        os.fsync(file.fileno())
