"""The Wyoming STT client against Home Assistant's own Whisper server (``wyoming-faster-whisper``, run unchanged on
127.0.0.1, serving the same tiny.en model as the local engine), and against no server at all."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.app.voice.conftest import fail_or_skip, read_16k, words
from tests.support.net import free_port
from voicedesk.app.voice.stt import WyomingTranscriber
from voicedesk.engine.errors import ConnectionFailed

SERVER_VENV = Path(__file__).resolve().parents[3] / ".cache" / "wyoming-asr-venv"


@pytest.fixture(scope="module")
def wyoming_server(tiny_en: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = SERVER_VENV / "bin" / "python"
    if not python.exists():
        fail_or_skip("no Wyoming Whisper server: run `bash tests/support/install_wyoming_asr.sh .venv/bin/python`")
    port = free_port()
    args = ["--uri", f"tcp://127.0.0.1:{port}", "--model", str(tiny_en), "--language", "en", "--local-files-only"]
    args += ["--data-dir", str(tmp_path_factory.mktemp("wyoming")), "--beam-size", "1", "--compute-type", "int8"]
    server = subprocess.Popen(
        [str(python), "-m", "wyoming_faster_whisper", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Wyoming server did not start: {server.communicate()[0]!r}") from None
                time.sleep(0.2)
        yield f"tcp://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


async def test_a_wyoming_server_hears_what_the_local_model_hears(wyoming_server, speech, whisper):
    audio = read_16k(speech("turn off the kitchen lights"))
    remote = await WyomingTranscriber(wyoming_server).transcribe(audio, "en")
    local = await whisper.transcribe(audio, "en")
    assert words(remote) == words(local) == "turn off the kitchen lights"


async def test_no_wyoming_server_is_a_clear_error():
    with pytest.raises(ConnectionFailed, match=r"did not answer \(ConnectionRefusedError") as failed:
        await WyomingTranscriber(f"tcp://127.0.0.1:{free_port()}").transcribe(np.zeros(16_000, np.float32), "en")
    assert "port 10300" in str(failed.value)


async def test_an_english_only_model_refuses_another_language_with_advice(whisper):
    from voicedesk.engine.errors import UsageError

    with pytest.raises(UsageError, match="understands only English, not 'ja'") as refused:
        await whisper.transcribe(np.zeros(16_000, np.float32), "ja")
    assert "voicedesk models fetch --stt small" in str(refused.value)
