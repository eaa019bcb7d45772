"""The real entry points as subprocesses: the container's ``packaging/serve`` (SIGTERM winds sessions down)
and ``voicedesk serve`` (loopback by default, token from the environment)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.support.endpoint import receive_all, receive_until_audio
from voicedesk.engine.protocol import BIDI_PATH, SynthesizeRequest, encode_command

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
START_GUARD_S = 240.0
"""Loading the model in a fresh process takes seconds to a minute on a busy 2-core machine."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(hf_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "VOICEDESK_TOKEN")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        HF_HOME=str(hf_home),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def _wait_until_ready(process: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + START_GUARD_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{process.stdout.read()}")
        try:
            if httpx.get(url + "/ping", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not answer /ping with 200 in time")


def _stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        process.kill()
    return process.communicate(timeout=30)[0]


@pytest.mark.slow
def test_container_serve_uses_model_data_and_finishes_the_current_sentence_on_sigterm(hf_home, tmp_path):
    port = _free_port()
    # The model comes from "SageMaker model data" (an HF_HOME layout); the image's own cache is empty.
    env = _env(hf_home, SAGEMAKER_BIND_TO_PORT=str(port), VOICEDESK_MODEL_DIR=str(hf_home))
    env["HF_HOME"] = str(tmp_path / "empty-image-cache")
    process = subprocess.Popen(
        [str(REPO / "packaging" / "serve"), "--device", "cpu", "--shutdown-grace", "20"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_ready(process, url)
        # Six sentences for the chunker (the first needs 3 words, the others 20 characters).
        text = (
            "We go now. The cat sat on a mat. The dog ran off fast. The bird flew up high. The fox hid in a box. "
            + ("The end is near us now.")
        )

        async def talk_then_terminate():
            async with connect(f"ws://127.0.0.1:{port}{BIDI_PATH}") as ws:
                await ws.send(encode_command(SynthesizeRequest(text, request_id="bye")))
                before = await receive_until_audio(ws)
                process.send_signal(signal.SIGTERM)
                after = await receive_all(ws)
                return before, after, ws.close_code

        before, after, close_code = asyncio.run(talk_then_terminate())
        process.wait(timeout=40)
    finally:
        output = _stop(process)
    assert close_code == 1001, output
    assert after.messages[-1] == {"type": "closed", "reason": "server shutting down"}
    assert not before.of_type("error") and not after.of_type("error"), output
    starts = [m["seq"] for m in before.of_type("sentence_start") + after.of_type("sentence_start")]
    ends = [m["seq"] for m in before.of_type("sentence_end") + after.of_type("sentence_end")]
    # The sentence being spoken when SIGTERM came was finished, with its audio...
    assert len(ends) >= 2 and len(after.audio) > 0
    # ...the rest was dropped, and said so, instead of keeping the server up for all of it.
    assert len(ends) < 6
    unfinished = set(starts) - set(ends)
    if unfinished:
        assert after.of_type("cancelled")[0]["last_seq"] >= max(unfinished)
    assert process.returncode in (0, -signal.SIGTERM), output
    assert "Traceback" not in output


@pytest.mark.slow
def test_voicedesk_serve_binds_loopback_and_reads_the_token_from_the_environment(hf_home, tmp_path):
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "voicedesk.engine.commands", "serve", "--port", str(port), "--device", "cpu"],
        cwd=REPO,
        # Nothing is spoken: no NeMo grammars to load (a few seconds of CPU; the basic reader is said in a warning).
        env=_env(hf_home, VOICEDESK_TOKEN="lab-token", VOICEDESK_TEXT_GRAMMARS=str(tmp_path / "none")),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_ready(process, url)
        assert httpx.get(url + "/v1/audio/voices", timeout=10).status_code == 401
        voices = httpx.get(url + "/v1/audio/voices", headers={"Authorization": "Bearer lab-token"}, timeout=10)
        assert voices.status_code == 200 and "af_heart" in voices.json()["voices"]
        # Bound to 127.0.0.1 only: another loopback address on the same port is not served.
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.2:{port}/ping", timeout=5)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=40)
    finally:
        output = _stop(process)
    assert "listening on http://127.0.0.1" in output
    assert "Traceback" not in output


def test_voicedesk_serve_without_weights_says_how_to_get_them(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "voicedesk.engine.commands", "serve", "--port", str(_free_port())],
        cwd=REPO,
        env=_env(tmp_path / "empty-hf-home"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "voicedesk models" in result.stderr
    assert "Traceback" not in result.stderr
