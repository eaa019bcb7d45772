"""``voicedesk serve``'s options and what it says before it serves: the token's sources, the TLS pair's checks,
limit flags, and the warnings about what is left open (none behind SageMaker). Pure, plus two quick subprocesses
that fail before any model loads."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from voicedesk.endpoint.deploy.plan import DeploySettings, plan_deploy
from voicedesk.endpoint.hosting import PLATFORM_ENV, is_loopback, sagemaker_marker
from voicedesk.endpoint.serve_cli import exposure_warnings
from voicedesk.endpoint.serve_options import (
    TOKEN_ENV,
    add_serve_arguments,
    check_tls,
    choose_token,
    duration_s,
    settings_from_args,
)
from voicedesk.endpoint.settings import ServerSettings
from voicedesk.engine.errors import UsageError
from voicedesk.engine.limits import ConnectionLimits

REPO = Path(__file__).resolve().parents[2]


def _args(*argv: str, host: str = "127.0.0.1") -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser, host=host, port=8080)
    return parser.parse_args(list(argv))


def _token_file(tmp_path: Path, content: bytes, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_bytes(content)
    path.chmod(mode)
    return path


# ---- the token ------------------------------------------------------------------------------------


def test_token_file_is_read_stripped_and_preferred_over_the_environment(tmp_path):
    path = _token_file(tmp_path, "  lab-tökén-✓\n".encode())
    choice = choose_token(_args("--token-file", str(path)), {TOKEN_ENV: "from-env"})
    assert choice.token == "lab-tökén-✓"
    assert choice.origin == f"--token-file {path}"
    assert choice.warnings == ()


def test_a_token_file_others_can_read_is_used_with_a_warning(tmp_path):
    path = _token_file(tmp_path, b"secret", mode=0o644)
    choice = choose_token(_args("--token-file", str(path)), {})
    assert choice.token == "secret"
    assert "chmod 600" in choice.warnings[0]


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "does not exist"), (b"", "is empty"), (b" \n", "is empty"), (b"\xff\xfe", "not UTF-8")],
)
def test_a_bad_token_file_is_a_clear_error(tmp_path, content, problem):
    path = tmp_path / "token" if content is None else _token_file(tmp_path, content)
    with pytest.raises(UsageError, match=problem):
        choose_token(_args("--token-file", str(path)), {})


def test_a_token_file_that_is_a_directory_is_a_clear_error(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):
        choose_token(_args("--token-file", str(tmp_path)), {})


def test_token_on_the_command_line_works_but_warns_about_the_process_list():
    choice = choose_token(_args("--token", "visible"), {TOKEN_ENV: "from-env"})
    assert choice.token == "visible"
    assert "process list" in choice.warnings[0] and "--token-file" in choice.warnings[0]


def test_the_environment_gives_the_token_without_a_warning():
    choice = choose_token(_args(), {TOKEN_ENV: "from-env"})
    assert (choice.token, choice.origin, choice.warnings) == ("from-env", f"${TOKEN_ENV}", ())
    assert choose_token(_args(), {}).token is None


@pytest.mark.parametrize("token", ["two words", "tab\there", "bell\x07"])
def test_a_token_that_cannot_travel_in_a_header_is_refused(token):
    with pytest.raises(UsageError, match="cannot be sent"):
        choose_token(_args("--token", token), {})


def test_token_and_token_file_together_is_an_error(tmp_path):
    path = _token_file(tmp_path, b"secret")
    with pytest.raises(UsageError, match="not both"):
        choose_token(_args("--token", "x", "--token-file", str(path)), {})


# ---- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    other = ca.issue_cert("elsewhere.example")
    files = {
        "cert": folder / "cert.pem",
        "key": folder / "key.pem",
        "other_key": folder / "other-key.pem",
        "encrypted_key": folder / "encrypted-key.pem",
        "junk": folder / "junk.pem",
    }
    cert.cert_chain_pems[0].write_to_path(str(files["cert"]))
    cert.private_key_pem.write_to_path(str(files["key"]))
    other.private_key_pem.write_to_path(str(files["other_key"]))
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    files["encrypted_key"].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    files["junk"].write_text("not a certificate\n")
    return files


def test_a_matching_pair_passes(tls_files):
    check_tls(str(tls_files["cert"]), str(tls_files["key"]))
    check_tls(None, None)


@pytest.mark.parametrize(
    ("cert", "key", "problem"),
    [
        ("cert", None, "needs both"),
        (None, "key", "needs both"),
        ("missing", "key", "no such file"),
        ("cert", "folder", "is a directory"),
        ("cert", "other_key", "cannot be used together"),
        ("cert", "encrypted_key", "cannot be used together"),
        ("junk", "key", "cannot be used together"),
    ],
)
def test_a_bad_tls_pair_is_a_clear_error(tls_files, cert, key, problem):
    def path(name: str | None) -> str | None:
        if name is None:
            return None
        if name == "missing":
            return str(tls_files["cert"].parent / "missing.pem")
        if name == "folder":
            return str(tls_files["cert"].parent)
        return str(tls_files[name])

    with pytest.raises(UsageError, match=problem):
        check_tls(path(cert), path(key))


def test_an_unreadable_key_is_a_clear_error(tls_files, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    key = tmp_path / "key.pem"
    key.write_bytes(tls_files["key"].read_bytes())
    key.chmod(0)
    with pytest.raises(UsageError, match="cannot be read"):
        check_tls(str(tls_files["cert"]), str(key))


# ---- limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("20m", 1200), ("1.5h", 5400), ("2 min", 120)])
def test_durations_take_units(text, seconds):
    assert duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5m", "soon", "5d"])
def test_a_bad_duration_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        duration_s(text)


def test_limit_flags_reach_the_settings():
    settings, _ = settings_from_args(
        _args(
            "--max-sessions-per-client", "3",
            "--max-connections", "100",
            "--max-connections-per-client", "10",
            "--send-timeout", "7",
            "--header-timeout", "2.5",
            "--max-request-age", "0",
            "--max-queue-depth", "0",
            "--max-request-audio", "5m",
            "--max-session-audio", "2h",
            "--max-frame-rate", "50",
        ),
        {},
    )  # fmt: skip
    assert settings.max_sessions_per_client == 3
    assert (settings.max_connections, settings.max_connections_per_client) == (100, 10)
    assert (settings.send_timeout_s, settings.header_timeout_s) == (7, 2.5)
    assert settings.max_request_age_s is None and settings.max_queue_depth is None
    assert (settings.limits.max_request_audio_s, settings.limits.max_session_audio_s) == (300, 7200)
    assert (settings.connection.frames_per_s, settings.connection.frame_burst) == (50, 200)


def test_the_server_settings_hold_the_connection_limits_once():
    """The connection's limits are written in ``ConnectionLimits`` only; the server settings embed them."""
    repeated = {f.name for f in dataclasses.fields(ServerSettings)} & {
        f.name for f in dataclasses.fields(ConnectionLimits)
    }
    assert repeated == set()
    assert ServerSettings().connection == ConnectionLimits()
    options = settings_from_args(_args("--idle-timeout", "42"), {})[0].connection
    assert options == dataclasses.replace(ConnectionLimits(), idle_timeout_s=42)


def test_behind_sagemaker_the_per_client_caps_are_off_unless_asked_for():
    default, _ = settings_from_args(_args(), {})
    assert default.max_sessions_per_client == 4 and default.max_connections_per_client == 32
    behind, _ = settings_from_args(_args(host="0.0.0.0"), {}, behind_sagemaker=True)
    assert behind.max_sessions_per_client is None and behind.max_connections_per_client is None
    asked, _ = settings_from_args(_args("--max-sessions-per-client", "4"), {}, behind_sagemaker=True)
    assert asked.max_sessions_per_client == 4


def test_admission_is_by_expected_wait_with_the_count_an_optional_backstop():
    default, _ = settings_from_args(_args(), {})
    assert default.first_audio_target_s == 2.0 and default.max_queue_depth is None
    tight, _ = settings_from_args(_args("--first-audio-target-ms", "300", "--max-queue-depth", "40"), {})
    assert tight.first_audio_target_s == 0.3 and tight.max_queue_depth == 40
    off, _ = settings_from_args(_args("--first-audio-target-ms", "0"), {})
    assert off.first_audio_target_s is None


def test_batching_is_auto_unless_asked_for():
    assert settings_from_args(_args(), {})[0].batch == "auto"
    assert settings_from_args(_args("--batch", "off"), {})[0].batch == "off"


@pytest.mark.parametrize(
    "argv",
    [
        ("--first-audio-target-ms", "-1"),
        ("--max-sessions", "0"),
        ("--header-timeout", "0"),
        ("--max-sessions-per-client", "-1"),
        ("--max-connections", "0"),
    ],
)
def test_bad_limits_are_refused(argv):
    with pytest.raises(UsageError):
        settings_from_args(_args(*argv), {})


# ---- what is left open ----------------------------------------------------------------------------


def test_sagemaker_is_recognised_by_the_marker_deploy_sets_or_its_own_variables():
    assert sagemaker_marker({PLATFORM_ENV: "sagemaker"}) == PLATFORM_ENV
    assert sagemaker_marker({"SM_CURRENT_HOST": "algo-1"}) == "SM_CURRENT_HOST"
    assert sagemaker_marker({"SAGEMAKER_BIND_TO_PORT": "8080"}) == "SAGEMAKER_BIND_TO_PORT"
    assert sagemaker_marker({"HOME": "/root", "PATH": "/bin", PLATFORM_ENV: "laptop"}) is None


def test_voicedesk_deploy_marks_the_container_as_behind_sagemaker():
    settings = DeploySettings(endpoint_name="speech", image_uri="1.dkr.ecr.x/voicedesk:1", role_arn="arn:role")
    calls = plan_deploy(settings, None, "20260101")
    model = next(call for call in calls if call.operation == "create_model")
    environment = model.params["PrimaryContainer"]["Environment"]
    assert environment[PLATFORM_ENV] == "sagemaker"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        *[("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("voice.localhost", True)],
        *[("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("box.example", False), (None, False)],
    ],
)
def test_loopback_means_only_this_machine(host, loopback):
    assert is_loopback(host) is loopback


def test_beyond_loopback_without_a_token_warns_and_with_a_token_asks_for_tls(tls_files):
    settings, token = settings_from_args(_args(host="0.0.0.0"), {})
    (warning,) = exposure_warnings(settings, token, None)
    assert "without a token" in warning and "--token-file" in warning
    settings, token = settings_from_args(_args(host="0.0.0.0"), {TOKEN_ENV: "t"})
    (warning,) = exposure_warnings(settings, token, None)
    assert "without TLS" in warning and "--tls-cert" in warning
    tls = ("--tls-cert", str(tls_files["cert"]), "--tls-key", str(tls_files["key"]))
    settings, token = settings_from_args(_args(*tls, host="0.0.0.0"), {TOKEN_ENV: "t"})
    assert exposure_warnings(settings, token, None) == []


def test_no_exposure_warning_on_loopback_or_behind_sagemaker():
    settings, token = settings_from_args(_args(), {})
    assert exposure_warnings(settings, token, None) == []
    settings, token = settings_from_args(_args(host="0.0.0.0"), {}, behind_sagemaker=True)
    assert exposure_warnings(settings, token, PLATFORM_ENV) == []


def _serve(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "voicedesk.engine.commands", "serve", *argv],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_serve_refuses_a_missing_token_file_and_a_half_tls_pair_before_loading_anything(tmp_path):
    missing = _serve("--token-file", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    half = _serve("--tls-cert", str(tmp_path / "cert.pem"))
    assert half.returncode == 2
    assert "needs both --tls-cert and --tls-key" in half.stderr


def test_container_serve_says_what_is_wrong_with_its_options(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "voicedesk.endpoint.serve_cli", "--token-file", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "serve: The token file" in result.stderr and "is a directory" in result.stderr


def test_prepare_workers_take_a_count_or_auto(capsys):
    assert settings_from_args(_args(), {})[0].prepare_workers == "auto"
    assert settings_from_args(_args("--prepare-workers", "3"), {})[0].prepare_workers == 3
    assert settings_from_args(_args("--prepare-workers", "0"), {})[0].prepare_workers == 0
    for bad in ("-1", "many"):
        with pytest.raises(SystemExit):
            _args("--prepare-workers", bad)
        assert "--prepare-workers: takes a number of processes" in capsys.readouterr().err
