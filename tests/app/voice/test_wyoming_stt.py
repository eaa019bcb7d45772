"""The Wyoming STT client against Home Assistant's own Whisper server (``wyoming-faster-whisper``, run unchanged on
127.0.0.1, serving the same tiny.en model as the local engine), and against no server at all."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.voice.conftest import read_16k, words
from tests.support.net import free_port
from voicedesk.app.voice.stt import WyomingTranscriber
from voicedesk.engine.errors import ConnectionFailed


async def test_a_wyoming_server_hears_what_the_local_model_hears(wyoming_server, speech, whisper):
    audio = read_16k(speech("turn off the kitchen lights"))
    remote = await WyomingTranscriber(wyoming_server.uri).transcribe(audio, "en")
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
