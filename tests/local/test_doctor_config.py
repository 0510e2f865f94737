"""`selfrag doctor` and `selfrag config` through `selfrag.cli.main`, over a loopback server or the embedded
model. Keys never appear in their output."""

from __future__ import annotations

import json
import socket

import pytest

from selfrag import Config, EndpointConfig
from selfrag.api import default_chat
from selfrag.cli import main
from selfrag.cli.diagnose import check_endpoint
from selfrag.config import config_dict
from selfrag.errors import ConfigError
from selfrag.llm.local import embedded_chat

CANARY = "sk-canary-123"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _lines(text: str) -> dict[str, str]:
    """doctor's output as {check name: whole line}."""
    return {line.split()[1]: line for line in text.splitlines() if line.strip()}


# -- doctor -------------------------------------------------------------------------------------------


def test_doctor_passes_every_check_against_a_reachable_endpoint(corpus_index, server, capsys, monkeypatch):
    monkeypatch.setenv("SELFRAG_API_KEY", CANARY)
    code = main(["doctor", "--index", str(corpus_index), "--base-url", server.base_url])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = _lines(out)
    assert list(lines) == [
        "index",
        "files",  # the indexed files are as they were indexed
        "versions",
        "supersedes",  # one line per supersession: the sample corpus's two revised policies
        "config",
        "policies",
        "endpoint",
        "reachable",
        "remembered",
        "model",
        "capabilities",
        "costs",
        "parallel",
        "call",
    ]
    assert all(line.startswith("ok ") for line in lines.values()), out
    policies = "preset default, scorer paper; policies in force: supersession, filters, ask_plainly, disowned, lead"
    assert policies + ", decide" in lines["policies"]
    assert "33 chunks from 33 documents" in lines["index"] and "selfrag-index" in lines["index"]
    assert server.base_url in lines["endpoint"] and "key from SELFRAG_API_KEY" in lines["endpoint"]
    assert "fake-model" in lines["model"]
    assert "structured output json_schema" in lines["capabilities"]
    assert "logprobs not used (the endpoint gives no logprobs)" in lines["costs"]
    assert "no limit: not measured" in lines["parallel"]  # a fast server: no queue can reach the timeout
    assert " s (" in lines["call"]
    assert "probed 20" in lines["remembered"] and "nothing remembered" in lines["remembered"]
    assert CANARY not in out
    assert all(auth == f"Bearer {CANARY}" for auth in server.stats.authorizations)  # sent, never printed


def test_doctor_fails_with_hints_on_a_missing_index_and_an_unreachable_endpoint(tmp_path, capsys):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code = main(["doctor", "--index", str(tmp_path / "nowhere"), "--base-url", url, "--timeout", "5"])
    captured = capsys.readouterr()
    assert code == 1
    lines = _lines(captured.out)
    assert lines["index"].startswith("FAIL") and "selfrag index" in lines["index"]
    assert lines["config"].startswith("ok ") and lines["endpoint"].startswith("ok ")
    assert lines["reachable"].startswith("FAIL") and "hint: is the server" in lines["reachable"]
    assert "model" not in lines  # the chain stops at the first failure
    assert "2 check(s) failed: index, reachable" in captured.err


def test_doctor_reports_an_invalid_configuration_as_a_failed_check(capsys):
    code = main(["doctor", "--base-url", "http://user:secret@127.0.0.1:9/v1"])
    captured = capsys.readouterr()
    assert code == 1
    assert _lines(captured.out)["config"].startswith("FAIL")
    assert "secret" not in captured.out + captured.err


@pytest.mark.slow
async def test_doctor_checks_of_the_embedded_model(embedded, local_home):
    def make_chat(endpoint, environ):
        return embedded_chat(endpoint, {"SELFRAG_HOME": str(local_home)})

    checks = {c.name: c for c in await check_endpoint(Config(), {}, make_chat)}
    assert all(check.ok for check in checks.values()), checks
    assert "embedded local model" in checks["endpoint"].detail
    assert "F16 copy" in checks["local model"].detail
    assert checks["model"].detail.startswith("SmolLM2-135M-Instruct")
    assert "structured output json_object_schema, logprobs no, n no" in checks["capabilities"].detail


@pytest.mark.slow
def test_doctor_with_nothing_configured_uses_the_embedded_model(embedded, local_home, capsys, monkeypatch):
    monkeypatch.setenv("SELFRAG_HOME", str(local_home))
    try:
        default_chat(EndpointConfig(), {"SELFRAG_HOME": str(local_home)})
    except ConfigError as error:
        pytest.skip(f"api.default_chat does not fall back to the embedded model yet: {error}")
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "json_object_schema" in _lines(out)["capabilities"]


# -- config -------------------------------------------------------------------------------------------


def test_config_show_resolves_the_file_and_environment_and_never_prints_the_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SELFRAG_API_KEY", CANARY)
    monkeypatch.setenv("SELFRAG_BEAM_WIDTH", "3")
    config_file = tmp_path / "selfrag.toml"
    config_file.write_text('ndocs = 4\n[endpoint]\nbase_url = "http://llm.local:8000/v1"\n')
    assert main(["config", "show", "--config", str(config_file)]) == 0
    toml_out = capsys.readouterr().out
    assert main(["config", "show", "--config", str(config_file), "--json"]) == 0
    json_out = capsys.readouterr().out
    for out in (toml_out, json_out):
        assert CANARY not in out
    assert "beam_width = 3" in toml_out and "ndocs = 4" in toml_out
    assert 'base_url = "http://llm.local:8000/v1"' in toml_out
    assert "key from SELFRAG_API_KEY" in toml_out
    data = json.loads(json_out)
    assert data["config_file"] == str(config_file)
    assert data["settings"]["beam_width"] == 3
    assert data["resolved"]["endpoint"]["key_source"] == "SELFRAG_API_KEY"


def test_secrets_set_in_code_are_masked():
    config = Config(endpoint=EndpointConfig(api_key="sk-canary-456"), nonce_seed="seed-secret")
    shown = config_dict(config, public=True)
    assert shown["endpoint"]["api_key"] == "***" and shown["nonce_seed"] == "***"
    assert "canary" not in json.dumps(shown) and "seed-secret" not in json.dumps(shown)


def test_config_path_follows_the_lookup_order(tmp_path, capsys, monkeypatch):
    assert main(["config", "path"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(tmp_path / "config" / "selfrag" / "config.toml")  # $XDG_CONFIG_HOME
    assert "not found" in captured.err
    monkeypatch.setenv("SELFRAG_CONFIG", str(tmp_path / "env.toml"))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "env.toml")
    assert main(["config", "path", "--config", str(tmp_path / "flag.toml")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "flag.toml")
