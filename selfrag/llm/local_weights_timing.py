"""How fast each weights file of the embedded model runs on this machine, and the record that keeps the answer.

The work (`WORK`) is the same for every option: a `PROMPT_TOKENS`-token prompt evaluated as one batch, as a call's
prompt is, then decoding steps of `STEP_ROWS` rows each: one row as a call decoded alone, five as the rows of a
step's five candidates decoded together (here in one sequence: the weight products are the same). llama.cpp runs
one-row and several-row products on different kernels, and which format wins can differ. An option's file is loaded,
given the work `REPEATS` times (the first run also warms the threads and the mapped file) and its best time kept,
then closed. Each option is timed in a child process (`time_in_child`): llama.cpp can crash on a kernel it was
built with (the shipped Q4_1 file ends in a segmentation fault on a Xeon with AMX), and a crash must cost the option,
not the user's process. What the whole measurement costs is kept in the record (`took`) and shown by `selfrag
doctor`.

A record holds the timings, the choice, when, on how many threads, and what it is valid for (`Machine`): the
CPU's model name and the instruction-set flags llama.cpp's kernels use, llama.cpp's build (llama-cpp-python's
version, ggml's version and commit, the features it was compiled with) and the timed source file's name, size
and mtime. `Measurement.fits` says why a record does not fit this machine, this work or these options.

Everything here is pure but `time_option` (it runs llama.cpp: `llama_cpp` is the module or a fake of it),
`time_in_child`, `cpu_here`, `read_record`, `write_record` and `check_writable`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import write_atomic

FORMAT = "selfrag-weights-choice/1"
MAX_BYTES = 64 * 1024  # a larger record is not read (one is well under 2 KiB)
PROMPT_TOKENS = 64  # the prompt evaluated as one batch
STEP_ROWS = (1, 1, 1, 5, 5, 5)  # decoding steps after it: rows (tokens) decoded together in each
REPEATS = 2  # the work is done this many times per option; the best time counts
CONTEXT = 128  # the timing context's cells: the prompt and every step's rows fit
CHILD_LIMIT_S = 300.0  # a child timing one option longer than this is stopped, and the option counts as failed
WORK = f"a {PROMPT_TOKENS}-token prompt, then steps of {' '.join(map(str, STEP_ROWS))} rows; best of {REPEATS}"
PROMPT_TEXT = (
    "Members may borrow a bike for up to 24 hours. A bike returned late costs a fee for each extra day, and a "
    "charge may be disputed within 30 days by writing to the co-op with the receipt and the bike's number."
)
# Flags of /proc/cpuinfo that decide which of llama.cpp's kernels run (x86 "flags", Arm "Features").
KERNEL_FLAGS = frozenset(
    "sse4_1 sse4_2 ssse3 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512bw avx512dq avx512vl avx512_vnni avx512vbmi "
    "avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16 asimd asimdhp asimddp fphp i8mm bf16 sve sve2 sme".split()
)


class BadRecord(ValueError):
    """A weights-choice record that cannot be used; the message says why (one line)."""


class OptionFailed(RuntimeError):
    """An option that could not be timed: llama.cpp refused, failed or crashed on it; the message says how."""


Timer = Callable[[Path, int], float]  # (weights file, threads) -> best seconds of the work; OptionFailed


@dataclass(frozen=True, slots=True)
class Machine:
    """What a measurement is valid for."""

    cpu: str  # the CPU's model name (or what the platform tells where /proc/cpuinfo does not exist)
    flags: tuple[str, ...]  # its KERNEL_FLAGS, sorted
    runtime: str  # llama-cpp-python's version, ggml's version and commit
    build: tuple[str, ...]  # the CPU features llama.cpp was compiled for (llama_print_system_info)
    source: tuple[str, int, int]  # the timed source file: name, size, mtime in ns

    def differs(self, other: Machine) -> str:
        """What differs from `other` (a short phrase), or ""."""
        if (self.cpu, self.flags) != (other.cpu, other.flags):
            return "the CPU or its features changed"
        if (self.runtime, self.build) != (other.runtime, other.build):
            return "llama.cpp changed"
        if self.source != other.source:
            return "the model file changed"
        return ""

    def describe(self) -> str:
        flags = " ".join(self.flags) or "no flags known"
        return f"CPU {self.cpu} ({flags}); {self.runtime}"


@dataclass(frozen=True, slots=True)
class Measurement:
    """One timing of the options on a machine, and the choice it made."""

    machine: Machine
    options: tuple[str, ...]  # the kinds asked for, in order
    seconds: tuple[tuple[str, float], ...]  # best time of each option that loaded
    chosen: str
    threads: int
    measured_at: str  # ISO 8601, UTC
    took: float  # seconds the whole measurement took, loads included
    failed: tuple[tuple[str, str], ...] = ()  # options that could not be timed, and why

    def fits(self, machine: Machine, options: tuple[str, ...]) -> str:
        """Why this record cannot stand for `machine` and `options` (a short phrase), or "" when it can."""
        if options != self.options:
            return "other weights were asked for"
        return machine.differs(self.machine)

    def describe(self) -> str:
        timings = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in self.seconds)
        why = dict(self.failed)
        failed = [f"{kind} {why.get(kind, 'did not load')}" for kind in self.options if kind not in dict(self.seconds)]
        failed_text = f" ({'; '.join(failed)})" if failed else ""
        when = self.measured_at.replace("T", " ").removesuffix("Z")[:16] + " UTC"
        return (
            f"{timings}{failed_text}, best of {REPEATS} on {self.threads} thread(s), {self.took:.1f} s in all, "
            f"{when}; {self.machine.describe()}"
        )


# -- this machine ---------------------------------------------------------------------------------------------------


def cpu_identity(cpuinfo: str | None) -> tuple[str, tuple[str, ...]]:
    """(model name, kernel flags) from the text of /proc/cpuinfo; from the platform module when there is none."""
    if cpuinfo is None:
        return platform.processor() or platform.machine() or "unknown", ()
    model, part, flags = "", "", set[str]()
    for line in cpuinfo.splitlines():
        key, _, value = (part_.strip() for part_ in line.partition(":"))
        key = key.lower()
        if key in ("model name", "hardware", "cpu model") and not model:
            model = value
        elif key == "cpu part" and not part:
            part = value
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    if not model:
        model = f"{platform.machine() or 'unknown'} (CPU part {part})" if part else platform.machine() or "unknown"
    return model, tuple(sorted(flags & KERNEL_FLAGS))


def cpu_here() -> tuple[str, tuple[str, ...]]:
    """This machine's `cpu_identity`."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            return cpu_identity(file.read(1 << 20))
    except OSError:
        return cpu_identity(None)


def runtime_identity(llama_cpp: Any) -> tuple[str, tuple[str, ...]]:
    """(llama-cpp-python's and ggml's versions, the CPU features llama.cpp was built for) from the module."""
    versions = [f"llama-cpp-python {getattr(llama_cpp, '__version__', 'unknown')}"]
    library = getattr(getattr(llama_cpp, "llama_cpp", None), "_lib", None)  # libllama; ggml's symbols resolve in it
    with contextlib.suppress(AttributeError, OSError, TypeError, UnicodeDecodeError):
        named = []
        for symbol in ("ggml_version", "ggml_commit"):
            function = getattr(library, symbol)
            function.restype = ctypes.c_char_p
            named.append(function().decode())
        versions.append(f"ggml {named[0]} ({named[1]})")
    try:
        info = llama_cpp.llama_print_system_info()
        text = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    except AttributeError:
        text = ""
    features = tuple(
        name.strip() for name, _, value in (part.partition("=") for part in text.split("|")) if value.strip() == "1"
    )
    return ", ".join(versions), tuple(name.removeprefix("CPU : ") for name in features)


def source_identity(source: Path) -> tuple[str, int, int]:
    stat = source.stat()
    return source.name, stat.st_size, stat.st_mtime_ns


def machine_here(source: Path, llama_cpp: Any, cpu: tuple[str, tuple[str, ...]] | None = None) -> Machine:
    """This machine as a record names it (`cpu`: the CPU's identity when known already, e.g. a test's)."""
    model, flags = cpu if cpu is not None else cpu_here()
    runtime, build = runtime_identity(llama_cpp)
    return Machine(model, tuple(flags), runtime, build, source_identity(source))


# -- the timing -----------------------------------------------------------------------------------------------------


def time_option(llama_cpp: Any, path: Path, threads: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """The best time of `REPEATS` runs of the work on the weights file `path`; what loading raises when it fails
    (llama-cpp-python raises ValueError)."""
    model = llama_cpp.Llama(
        model_path=str(path),
        n_ctx=CONTEXT,
        n_batch=PROMPT_TOKENS,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    try:
        tokens = list(model.tokenize(PROMPT_TEXT.encode(), add_bos=True))
        tokens = (tokens * math.ceil(PROMPT_TOKENS / max(len(tokens), 1)))[:PROMPT_TOKENS]
        best = math.inf
        for _ in range(REPEATS):
            model.reset()
            started = clock()
            model.eval(tokens)
            for rows in STEP_ROWS:
                model.eval(tokens[:rows])
            best = min(best, clock() - started)
        return best
    finally:
        close = getattr(model, "close", None)
        if close is not None:
            close()


def time_in_child(path: Path, threads: int, *, command: list[str] | None = None) -> float:
    """`time_option` with the real llama.cpp, run in a child Python process; OptionFailed saying how it failed
    (a crash names its signal). `command` replaces the child's command line (tests)."""
    argv = command or [sys.executable, "-m", "selfrag.llm.local_weights_timing", str(path), str(threads)]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=CHILD_LIMIT_S
        )
    except subprocess.TimeoutExpired:
        raise OptionFailed(f"took over {CHILD_LIMIT_S:.0f} s and was stopped") from None
    except OSError as error:
        raise OptionFailed(f"no process could time it ({error.strerror or error})") from None
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise OptionFailed(f"crashed llama.cpp ({name})")
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise OptionFailed(f"did not load ({said[:160]})")
    try:
        return _number(json.loads(last)["seconds"])
    except (ValueError, KeyError, TypeError):
        raise OptionFailed(f"the timing process printed {last[:60]!r}, not a time") from None


def _child(argv: list[str]) -> int:
    """The child `time_in_child` starts: times the weights file argv[0] on argv[1] threads, prints {"seconds": s}."""
    import llama_cpp  # only the child loads llama.cpp

    try:
        seconds = time_option(llama_cpp, Path(argv[0]), int(argv[1]))
    except (ValueError, OSError, RuntimeError) as error:
        print(str(error).replace("\n", " ")[:200], file=sys.stderr)
        return 1
    print(json.dumps({"seconds": seconds}))
    return 0


def utc_now(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the record -----------------------------------------------------------------------------------------------------


def record_path(cache: Path, source: Path) -> Path:
    """Where the choice for `source` is recorded: beside its copies, named after the model."""
    stem = source.name.removesuffix(".gguf").rsplit(".", 1)[0]
    return cache / "models" / f"{stem}.choice.json"


def dump(measurement: Measurement) -> str:
    machine = measurement.machine
    record = {
        "format": FORMAT,
        "chosen": measurement.chosen,
        "seconds": dict(measurement.seconds),
        "options": list(measurement.options),
        "work": WORK,
        "threads": measurement.threads,
        "took_s": measurement.took,
        "failed": dict(measurement.failed),
        "measured_at": measurement.measured_at,
        "cpu": {"model": machine.cpu, "flags": list(machine.flags)},
        "llama_cpp": {"version": machine.runtime, "features": list(machine.build)},
        "source": {"name": machine.source[0], "size": machine.source[1], "mtime_ns": machine.source[2]},
    }
    return json.dumps(record, indent=1) + "\n"


def load(text: str) -> Measurement:
    """A record from its file's text, or BadRecord naming what is wrong. A record of another timed work is
    refused too: its timings are not comparable."""
    try:
        record = json.loads(text)
    except ValueError:
        raise BadRecord("not JSON (a torn or corrupt file)") from None
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    if record.get("format") != FORMAT:
        raise BadRecord(f"format {str(record.get('format'))[:40]!r}, this selfrag reads {FORMAT!r}")
    if record.get("work") != WORK:
        raise BadRecord("timed on other work than this selfrag's")
    try:
        cpu, runtime, source = record["cpu"], record["llama_cpp"], record["source"]
        seconds = tuple((str(kind), _number(value)) for kind, value in dict(record["seconds"]).items())
        options = tuple(_text(kind) for kind in record["options"])
        machine = Machine(
            _text(cpu["model"]),
            tuple(_text(flag) for flag in cpu["flags"]),
            _text(runtime["version"]),
            tuple(_text(feature) for feature in runtime["features"]),
            (_text(source["name"]), _whole(source["size"]), _whole(source["mtime_ns"])),
        )
        measurement = Measurement(
            machine,
            options,
            seconds,
            _text(record["chosen"]),
            _whole(record["threads"]),
            _text(record["measured_at"]),
            _number(record["took_s"]),
            tuple((_text(kind), _text(why)) for kind, why in dict(record.get("failed", {})).items()),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise BadRecord(f"a field is missing or of the wrong type ({str(error)[:60]})") from None
    if measurement.chosen not in dict(seconds) or not set(dict(seconds)) <= set(options):
        raise BadRecord("the choice is not one of the timed options")
    return measurement


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r:.40} is not text")
    return value


def _whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r:.40} is not a whole number")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TypeError(f"{value!r:.40} is not a time in seconds")
    return float(value)


def read_record(path: Path) -> Measurement | None:
    """The record at `path`; None when there is none; BadRecord when it cannot be used, OSError when it cannot
    be read."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):  # none yet, or no folder for one (said when writing)
        return None
    if len(data) > MAX_BYTES:
        raise BadRecord(f"larger than {MAX_BYTES} bytes")
    try:
        return load(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRecord("not UTF-8 text (a corrupt file)") from None


def write_record(path: Path, measurement: Measurement) -> None:
    """Store atomically (files.write_atomic); OSError when that fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump(measurement))


def check_writable(folder: Path) -> None:
    """OSError unless a file can be created in `folder` (made if missing): checked before timing, so a record that
    could not be kept costs no timing in every process."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".writable.", dir=folder)
    os.close(handle)
    os.unlink(name)


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
