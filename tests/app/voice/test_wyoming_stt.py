"""The Wyoming STT client against Home Assistant's own Whisper server (``wyoming-faster-whisper``, run unchanged on
127.0.0.1, serving the same tiny.en model as the local engine), and against no server at all."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace

import numpy as np
import pytest

from tests.app.voice.conftest import mic_input, play_into, read_16k, words
from tests.app.voice.test_listen_audio import Heard as Recorder
from tests.app.voice.test_voice_input import interrupt
from tests.support.net import free_port
from voicedesk.app.voice.stt import WyomingTranscriber
from voicedesk.app.voice.voice_input import Heard, Listening, NotHeard, VoiceInput, VoiceProblem, VoiceSettings
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


class HangingServer:
    """A Wyoming ASR server on 127.0.0.1 that hangs as ``mode`` says, speaking the protocol through the ``wyoming``
    package's own event reader and writer: 'mute' accepts and never reads or answers; 'chatty' reads the audio and
    sends a transcript's start and chunks forever, never the transcript; 'relay' hands each connection to ``relay``
    (the real ``wyoming-faster-whisper``): the server answers again."""

    def __init__(self, mode: str, relay: str = "") -> None:
        self.mode, self.relay, self.connections = mode, relay, 0
        self._closed = asyncio.Event()

    async def __aenter__(self) -> HangingServer:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a server that stops reading stalls the sender
        sock.bind(("127.0.0.1", 0))
        self.uri = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
        self._server = await asyncio.start_server(self._serve, sock=sock)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closed.set()
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from wyoming.asr import Transcript, TranscriptChunk, TranscriptStart
        from wyoming.audio import AudioStop
        from wyoming.client import AsyncClient
        from wyoming.event import async_read_event, async_write_event

        self.connections += 1
        try:
            if self.mode == "relay":
                async with AsyncClient.from_uri(self.relay) as server:
                    while (event := await async_read_event(reader)) is not None:
                        await server.write_event(event)
                        if AudioStop.is_type(event.type):
                            break
                    while (event := await server.read_event()) is not None:
                        await async_write_event(event, writer)
                        if Transcript.is_type(event.type):
                            return
            if self.mode == "chatty":
                while (event := await async_read_event(reader)) is not None and not AudioStop.is_type(event.type):
                    pass
                await async_write_event(TranscriptStart(language="en").event(), writer)
                while not self._closed.is_set():
                    await async_write_event(TranscriptChunk(text="turn").event(), writer)
                    await asyncio.sleep(0.1)
            writer.transport.pause_reading()  # 'mute': not even the kernel's buffers take more
            await self._closed.wait()  # never answers, never closes
        finally:
            writer.close()


@pytest.mark.parametrize(
    ("mode", "seconds", "says"),
    [
        ("mute", 1, "did not send a transcript within 0.5 s"),  # accepted, then nothing
        ("chatty", 1, "did not send a transcript within 0.5 s"),  # a transcript begun, never finished
        ("mute", 160, "did not take the audio within 0.5 s"),  # stalled mid-stream (loopback buffers hold 4 MB)
    ],
)
async def test_a_hanging_wyoming_server_fails_the_transcription_within_its_timeout(mode, seconds, says):
    async with HangingServer(mode) as server:
        stt = WyomingTranscriber(server.uri, timeout_s=0.5)
        async with asyncio.timeout(10):  # the old client waited 30 s, then forever for the unsent audio
            with pytest.raises(ConnectionFailed, match=says) as failed:
                await stt.transcribe(np.zeros(seconds * 16_000, np.float32), "en")
        assert server.uri in str(failed.value) and "stt_timeout_s" in str(failed.value) and server.connections == 1


async def test_a_server_whose_listen_queue_is_full_fails_at_the_connection_within_its_timeout():
    # A server too busy to accept: its listen queue full, the kernel drops further SYNs and connect() hangs.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        uri = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        fillers = [socket.socket() for _ in range(8)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex(server.getsockname())
            stt = WyomingTranscriber(uri, timeout_s=0.5)
            async with asyncio.timeout(10):
                with pytest.raises(ConnectionFailed, match=r"did not accept the connection within 0\.5 s") as failed:
                    await stt.transcribe(np.zeros(16_000, np.float32), "en")
            assert uri in str(failed.value) and "stt_timeout_s" in str(failed.value)
        finally:
            for filler in fillers:
                filler.close()


@pytest.mark.audio
async def test_a_hanging_wyoming_server_loses_only_that_utterance_and_listening_goes_on(
    virtual_mic, speech, wyoming_server
):
    async with HangingServer("mute", relay=wyoming_server.uri) as server:
        settings = VoiceSettings(input_device=mic_input(virtual_mic), stt="wyoming", wyoming_uri=server.uri)
        events = Recorder()
        voice = VoiceInput(replace(settings, stt_timeout_s=5.0), events, interrupt, "af_heart")
        task = asyncio.create_task(voice.run())
        try:
            await events.until(lambda: events.of(Listening))
            await play_into(virtual_mic, speech("what time is it"))
            await events.until(lambda: events.of(NotHeard), 60)
            (problem,) = events.of(VoiceProblem)  # told once, though its partial hung too
            assert problem.listening and problem.message.startswith("Not heard: The Wyoming speech-to-text server")
            assert "did not send a transcript within 5 s" in problem.message and "stt_timeout_s" in problem.message
            assert "Still listening" in problem.message and voice.listening and not events.of(Heard)

            server.mode = "relay"  # it answers again
            await play_into(virtual_mic, speech("turn off the kitchen lights"))
            await events.until(lambda: events.of(Heard), 60)
            assert [words(h.text) for h in events.of(Heard)] == ["turn off the kitchen lights"] and voice.listening
            assert server.connections >= 3  # the hung partial and final, then this one's
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("uri", ["127.0.0.1:10300", "tcp://127.0.0.1", "http://127.0.0.1:10300"])
def test_a_malformed_wyoming_address_is_refused_when_voice_starts_with_the_form_to_use(uri):
    from voicedesk.engine.errors import UsageError

    with pytest.raises(UsageError, match="is not a Wyoming speech-to-text address") as refused:
        WyomingTranscriber(uri)
    assert "tcp://HOST:PORT" in str(refused.value)


async def test_a_wyoming_server_on_a_unix_socket_is_reached(tmp_path):
    """unix:// as Wyoming's own clients take it: the audio arrives and the transcript comes back."""
    from wyoming.asr import Transcript
    from wyoming.audio import AudioStop
    from wyoming.event import async_read_event, async_write_event

    received: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (event := await async_read_event(reader)) is not None:
            received.append(event.type)
            if AudioStop.is_type(event.type):
                await async_write_event(Transcript(text=" over a socket ").event(), writer)
                break
        writer.close()

    path = tmp_path / "asr.sock"
    server = await asyncio.start_unix_server(answer, path=str(path))
    async with server:
        text = await WyomingTranscriber(f"unix://{path}").transcribe(np.zeros(20_000, np.float32), "en")
    assert text == "over a socket"
    assert received[:2] == ["transcribe", "audio-start"] and received[-1] == "audio-stop"
    assert received.count("audio-chunk") == 5  # 40,000 bytes in 8,192-byte chunks
