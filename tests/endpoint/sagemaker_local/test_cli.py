"""The commands as a person runs them: `voicedesk sagemaker-local` and `voicedesk say --engine websocket|sagemaker`,
each a real subprocess, against the real container on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from tests.support.net import free_port
from tests.support.stand_in import ENDPOINT, GUARD_S, REGION
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.commands import main

REPO = Path(__file__).resolve().parents[2]


def voicedesk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voicedesk.engine.commands", *args],
        cwd=REPO,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=GUARD_S,
    )


def wav_frames(path: Path) -> int:
    with wave.open(str(path)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (24_000, 1, 2)
        return reader.getnframes()


def test_say_through_the_websocket_engine(container: ServerThread, tmp_path: Path) -> None:
    out = tmp_path / "ws.wav"
    done = voicedesk("say", "--engine", "websocket", container.ws_url, "--out", str(out), "-q", "Hello over a socket.")
    assert done.returncode == 0, done.stderr
    assert wav_frames(out) > 0


def test_say_with_the_server_down_says_what_to_do(tmp_path: Path) -> None:
    done = voicedesk(
        "say", "--engine", "websocket", f"ws://127.0.0.1:{free_port()}", "--out", str(tmp_path / "x.wav"), "hi"
    )
    assert done.returncode == 2
    assert "Is `voicedesk serve` running there?" in done.stderr
    assert "Traceback" not in done.stderr


def test_print_env(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        main(
            ["sagemaker-local", "--print-env", "--port", "9443", "--state-dir", str(tmp_path), "--region", "eu-west-1"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert "export AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2=https://127.0.0.1:9443" in lines
    assert f"export AWS_CA_BUNDLE={tmp_path / 'ca.pem'}" in lines
    assert (tmp_path / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")


@pytest.mark.slow
def test_sagemaker_local_then_say_with_the_printed_environment(container: ServerThread, tmp_path: Path) -> None:
    port = free_port()
    stand_in = subprocess.Popen(
        [sys.executable, "-m", "voicedesk.engine.commands", "sagemaker-local", "--container", container.http_url,
         "--port", str(port),
         "--endpoint-name", ENDPOINT, "--state-dir", str(tmp_path / "state"), "--region", REGION],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal: a run started in the background (`.ci/run &`) has SIGINT ignored, which the
        # stand-in would inherit (CI left it running, SigIgn showing SIGINT); restore the default for it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        exports: dict[str, str] = {}
        assert stand_in.stdout is not None
        for line in stand_in.stdout:
            if line.strip().startswith("export "):
                name, _, value = line.strip().removeprefix("export ").partition("=")
                exports[name] = value
            if line.startswith("Ctrl+C"):
                break
        assert exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"] == f"https://127.0.0.1:{port}"
        env = {**os.environ, **exports}

        out = tmp_path / "sm.wav"
        done = voicedesk("say", "--engine", "sagemaker", ENDPOINT, "--out", str(out), "-q", "Hello, endpoint.", env=env)
        assert done.returncode == 0, done.stderr
        assert wav_frames(out) > 0

        whole_out = tmp_path / "whole.wav"
        whole = voicedesk(
            "say", "--engine", "sagemaker", ENDPOINT, "--whole", "--out", str(whole_out), "-q", "Hello, boto3.", env=env
        )
        assert whole.returncode == 0, whole.stderr
        assert wav_frames(whole_out) > 0

        wrong = voicedesk("say", "--engine", "sagemaker", "not-deployed", "--out", str(out), "Hi.", env=env)
        assert wrong.returncode == 2
        assert "There is no endpoint 'not-deployed'" in wrong.stderr
    finally:
        stand_in.send_signal(signal.SIGINT)
        # Read what it still writes while it stops: an unread pipe that fills up would block it on exit.
        _rest, errors = stand_in.communicate(timeout=GUARD_S)
    assert stand_in.returncode == 0, errors[-2000:]
