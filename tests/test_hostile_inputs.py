"""What a hostile or unlucky user still found (issue 47): bytes that are not UTF-8, output paths that cannot be
written, FIFOs named like session files, settings of the wrong type, flags that would be ignored, a session
turn that could be lost. Each case ends in one line and the right exit code, never a traceback or a hang."""

from __future__ import annotations

import pytest

from selfrag.cli import main
from selfrag.errors import SettingTypeError
from selfrag.settings import load_config
from selfrag.testing.fake_server import FakeOpenAIServer

UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing listens: a test that gets past its check fails loudly


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFRAG_API_KEY", "SELFRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SELFRAG_HOME", str(tmp_path / "home"))


def one_line(err: str) -> str:
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


# --- settings are of their declared types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["max_depth = 2.5", "ndocs = 2.7", "beam_width = 2.5", "max_llm_calls = 1.5", "use_seqscore = 1",
     "max_depth = true", "threshold = true", "nonce_seed = 5"],
)  # fmt: skip
def test_a_config_file_value_of_the_wrong_type_is_a_usage_error_naming_the_setting_and_the_file(
    line, index_dir, tmp_path, capsys
):
    path = tmp_path / "c.toml"
    path.write_text(line + "\n")
    name = line.split(" =")[0]
    with pytest.raises(SettingTypeError, match=rf"^{name} must be of type \w+ .*config file {path}"):
        load_config({}, environ={}, config_file=str(path))
    assert main(["ask", "q?", "--index", str(index_dir), "--config", str(path), "--base-url", UNREACHABLE]) == 2
    err = one_line(capsys.readouterr().err)
    assert name in err and str(path) in err


@pytest.mark.parametrize(("name", "value"), [("NDOCS", "2.7"), ("MAX_LLM_CALLS", "1.5"), ("USE_SEQSCORE", "2")])
def test_an_environment_value_of_the_wrong_type_is_a_usage_error_naming_the_variable(
    name, value, index_dir, monkeypatch, capsys
):
    monkeypatch.setenv(f"SELFRAG_{name}", value)
    assert main(["ask", "q?", "--index", str(index_dir), "--base-url", UNREACHABLE]) == 2
    err = one_line(capsys.readouterr().err)
    assert name.lower() in err and f"$SELFRAG_{name}" in err


def test_whole_numbers_still_read_as_numbers_and_true_false_as_yes_no(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("threshold = 1\nmax_depth = 3\nuse_seqscore = true\n[endpoint]\nlogprobs = false\n")
    config = load_config({}, environ={}, config_file=str(path))
    assert (config.threshold, config.max_depth, config.use_seqscore, config.endpoint.logprobs) == (1, 3, True, "off")
