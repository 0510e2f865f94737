"""Configuration: every knob is reachable, precedence is flag > SELFRAG_* environment > TOML file > default."""

from __future__ import annotations

from dataclasses import fields

import pytest

from selfrag.cli import build_parser
from selfrag.config import Config, EndpointConfig, resolve_scorer
from selfrag.errors import ConfigError, UsageError
from selfrag.settings import load_config

FILE_AND_ENV_ONLY = {"reasks", "max_chunk_chars", "max_total_tokens", "nonce_seed", "variant_count"}  # by choice
INDEX_ONLY = {"supersede_from"}  # read when an index is built: a flag of `selfrag index`, not of `ask`
ENDPOINT_FILE_AND_ENV_ONLY = {"api_key", "max_retries", "top_logprobs", "breaker_threshold", "breaker_cooldown"}


def ask_flags() -> set[str]:
    parser = build_parser()
    ask = parser._subparsers._group_actions[0].choices["ask"]  # noqa: SLF001 - argparse has no public walk
    return {action.dest for action in ask._actions}


def test_every_knob_has_a_flag_or_is_documented_as_file_and_env_only():
    flags = ask_flags()
    knobs = {f.name for f in fields(Config)} - {"endpoint", "critic_endpoint", "embedded"}  # embedded: found out
    assert knobs - flags == FILE_AND_ENV_ONLY | INDEX_ONLY
    endpoint = {f.name for f in fields(EndpointConfig)}
    assert endpoint - flags == ENDPOINT_FILE_AND_ENV_ONLY


def test_every_knob_reaches_the_config_from_the_file_and_the_environment(tmp_path):
    values = {
        "mode": "always",
        "threshold": 0.4,
        "beam_width": 3,
        "max_depth": 5,
        "ndocs": 4,
        "w_rel": 0.7,
        "w_sup": 0.9,
        "w_use": 0.1,
        "use_seqscore": True,
        "critic": "separate",
        "gate_irrelevant": True,
        "gate_unsupported": True,
        "reasks": 2,
        "max_chunk_chars": 900,
        "max_llm_calls": 50,
        "max_total_tokens": 9000,
        "deadline": 30.0,
        "nonce_seed": "s",
        "strategy": "window",
        "fusion": "rrf",
        "rerank": True,
        "freshness": 0.05,
        "supersession": False,
        "supersede_from": "policies",
        "query_variants": "multi,hyde",
        "variant_count": 2,
        "dense": "off",
        "embedding_model": "text-embedding-3-small",
        "scorer": "paper",
        "scorer_weights": "weights.json",
        "abstain_below": 0.3,
        "lead": False,
        "lead_ahead": False,
        "decide": False,
        "confirm": False,
        "denials": False,
        "check": False,
        "filters": True,
        "preset": "paper",
        "pooled": True,
        "hops": False,
        "ground": False,
        "extract": False,
        "ask_plainly": False,
        "disowned": False,
        "short_replies": True,
    }
    assert set(values) == {f.name for f in fields(Config)} - {"endpoint", "critic_endpoint", "embedded"}
    toml = "\n".join(
        f"{k} = {str(v).lower() if isinstance(v, bool) else repr(v).replace(chr(39), chr(34))}"
        for k, v in values.items()
    )
    path = tmp_path / "config.toml"
    path.write_text(toml + '\n[endpoint]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n')
    from_file = load_config({}, environ={}, config_file=str(path))
    env = {f"SELFRAG_{k.upper()}": str(v) for k, v in values.items()}
    from_env = load_config({}, environ=env)
    for name, value in values.items():
        assert getattr(from_file, name) == value, name
        assert getattr(from_env, name) == value, name
    assert from_file.endpoint.model == "m"


def test_flag_beats_environment_beats_file_beats_default(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("beam_width = 2\nndocs = 3\nmax_depth = 4\n")
    env = {"SELFRAG_BEAM_WIDTH": "5", "SELFRAG_NDOCS": "6"}
    config = load_config({"beam_width": 8, "ndocs": None}, environ=env, config_file=str(path))
    assert (config.beam_width, config.ndocs, config.max_depth, config.threshold) == (8, 6, 4, 0.2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("beam_widht = 2\n", "unknown setting"),
        ("[endpoint]\nkey = 'x'\n", r"unknown \[endpoint\] setting"),
        ("beam_width = ", "not valid TOML"),
        ("mode = 'sometimes'\n", "mode must be one of"),
    ],
)
def test_bad_config_files_are_refused_with_the_reason(tmp_path, text, message):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config({}, environ={}, config_file=str(path))


def test_bad_environment_values_are_refused():
    with pytest.raises(ConfigError, match="beam_width must be of type int"):
        load_config({}, environ={"SELFRAG_BEAM_WIDTH": "two"})
    with pytest.raises(ConfigError, match="use_seqscore"):
        load_config({}, environ={"SELFRAG_USE_SEQSCORE": "maybe"})


def test_critic_endpoint_inherits_the_main_endpoint_settings():
    config = load_config({"base_url": "http://127.0.0.1:8000/v1", "critic_model": "judge"}, environ={})
    assert config.critic_endpoint == EndpointConfig(base_url="http://127.0.0.1:8000/v1", model="judge")


def test_a_callers_defaults_are_a_layer_below_the_file_and_environment(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("ndocs = 4\n")
    defaults = {"max_depth": 3, "ndocs": 5, "deadline": 900.0}
    config = load_config(
        {"deadline": 60.0}, environ={"SELFRAG_MAX_DEPTH": "6"}, config_file=str(path), defaults=defaults
    )
    assert (config.max_depth, config.ndocs, config.deadline) == (6, 4, 60.0)  # environment, file, flag
    assert load_config({}, environ={}, defaults=defaults).max_depth == 3  # nothing else set: the caller's default


def test_a_flag_out_of_range_is_a_usage_error_and_a_variable_a_config_error():
    with pytest.raises(UsageError, match="beam_width must be"):
        load_config({"beam_width": 0}, environ={})
    with pytest.raises(ConfigError, match="beam_width must be") as caught:
        load_config({}, environ={"SELFRAG_BEAM_WIDTH": "0"})
    assert not isinstance(caught.value, UsageError)


def test_the_logprobs_knob_reaches_the_endpoint_from_flag_environment_and_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[endpoint]\nlogprobs = "off"\n')
    assert load_config({}, environ={}, config_file=str(path)).endpoint.logprobs == "off"
    assert load_config({}, environ={"SELFRAG_LOGPROBS": "on"}, config_file=str(path)).endpoint.logprobs == "on"
    assert load_config({"logprobs": "auto"}, environ={"SELFRAG_LOGPROBS": "on"}).endpoint.logprobs == "auto"
    path.write_text("[endpoint]\nlogprobs = false\n")  # a TOML boolean reads as on / off
    assert load_config({}, environ={}, config_file=str(path)).endpoint.logprobs == "off"
    assert load_config({}, environ={}).endpoint.logprobs == "auto"
    with pytest.raises(ConfigError, match="logprobs must be one of auto, on, off"):
        load_config({}, environ={"SELFRAG_LOGPROBS": "sometimes"})


def test_private_hosts_are_told_from_hosted_apis():
    from selfrag.config import is_private_host

    private = ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://192.168.1.20:8000/v1"]
    private += ["http://10.0.0.5/v1", "http://gpu-box:8080/v1", "http://llm.lan/v1", "http://[::1]:8080/v1"]
    for url in private:
        assert is_private_host(url), url
    for url in ("https://api.openai.com/v1", "https://openrouter.ai/api/v1", "http://8.8.8.8/v1", None):
        assert not is_private_host(url), url


def test_the_auto_scorer_is_the_fitted_one_on_the_embedded_model_and_the_papers_on_an_endpoint(engine):
    assert Config().scorer == "auto"
    assert resolve_scorer(Config(), embedded=True).scorer == "evidence"  # fitted and measured on that model
    assert resolve_scorer(Config(), embedded=False).scorer == "paper"
    assert resolve_scorer(Config(scorer="paper"), embedded=True).scorer == "paper"  # a choice is kept
    given = engine({"retrieve_decide": {"retrieve": "no", "query": ""}}, scorer="auto")  # a model at hand
    assert given.config.scorer == "paper"
    with pytest.raises(ConfigError, match="scorer"):
        Config(scorer="oracle")


def test_no_decide_turns_deciding_off_and_keeps_the_short_answer(capsys):
    from selfrag.cli.common import engine_flags

    args = build_parser().parse_args(["ask", "q", "--index", "i", "--no-decide"])
    config = load_config(engine_flags(args), environ={})
    assert config.decide is False and config.lead is True
    assert load_config({}, environ={"SELFRAG_DECIDE": "0"}).decide is False
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ask", "--help"])
    assert "--no-decide" in capsys.readouterr().out
