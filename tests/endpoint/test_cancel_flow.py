"""Cancel over a real socket: every pending flush and whole request is answered before ``cancelled``, and a
cancelled (or vanished) session's running sentence is interrupted, so the next session's job runs at once.

The synthesizer is the paced stand-in (``app.lab.paced_synth``), slow enough here that work is still pending when
the cancel arrives; whether the model was freed early is read from its own record of the slices it ran, not from
a clock. The interruption is also checked once with the real random-weight Kokoro (its forward pre-hooks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from websockets.asyncio.client import connect

from tests.support.endpoint import GUARD_S, bidi, receive_until, wait_for
from tests.support.fast_synth import start_fast_server
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.runner import ServerThread
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.protocol import BIDI_PATH, Cancel, Flush, SendText, SynthesizeRequest, encode_command

LONG_SENTENCE = (
    "Yes I see, and this single sentence runs on for a long while without any clause break in it at all so that "
    "one call to the model takes many seconds of work to finish from its start"
)
"""After its early first fragment ("Yes I see,") the rest is one chunk of over 100 characters: one long call."""


def _is_long(text: str) -> bool:
    return len(text) > 100


@pytest.fixture
def paced() -> PacedSynthesizer:
    return PacedSynthesizer(realtime_factor=5.0)


@pytest.fixture
def paced_server(paced) -> Iterator[ServerThread]:
    running = start_fast_server(paced, idle_timeout_s=120.0)
    yield running
    running.stop()


async def test_cancel_answers_every_pending_flush_and_request_then_says_cancelled(paced_server):
    async with bidi(paced_server) as ws:
        await ws.send(encode_command(SendText("Good morning to you. The sun is up today. ")))
        await ws.send(encode_command(Flush("f1")))
        await ws.send(encode_command(SynthesizeRequest("We can go outside now. It is a nice day.", request_id="r1")))
        await ws.send(encode_command(SendText("See you all soon, my good friend. ")))
        await ws.send(encode_command(Flush("f2")))
        await ws.send(encode_command(SynthesizeRequest("The end is near us, so we go.", request_id="r2")))
        before = await receive_until(ws, "sentence_end")  # the first sentence is done; the rest is pending
        await ws.send(encode_command(Cancel()))
        during = await receive_until(ws, "cancelled")
        # The session goes on serving after the cancel.
        await ws.send(encode_command(SendText("Fine again. ")))
        await ws.send(encode_command(Flush("after")))
        after = await receive_until(ws, "flushed")

    messages = before.messages + during.messages
    assert not [m for m in messages if m["type"] == "error"]
    flushed = {m["request_id"]: m for m in messages if m["type"] == "flushed"}
    complete = {m["request_id"]: m for m in messages if m["type"] == "synthesis_complete"}
    started = [m["request_id"] for m in messages if m["type"] == "synthesis_start"]
    # Every flush and every request got exactly one answer...
    assert sorted(m["request_id"] for m in messages if m["type"] == "flushed") == ["f1", "f2"]
    assert sorted(m["request_id"] for m in messages if m["type"] == "synthesis_complete") == ["r1", "r2"]
    assert sorted(started) == ["r1", "r2"]
    # ...those still pending when the cancel came say so (at least the last two were)...
    assert flushed["f2"].get("cancelled") is True
    assert complete["r2"].get("cancelled") is True
    kinds = [(m["type"], m.get("request_id")) for m in messages]
    for request_id in ("r1", "r2"):
        assert kinds.index(("synthesis_start", request_id)) < kinds.index(("synthesis_complete", request_id))
    # ...and ``cancelled`` comes last, after which nothing of the cancelled sentences arrives.
    assert during.kinds[-1] == "cancelled"
    last_seq = during.messages[-1]["last_seq"]
    assert after.kinds.count("audio") > 0
    assert all(m["seq"] > last_seq for m in after.of_type("sentence_start"))
    assert after.audio_by_sentence()  # every audio frame belongs to one of those new sentences
    assert after.of_type("flushed")[0] == {
        "type": "flushed",
        "last_seq": after.of_type("sentence_end")[-1]["seq"],
        "request_id": "after",
    }


async def _newcomer_is_served(server: ServerThread) -> dict:
    async with bidi(server) as ws:
        await ws.send(encode_command(SynthesizeRequest("Hello there, my friend.", request_id="newcomer")))
        frames = await receive_until(ws, "synthesis_complete")
    assert not frames.of_type("error") and len(frames.audio) > 0
    return frames.of_type("synthesis_complete")[0]


@pytest.mark.parametrize("how", ["cancel", "vanish"])
async def test_a_cancelled_or_vanished_sessions_running_sentence_frees_the_model(how):
    synth = PacedSynthesizer(realtime_factor=1.0)  # the long sentence alone would take ~10 s of "compute"
    running = start_fast_server(synth, idle_timeout_s=120.0)
    try:
        async with connect(running.ws_url + BIDI_PATH) as ws:
            await ws.send(encode_command(SendText(LONG_SENTENCE)))
            await ws.send(encode_command(Flush()))
            long_call = await asyncio.to_thread(synth.wait_for_call, lambda c: _is_long(c.text), GUARD_S)
            assert long_call is not None
            if how == "cancel":
                await ws.send(encode_command(Cancel()))
                await receive_until(ws, "cancelled")
            else:
                ws.transport.abort()  # gone without a word
        complete = await _newcomer_is_served(running)
    finally:
        running.stop()
    assert complete["request_id"] == "newcomer" and not complete.get("cancelled")
    assert long_call.interrupted and not long_call.finished
    # The model stopped well before the long sentence's end (the slices it planned vs those it ran)...
    assert long_call.slices_run < long_call.planned_slices / 2
    # ...and the newcomer's sentence ran after it had stopped, not after the whole long sentence.
    newcomer = next(c for c in synth.calls if c.text == "Hello there, my friend.")
    assert synth.calls.index(newcomer) > synth.calls.index(long_call)
    assert newcomer.finished and not newcomer.interrupted


@dataclass
class _StopWatch:
    """Wraps a real synthesizer and records, per call, whether it was told to stop and whether it then ended."""

    inner: object
    calls: list[dict] = field(default_factory=list)

    @property
    def device(self) -> str:
        return self.inner.device  # type: ignore[attr-defined]

    def synthesize(
        self,
        text: str,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
        settings: object = None,
    ) -> SynthesisResult:
        record = {"text": text, "polls": 0, "stop_seen_at_poll": None, "outcome": "running"}
        self.calls.append(record)

        def polled() -> bool:
            record["polls"] += 1
            stop = should_stop is not None and should_stop()
            if stop and record["stop_seen_at_poll"] is None:
                record["stop_seen_at_poll"] = record["polls"]
            return stop

        try:
            result = self.inner.synthesize(text, voice, speed, polled, settings)  # type: ignore[attr-defined]
        except Exception as exc:
            record["outcome"] = type(exc).__name__
            raise
        record["outcome"] = "finished"
        return result

    def check_voice(self, voice: str) -> str:
        return self.inner.check_voice(voice)  # type: ignore[attr-defined]

    def list_voices(self) -> list[str]:
        return self.inner.list_voices()  # type: ignore[attr-defined]

    def warm_up(self) -> None:
        pass


@pytest.mark.slow
async def test_the_real_kokoro_stops_a_cancelled_sentence_between_layers(make_server, synthesizer):
    watch = _StopWatch(synthesizer)
    running = make_server(watch)
    async with bidi(running) as ws:
        await ws.send(encode_command(SendText(LONG_SENTENCE)))
        await ws.send(encode_command(Flush()))
        # Let the model get into the long part's layers (the hooks are polled there), then cancel.
        await wait_for(
            lambda: any(_is_long(c["text"]) and c["polls"] >= 3 for c in watch.calls), "the model polled its stop flag"
        )
        await ws.send(encode_command(Cancel()))
        await receive_until(ws, "cancelled")
    complete = await _newcomer_is_served(running)
    assert complete["request_id"] == "newcomer"
    long_call = next(c for c in watch.calls if _is_long(c["text"]))
    assert long_call["outcome"] == "SynthesisInterrupted"
    # It stopped at the first layer that looked after the cancel.
    assert long_call["polls"] == long_call["stop_seen_at_poll"]
    assert watch.calls[-1]["outcome"] == "finished"
