"""The embedded model's weights chosen for this CPU (llm/local_weights.py, llm/local_weights_timing.py): the options
timed on first use, the fastest kept and recorded, the record reused until the CPU, llama.cpp or the model file
changes, a bad record said in one line, $SELFRAG_WEIGHTS forcing a kind.

A fake llama_cpp module stands in for llama.cpp: its models cost a fixed time per evaluated token, counted on a
fake clock, so the timings are exact and no real model is loaded (except in the one slow test at the end).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selfrag.cli.diagnose import check_local_weights
from selfrag.errors import UsageError
from selfrag.llm.local_weights import LOSSLESS, choose_weights, f16_path, weights_asked
from selfrag.llm.local_weights_timing import (
    PROMPT_TOKENS,
    REPEATS,
    STEP_ROWS,
    WORK,
    OptionFailed,
    cpu_identity,
    load,
    record_path,
    runtime_identity,
    time_in_child,
)

XEON = ("Intel(R) Xeon(R) Processor", ("avx", "avx2", "avx512f", "f16c", "fma"))
TOKENS_PER_RUN = PROMPT_TOKENS + sum(STEP_ROWS)
ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Params(ctypes.Structure):
    _fields_ = [("ftype", ctypes.c_int), ("allow_requantize", ctypes.c_bool), ("nthread", ctypes.c_int)]


def kind_of(path: str | Path) -> str:
    name = Path(path).name
    return "bf16" if ".BF16." in name else "f16" if ".F16." in name else "q4_1"


class FakeLlamaCpp:
    """What local_weights.py uses of the llama_cpp module: Llama, the quantize calls, the version and system info."""

    def __init__(
        self, costs: dict[str, float], *, version: str = "0.3.36", broken: tuple[str, ...] = (), sleep: bool = False
    ) -> None:
        self.costs, self.broken, self.__version__ = costs, broken, version
        self.sleep = sleep  # spend the cost in real time too (for code that times on its own clock)
        self.clock = Clock()
        self.loaded: list[str] = []  # the kind of each model loaded for timing
        self.quantized: list[int] = []  # the llama_ftype of each copy written

    def llama_print_system_info(self) -> bytes:
        return b"CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 0 | OPENMP = 1 | "

    def llama_model_quantize_default_params(self) -> Params:
        return Params()

    def llama_model_quantize(self, source: bytes, target: bytes, params: object) -> int:
        self.quantized.append(params._obj.ftype)  # type: ignore[attr-defined]  # a ctypes byref
        Path(target.decode()).write_bytes(b"GGUF" + b"\0" * 60)
        return 0

    def Llama(self, model_path: str, **settings: object) -> FakeModel:  # noqa: N802  (the module's class name)
        kind = kind_of(model_path)
        if kind in self.broken:
            raise ValueError(f"Failed to load model from file: {model_path}")
        self.loaded.append(kind)
        return FakeModel(self, kind)


class FakeModel:
    def __init__(self, runtime: FakeLlamaCpp, kind: str) -> None:
        self.runtime, self.kind = runtime, kind

    def tokenize(self, text: bytes, add_bos: bool = True) -> list[int]:
        return list(range(1, 20))

    def reset(self) -> None:
        pass

    def eval(self, tokens: list[int]) -> None:
        self.runtime.clock.now += self.runtime.costs[self.kind] * len(tokens)
        if self.runtime.sleep:
            time.sleep(self.runtime.costs[self.kind] * len(tokens))

    def close(self) -> None:
        pass


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "shipped" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    path.parent.mkdir()
    path.write_bytes(b"GGUF the shipped weights")
    return path


def choose(source: Path, cache: Path, runtime: FakeLlamaCpp, options=LOSSLESS, cpu=XEON, **kwargs):
    return choose_weights(
        source,
        cache,
        options,
        threads=2,
        llama_cpp=runtime,
        cpu=cpu,
        clock=runtime.clock,
        now=lambda: 0.0,
        **{"timer": None, **kwargs},
    )


# -- timing and choosing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("costs", "fastest"),
    [({"q4_1": 0.002, "f16": 0.001}, "f16"), ({"q4_1": 0.001, "f16": 0.003}, "q4_1")],
    ids=["f16-faster", "q4_1-faster"],
)
def test_each_lossless_option_is_timed_on_the_same_work_and_the_fastest_served(source, tmp_path, costs, fastest):
    runtime = FakeLlamaCpp(costs)
    choice = choose(source, tmp_path / "cache", runtime)
    assert sorted(runtime.loaded) == ["f16", "q4_1"]  # each loaded once, given the work REPEATS times
    assert choice.kind == fastest and "timed now (first use on this machine)" in choice.reason
    assert choice.measurement is not None
    assert dict(choice.measurement.seconds) == pytest.approx({k: c * TOKENS_PER_RUN for k, c in costs.items()})
    assert runtime.clock.now == pytest.approx(100 + REPEATS * TOKENS_PER_RUN * sum(costs.values()))
    copy = f16_path(source, tmp_path / "cache")
    if fastest == "f16":
        assert choice.file == copy and copy.read_bytes()[:4] == b"GGUF"
    else:
        assert choice.file == source and not copy.exists()  # the copy nobody serves here is removed
    recorded = json.loads(record_path(tmp_path / "cache", source).read_text())
    assert recorded["chosen"] == fastest and set(recorded["seconds"]) == {"q4_1", "f16"}
    assert recorded["cpu"] == {"model": XEON[0], "flags": list(XEON[1])}
    assert "llama-cpp-python 0.3.36" in recorded["llama_cpp"]["version"]
    assert "AVX2" in recorded["llama_cpp"]["features"] and "AVX512" not in recorded["llama_cpp"]["features"]
    assert recorded["source"]["name"] == source.name and recorded["work"] == WORK
    assert recorded["measured_at"] == "1970-01-01T00:00:00Z" and recorded["threads"] == 2


def test_a_later_process_on_the_same_machine_reuses_the_record_without_timing(source, tmp_path):
    first = choose(source, tmp_path / "cache", FakeLlamaCpp({"q4_1": 0.002, "f16": 0.001}))
    later = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.009})  # would choose otherwise, were it timed
    again = choose(source, tmp_path / "cache", later)
    assert later.loaded == [] and later.quantized == []  # nothing timed, the copy already there
    assert (again.kind, again.file) == ("f16", first.file)
    assert "remembered in" in again.reason and again.measurement == first.measurement


@pytest.mark.parametrize(
    "change",
    ["cpu-features", "cpu-model", "llama-cpp", "source-file", "options", "refresh"],
)
def test_a_changed_cpu_runtime_or_source_makes_it_time_again(source, tmp_path, change):
    choose(source, tmp_path / "cache", FakeLlamaCpp({"q4_1": 0.002, "f16": 0.001}))
    version = "0.3.99" if change == "llama-cpp" else "0.3.36"
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002, "bf16": 0.003}, version=version)
    cpu, options, kwargs = XEON, LOSSLESS, {}
    if change == "cpu-features":
        cpu = (XEON[0], ("avx", "avx2", "f16c", "fma"))  # the same name, no AVX-512 (a VM that hides it)
    elif change == "cpu-model":
        cpu = ("AMD EPYC 7B13", XEON[1])
    elif change == "source-file":
        source.write_bytes(b"GGUF another release of the weights")
    elif change == "options":
        options = ("q4_1", "f16", "bf16")
    elif change == "refresh":
        kwargs = {"remeasure": True}
    choice = choose(source, tmp_path / "cache", runtime, options=options, cpu=cpu, **kwargs)
    assert sorted(runtime.loaded) == sorted(options)
    assert choice.kind == "q4_1" and "timed now" in choice.reason
    assert load(record_path(tmp_path / "cache", source).read_text()).chosen == "q4_1"  # the record follows


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"format": "selfrag-weights-choice/1", "chosen": "f1', "not JSON"),
        (b"\x00\xff\xfe garbage", "not UTF-8"),
        (b'{"format": "selfrag-weights-choice/0"}', "format"),
        (b"[]", "not a JSON object"),
        (b" " * 70_000, "larger than"),
        ("other-work", "other work"),
        ("bad-field", "wrong type"),
    ],
    ids=["torn", "binary", "other-version", "not-an-object", "huge", "other-work", "bad-field"],
)
def test_a_corrupt_record_is_ignored_with_one_line_and_the_weights_timed_again(
    source, tmp_path, caplog, content, reason
):
    cache = tmp_path / "cache"
    choose(source, cache, FakeLlamaCpp({"q4_1": 0.002, "f16": 0.001}))
    path = record_path(cache, source)
    if content in ("other-work", "bad-field"):
        record = json.loads(path.read_text())
        record.update({"work": "something else"} if content == "other-work" else {"threads": "two"})
        content = json.dumps(record).encode()
    path.write_bytes(content)
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002})
    with caplog.at_level(logging.WARNING, logger="selfrag.weights"):
        choice = choose(source, cache, runtime)
    [line] = [record.getMessage() for record in caplog.records]
    assert str(path) in line and reason in line and "timing the weights again" in line and "\n" not in line
    assert sorted(runtime.loaded) == ["f16", "q4_1"] and choice.kind == "q4_1"
    assert "the record could not be used" in choice.reason
    assert load(path.read_text()).chosen == "q4_1"  # replaced by the new timing


def test_an_unreadable_record_serves_the_f16_copy_untimed_with_one_line(source, tmp_path, caplog):
    cache = tmp_path / "cache"
    record_path(cache, source).mkdir(parents=True)  # a folder where the record should be: reading it fails
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002})
    with caplog.at_level(logging.WARNING, logger="selfrag.weights"):
        choice = choose(source, cache, runtime)
    [line] = [record.getMessage() for record in caplog.records]
    assert "cannot read the weights choice" in line and "serving the f16 weights untimed" in line
    assert runtime.loaded == [] and choice.measurement is None  # as before the timing existed: F16, untimed
    assert (choice.kind, choice.file) == ("f16", f16_path(source, cache))


def test_a_cache_that_cannot_be_written_serves_as_before_untimed_with_one_line(source, tmp_path, caplog):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").write_text("a file where the models folder should be")
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002})
    with caplog.at_level(logging.WARNING, logger="selfrag.weights"):
        choice = choose(source, cache, runtime)
    [line] = [record.getMessage() for record in caplog.records]
    assert "cannot record the weights choice" in line and "untimed" in line
    assert runtime.loaded == []  # no timing that no later process could reuse
    assert (choice.kind, choice.file) == ("q4_1", source)  # no F16 copy can be written either: the shipped file
    assert "no F16 copy" in choice.reason


def test_a_copy_that_does_not_load_is_removed_and_not_timed(source, tmp_path, caplog):
    runtime = FakeLlamaCpp({"q4_1": 0.002, "f16": 0.001}, broken=("f16",))
    with caplog.at_level(logging.WARNING, logger="selfrag.weights"):
        choice = choose(source, tmp_path / "cache", runtime)
    assert choice.kind == "q4_1" and choice.file == source
    assert not f16_path(source, tmp_path / "cache").exists()
    assert [kind for kind, _ in choice.measurement.seconds] == ["q4_1"]
    assert "f16 did not load (Failed to load model" in choice.measurement.describe()
    [line] = [record.getMessage() for record in caplog.records]
    assert "the f16 weights" in line and "did not load" in line and "not served" in line


def test_an_option_that_crashes_llama_cpp_costs_the_option_and_the_record_says_why(source, tmp_path):
    """The shipped Q4_1 file ends llama.cpp with SIGSEGV on a Xeon with AMX: timed in a child, it loses."""
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002})  # Q4_1 would be the faster, had it run

    def timer(path: Path, threads: int) -> float:
        if kind_of(path) == "q4_1":
            raise OptionFailed("crashed llama.cpp (SIGSEGV)")
        return 0.5

    cache = tmp_path / "cache"
    choice = choose(source, cache, runtime, timer=timer)
    assert choice.kind == "f16" and choice.file == f16_path(source, cache)
    assert "q4_1 crashed llama.cpp (SIGSEGV)" in choice.measurement.describe()
    again = choose(source, cache, runtime, timer=None)  # a later process: the record, no timing
    assert again.kind == "f16" and runtime.loaded == [] and again.measurement.failed == choice.measurement.failed


CRASH = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


@pytest.mark.parametrize(
    ("script", "said"),
    [
        (CRASH, "crashed llama.cpp (SIGSEGV)"),
        ("import sys; print('load failed', file=sys.stderr); sys.exit(1)", "did not load (load failed)"),
        ("print('warming up'); print('not json')", "printed 'not json', not a time"),
        ("print('{\"seconds\": -1}')", "not a time"),
    ],
    ids=["segfault", "refused", "garbage", "negative"],
)
def test_timing_in_a_child_turns_each_way_it_can_fail_into_one_line(tmp_path, script, said):
    with pytest.raises(OptionFailed) as caught:
        time_in_child(tmp_path / "w.gguf", 1, command=[sys.executable, "-c", script])
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_timing_in_a_child_reads_the_seconds_it_prints(tmp_path):
    script = "print('llama.cpp chatter'); print('{\"seconds\": 0.25}')"
    assert time_in_child(tmp_path / "w.gguf", 1, command=[sys.executable, "-c", script]) == 0.25


# -- $SELFRAG_WEIGHTS ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "kind", "ftypes"),
    [("q4_1", "q4_1", []), ("f16", "f16", [1]), ("bf16", "bf16", [32])],
)
def test_selfrag_weights_forces_a_kind_without_timing_or_a_record(source, tmp_path, asked, kind, ftypes):
    runtime = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.002, "bf16": 0.003})
    choice = choose(source, tmp_path / "cache", runtime, options=weights_asked(asked))
    assert runtime.loaded == [] and runtime.quantized == ftypes  # a copy made when one is asked for, never timed
    assert choice.kind == kind and choice.forced and choice.measurement is None
    assert choice.file == (source if kind == "q4_1" else f16_path(source, tmp_path / "cache", kind))
    assert not record_path(tmp_path / "cache", source).exists()


def test_bf16_is_timed_only_when_asked_for_among_others(source, tmp_path):
    assert "bf16" not in weights_asked(None) and weights_asked("auto") == weights_asked("") == LOSSLESS
    runtime = FakeLlamaCpp({"q4_1": 0.003, "f16": 0.002, "bf16": 0.001})
    choice = choose(source, tmp_path / "cache", runtime, options=weights_asked(" F16, bf16 "))
    assert sorted(runtime.loaded) == ["bf16", "f16"] and choice.kind == "bf16"


@pytest.mark.parametrize("bad", ["q4", "fp16", "f16,int8", "f16;bf16"])
def test_a_bad_selfrag_weights_is_a_usage_error_naming_the_variable(bad):
    with pytest.raises(UsageError, match="SELFRAG_WEIGHTS must be auto, q4_1, f16 or bf16") as caught:
        weights_asked(bad)
    assert repr(bad) in str(caught.value)


# -- what identifies the machine -----------------------------------------------------------------------------------


def test_the_cpu_is_named_with_the_flags_that_pick_llama_cpps_kernels():
    x86 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2 ht\n\n"
    assert cpu_identity(x86) == ("AMD EPYC 7B13", ("avx", "avx2", "bmi2", "f16c", "fma", "sse4_2"))
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes asimdhp asimddp i8mm\nCPU part\t: 0xd40\n"
    model, flags = cpu_identity(arm)
    assert "CPU part 0xd40" in model and flags == ("asimd", "asimddp", "asimdhp", "i8mm")
    model, flags = cpu_identity(None)  # no /proc/cpuinfo: what the platform module says
    assert model and flags == ()


def test_llama_cpps_version_and_build_features_come_from_the_module():
    version, features = runtime_identity(FakeLlamaCpp({}))
    assert version == "llama-cpp-python 0.3.36"
    assert features == ("SSE3", "AVX", "AVX2", "F16C", "FMA", "OPENMP")


# -- what doctor shows ---------------------------------------------------------------------------------------------


def test_doctor_shows_the_choice_with_the_timings_per_option_when_and_on_which_cpu(source, tmp_path):
    choice = choose(source, tmp_path / "cache", FakeLlamaCpp({"q4_1": 0.002, "f16": 0.001}))
    check = check_local_weights(choice)
    assert check.ok and check.name == "local weights"
    assert check.detail.startswith("f16, the fastest, timed now")
    assert "q4_1 0.16 s, f16 0.08 s" in check.detail and "1970-01-01 00:00 UTC" in check.detail
    assert "Intel(R) Xeon(R) Processor (avx avx2 avx512f f16c fma)" in check.detail
    assert "llama-cpp-python 0.3.36" in check.detail
    assert "doctor --refresh" in check.hint
    forced = choose(source, tmp_path / "cache", FakeLlamaCpp({}), options=("q4_1",))
    assert check_local_weights(forced).detail == "q4_1, asked by $SELFRAG_WEIGHTS (not timed)"
    assert "unset SELFRAG_WEIGHTS" in check_local_weights(forced).hint


# -- served by local.py -------------------------------------------------------------------------------------------

SERVE = """
import json, sys, types
from pathlib import Path
from selfrag.llm.local import ServeSettings, serve
from tests.local.test_weights_choice import FakeLlamaCpp, kind_of

source, home, refused, remeasure = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1"
fake = FakeLlamaCpp({"q4_1": 0.001, "f16": 0.0001}, sleep=True)  # timed on the real clock: F16 10 times faster
apps = []

def create_app(server_settings, model_settings):
    kind = kind_of(model_settings[0].model)
    if kind == refused:
        raise ValueError(f"llama.cpp cannot load {model_settings[0].model}")
    apps.append(kind)
    return object()

runtime = types.SimpleNamespace(llama_cpp=fake, create_app=create_app, time_weights=None)
served = serve(ServeSettings(source, n_threads=1), {"SELFRAG_HOME": home}, runtime, remeasure=remeasure)
print(json.dumps({"timed": sorted(fake.loaded), "apps": apps, "file": str(served.model_file), "note": served.note,
                  "kind": served.weights.kind, "reason": served.weights.reason}))
"""


def test_the_embedded_server_serves_the_chosen_weights_and_falls_back_when_the_copy_will_not_load(source, tmp_path):
    """local.serve with a fake llama-cpp-python server module, each run in a fresh process (one model a process)."""
    pytest.importorskip("llama_cpp.server.settings")  # what serve() builds the app's settings with

    def run(refused: str = "", remeasure: bool = False) -> dict:
        argv = [sys.executable, "-c", SERVE, str(source), str(tmp_path / "home"), refused, str(int(remeasure))]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first = run()
    copy = f16_path(source, tmp_path / "home")
    assert first["timed"] == ["f16", "q4_1"] and first["apps"] == ["f16"] and first["file"] == str(copy)
    assert first["kind"] == "f16" and "timed now" in first["note"]
    later = run()
    assert later["timed"] == [] and later["apps"] == ["f16"] and "remembered in" in later["note"]
    refreshed = run(remeasure=True)
    assert refreshed["timed"] == ["f16", "q4_1"] and "timed now (doctor --refresh)" in refreshed["reason"]
    fallback = run(refused="f16")  # the recorded choice's copy no longer loads: removed, the shipped file served
    assert fallback["apps"] == ["q4_1"] and fallback["file"] == str(source) and fallback["kind"] == "q4_1"
    assert "did not load and was removed" in fallback["reason"] and not copy.exists()


# -- with the real model ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_doctor_refresh_times_the_real_weights_and_a_later_doctor_reuses_them(tmp_path, installed):
    """Each option timed by the real llama.cpp in a child process, so doctor answers even where one crashes it (the
    Q4_1 file on a CPU with AMX ended doctor with SIGSEGV when it was timed in doctor's own process)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SELFRAG_", "OPENAI_"))},
        "SELFRAG_HOME": str(tmp_path / "home"),
        "SELFRAG_THREADS": "1",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    lines = []
    for argv in (["doctor", "--refresh"], ["doctor"]):
        run = subprocess.run(
            [sys.executable, "-m", "selfrag", *argv], env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stdout + run.stderr
        [line] = [line for line in run.stdout.splitlines() if " local weights " in line]
        lines.append(line)
    assert "timed now (doctor --refresh)" in lines[0] and "q4_1 " in lines[0] and "f16 " in lines[0]
    assert "remembered in" in lines[1]
