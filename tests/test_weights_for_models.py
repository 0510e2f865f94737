"""Weights that know their model: an endpoint's model is rated with the weights fitted for it (found in the data
folder, or named), a file fitted for another model is used with one warning line, never silently, a corrupt one is
refused naming it, and the embedded model keeps the shipped weights. Over a loopback server and the real CLI."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

import selfrag
from selfrag.cli import main
from selfrag.config import Config, EndpointConfig
from selfrag.engine.calibration import load_critic_model, parse_critic_model
from selfrag.engine.fitted import EMBEDDED, EMBEDDED_MODEL, FittedFor, find, place, scoring
from selfrag.errors import ConfigError
from selfrag.testing.fake_server import FakeOpenAIServer

SHIPPED = Path(selfrag.__file__).parent / "data" / "critic-v1.json"
QUESTION = "How many days do I have for refunds?"
pytestmark = pytest.mark.usefixtures("clean_env")  # conftest: no endpoint or key from the shell


def weights_for(path: Path, fitted: FittedFor | None) -> Path:
    """The shipped weights with a model block naming `fitted` (None: none, as in the shipped file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replace(load_critic_model(), fitted_for=fitted).to_json())
    return path


def home() -> dict[str, str]:
    return dict(os.environ)  # conftest: the data folder is the test's own ($XDG_CACHE_HOME/selfrag)


def ask(index_dir, server, capsys, *extra):  # type: ignore[no-untyped-def]
    argv = ["ask", QUESTION, "--index", str(index_dir), "--base-url", server.base_url, "--json", "--no-lead"]
    code = main([*argv, "--abstain-below", "0", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


def test_the_weights_calibrated_for_the_endpoints_model_are_found_and_named(index_dir, capsys):
    with FakeOpenAIServer() as server:
        path = weights_for(place(home(), server.base_url, None, "fake-model"),
                           FittedFor("fake-model", server.base_url))  # fmt: skip
        code, result, err = ask(index_dir, server, capsys)
    assert code == 0, err
    assert path.name.startswith("fake-model-") and path.parent.name == "weights"
    assert (
        f"scorer evidence (weights {path}, fitted for fake-model at {server.base_url})" in result["trace"]["policies"]
    )
    assert result["config"]["scorer"] == "evidence" and not result["trace"]["weights_warning"]
    assert "warning" not in err


def test_weights_are_keyed_by_the_endpoint_and_the_model_as_configured(tmp_path):
    env = {"SELFRAG_HOME": str(tmp_path)}
    url = "http://127.0.0.1:8000/v1"
    first = weights_for(place(env, url, None, "qwen"), FittedFor("qwen", url))
    named = weights_for(place(env, url, "qwen2.5:7b", "qwen2.5:7b"), FittedFor("qwen2.5:7b", url))
    assert find(env, url, None) == first and find(env, url, "qwen2.5:7b") == named
    assert named.name.startswith("qwen2.5-7b-")  # a slug people can read; the hash is what is matched
    assert find(env, "http://127.0.0.1:9000/v1", None) is None and find(env, url, "llama") is None
    assert find({}, url, None) is None  # an empty environment names no data folder: nothing is found
    picked = scoring(Config(endpoint=EndpointConfig(base_url=url)), env)
    assert (picked.scorer, picked.scorer_weights) == ("evidence", str(first))


def test_without_weights_for_the_model_the_endpoint_is_rated_by_its_labels_and_evidence_is_refused(index_dir, capsys):
    with FakeOpenAIServer() as server:
        code, result, _ = ask(index_dir, server, capsys)
        assert code == 0 and result["trace"]["policies"].startswith("preset default, scorer paper;")
        before = server.stats.requests
        assert ask(index_dir, server, capsys, "--scorer", "evidence")[0] == 2
        err = capsys.readouterr().err.strip() or ask(index_dir, server, capsys, "--scorer", "evidence")[2].strip()
        assert server.stats.requests == before  # refused before any call
    assert len(err.splitlines()) == 1 and "selfrag calibrate" in err and "--scorer-weights" in err


def test_weights_fitted_for_another_model_are_used_with_one_warning_line(index_dir, capsys, tmp_path):
    other = weights_for(tmp_path / "qwen.json", FittedFor("qwen2.5:7b", "http://gpu:8000/v1"))
    with FakeOpenAIServer() as server:
        code, result, err = ask(index_dir, server, capsys, "--scorer-weights", str(other))
        old_code, old, old_err = ask(index_dir, server, capsys, "--scorer-weights", str(SHIPPED))
    assert code == 0 and result["config"]["scorer"] == "evidence"  # used: the user named it
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith("selfrag: warning: the critic weights")
    assert "qwen2.5:7b at http://gpu:8000/v1" in warnings[0] and "not fake-model" in warnings[0]
    assert result["trace"]["weights_warning"] in warnings[0]
    # a file with no model block (the shipped one, older files) was fitted for the embedded model
    assert old_code == 0 and f"fitted for {EMBEDDED_MODEL} (the embedded model)" in old["trace"]["policies"]
    assert sum("warning" in line for line in old_err.splitlines()) == 1 and "not fake-model" in old_err


def test_weights_found_for_the_endpoint_warn_when_it_serves_another_model_now(index_dir, capsys):
    with FakeOpenAIServer(model="llama-3-8b") as server:  # calibrated while it served fake-model
        weights_for(place(home(), server.base_url, None, "fake-model"), FittedFor("fake-model", server.base_url))
        code, result, err = ask(index_dir, server, capsys)
    assert code == 0 and result["config"]["scorer"] == "evidence"
    assert "fitted for fake-model" in result["trace"]["weights_warning"] and "not llama-3-8b" in err


@pytest.mark.parametrize(
    ("block", "why"),
    [({"id": "m"}, "model must be"), ("qwen", "model must be"), ({"id": "", "endpoint": "x"}, "model must be")],
)
def test_a_corrupt_model_block_is_refused_naming_the_file(index_dir, capsys, tmp_path, block, why):
    body = json.loads(SHIPPED.read_text())
    named = tmp_path / "broken.json"
    named.write_text(json.dumps({**body, "model": block}))
    with FakeOpenAIServer() as server:
        assert main(["ask", QUESTION, "--index", str(index_dir), "--base-url", server.base_url,
                     "--scorer-weights", str(named)]) == 1  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(named) in err and why in err
        found = place(home(), server.base_url, None, "fake-model")  # found, not named: refused too
        found.parent.mkdir(parents=True)
        found.write_text(json.dumps({**body, "model": block}))
        assert main(["ask", QUESTION, "--index", str(index_dir), "--base-url", server.base_url]) == 1
        err = capsys.readouterr().err.strip()
        assert server.stats.requests == 0
    assert len(err.splitlines()) == 1 and str(found) in err


def test_the_embedded_model_keeps_the_shipped_weights(tmp_path):
    env = {"SELFRAG_HOME": str(tmp_path)}
    weights_for(place(env, "embedded", None, EMBEDDED_MODEL), FittedFor(EMBEDDED_MODEL, "embedded"))
    config = scoring(Config(), env)  # nothing configured: the embedded model
    assert (config.scorer, config.scorer_weights, config.embedded) == ("evidence", None, True)
    assert load_critic_model().made_for == EMBEDDED


def test_the_embedded_models_name_is_the_one_its_server_lists():
    from selfrag.llm.local import MODEL_ALIAS

    assert EMBEDDED_MODEL == MODEL_ALIAS


def test_the_model_block_round_trips_and_old_files_read_as_before():
    fitted = FittedFor("qwen2.5:7b", "http://127.0.0.1:8000/v1", "a1b2c3")
    model = replace(load_critic_model(), fitted_for=fitted)
    assert parse_critic_model(model.to_json(), "w").fitted_for == fitted
    assert json.loads(model.to_json())["model"] == {
        "id": "qwen2.5:7b",
        "endpoint": fitted.endpoint,
        "identity": "a1b2c3",
    }
    assert load_critic_model().to_json() == SHIPPED.read_text()  # no block written where there was none
    with pytest.raises(ConfigError, match="critic weights w.json: model must be"):
        parse_critic_model(json.dumps({**json.loads(SHIPPED.read_text()), "model": []}), "critic weights w.json")


def test_doctor_names_the_weights_and_their_model_and_warns_for_another(capsys, tmp_path):
    config = tmp_path / "config.toml"
    with FakeOpenAIServer() as server:
        own = weights_for(place(home(), server.base_url, None, "fake-model"),
                          FittedFor("fake-model", server.base_url))  # fmt: skip
        assert main(["doctor", "--base-url", server.base_url, "--timeout", "5"]) == 0
        lines = capsys.readouterr().out.splitlines()
        policies = next(line for line in lines if " policies " in line)
        assert f"weights {own}, fitted for fake-model at {server.base_url}" in policies
        assert not any(" weights " in line and line.startswith("warn") for line in lines)
        other = weights_for(tmp_path / "other.json", FittedFor("qwen2.5:7b", "http://gpu:8000/v1"))
        config.write_text(f'scorer_weights = "{other}"\n')
        assert main(["doctor", "--base-url", server.base_url, "--timeout", "5", "--config", str(config)]) == 0
        lines = capsys.readouterr().out.splitlines()
    warned = [line for line in lines if line.startswith("warn weights")]
    assert len(warned) == 1 and "fitted for qwen2.5:7b" in warned[0] and "not fake-model" in warned[0]
