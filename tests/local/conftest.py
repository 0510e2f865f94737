"""Fixtures for the embedded-model tests: the sample corpus indexed once, the embedded chat model built once.

The embedded model is served once per process (llama-cpp-python keeps one model in module globals), so
every test shares it; it serves the F16 copy (asked for: no timing of the weights, the same file on every
machine), which goes to a temporary SELFRAG_HOME, never the user's cache. Without
llama-cpp-python or the model package the real-model tests skip, except on CI (`CI` set), where they fail.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from selfrag.llm.local import INSTALL_MODEL, INSTALL_RUNTIME, MODEL_PACKAGE, embedded_chat
from selfrag.llm.openai_chat import OpenAIChatModel
from selfrag.retrieval.ingest import index_paths

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed ({INSTALL_RUNTIME})"
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        return f"the embedded model is not installed ({INSTALL_MODEL})"
    return None


@pytest.fixture(scope="session")
def local_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("selfrag-home")


@pytest.fixture(scope="session")
def corpus_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus-index") / "index"
    index_paths([CORPUS], out)
    return out


@pytest.fixture(scope="session")
def installed() -> None:
    """Skips the test without llama-cpp-python or the model package; fails it on CI (`CI` set)."""
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the embedded-model tests must run on CI: {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="session")
def embedded(local_home: Path, installed: None) -> OpenAIChatModel:
    """A chat model over the embedded app (each call builds a new client over the one shared app)."""
    return embedded_chat(environ={"SELFRAG_HOME": str(local_home), "SELFRAG_WEIGHTS": "f16"})  # untimed, as asserted


@pytest.fixture(autouse=True)
def _clean(clean_env: None) -> None:
    """Every test here runs in the clean environment (conftest.clean_env)."""
