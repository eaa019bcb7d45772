"""The window resumes what an urgent house announcement cut, as the headless announcer does: behind the urgent one,
from its next sentence, without its chime again, unless its TTL passed; the person's Stop still ends it
``interrupted`` (the real window, a real broker and httpx client, the null sink recording what was heard)."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import pytest

from tests.app.helpers import until
from tests.app.house.helpers import paced_opener
from tests.app.house.test_announcer_audio import locate_fft
from tests.app.house.test_window_house import rows
from tests.support.audio_capture import SinkCapture, require_null_sink
from voicedesk.app.console.announcement import Item, Priority, Report, Request, Source
from voicedesk.app.conversation import Turn
from voicedesk.app.house.chimes import built_in
from voicedesk.app.house.inputs import HouseInputs
from voicedesk.app.house.mqtt import MqttSettings
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.audio import pcm16_to_float
from voicedesk.engine.events import SAMPLE_RATE

NORMAL = "The washer in the basement has finished its long cycle. The dryer is done too. Please empty both of them."
URGENT = "Water leak."
LONG_URGENT = "The alarm is armed and every door and window in the house is now closed and locked."


def record_turns(window) -> dict[int, tuple[Turn, np.ndarray]]:
    """Each ended turn with the audio it handed to the player (what the engine sent, before the chime)."""
    said: dict[int, tuple[Turn, np.ndarray]] = {}

    def ended(_item: Item, turn: Turn) -> None:
        run = window.controller.last_run
        assert run is not None and run.turn is turn
        said[turn.id] = (turn, pcm16_to_float(b"".join(run.pcm)))

    window.announce.ended.append(ended)
    return said


def head(audio: np.ndarray, length: int = 4096) -> tuple[np.ndarray, int]:
    """A stretch of ``audio``'s first sound (random-weight speech is noise: it aligns exactly) and where it starts."""
    start = int(np.flatnonzero(np.abs(audio) > 1e-4)[0])
    return audio[start : start + length], start


def likeness(recorded: np.ndarray, sound: np.ndarray) -> float:
    """How much the stretch of ``recorded`` most like ``sound`` looks like it (cosine over every place ``sound``
    fits whole: 1 is the same shape, whatever the volume). Random-weight speech is coloured noise: a stretch of
    it that was played scores 1.0 (0.99+ seen), one that was not about 0.55 at best over a long recording."""
    places = len(recorded) - len(sound) + 1
    if places <= 0:
        return 0.0
    size = 1 << (len(recorded) + len(sound) - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(recorded, size) * np.conj(np.fft.rfft(sound, size)), size)[:places]
    power = np.concatenate([[0.0], np.cumsum(recorded.astype(np.float64) ** 2)])
    energy = np.maximum(power[len(sound) : len(sound) + places] - power[:places], 1e-6)
    return float(np.max(corr / (np.sqrt(energy) * np.linalg.norm(sound))))


def found_pieces(recorded: np.ndarray, sound: np.ndarray, threshold: float = 0.9, piece: int = 1024) -> float:
    """The share of ``sound``'s pieces (those with sound in them) found in ``recorded``: in pieces, because on a
    loaded machine a late audio callback puts a gap in the recording, which spoils the piece it falls in only."""
    starts = [s for s in range(0, len(sound) - piece + 1, piece) if np.max(np.abs(sound[s : s + piece])) > 0.05]
    assert starts, "no sound to look for"
    return sum(likeness(recorded, sound[s : s + piece]) > threshold for s in starts) / len(starts)


def speech_started(window, after_s: float):
    """True once ``after_s`` of the current announcement's speech (the chime not counted) has been played, and a
    word of it heard (cut before any word, an announcement resumes from its start, not its next sentence)."""

    def started() -> bool:
        run, position = window.controller.run, window.controller.player.position_s
        return run is not None and position > after_s and bool(run.turn.heard_text(position).strip())

    return started


@pytest.mark.slow  # the real Kokoro says three announcements
def test_an_urgent_one_cuts_a_normal_one_which_resumes_from_its_next_sentence(make_window, qloop, broker, listen):
    sink = require_null_sink()
    settings = MqttSettings("127.0.0.1", broker.port, base="test/resume", node_id="resume", discovery=False)
    window = make_window(house=HouseInputs(mqtt=settings, http_port=0, loudness=False))
    house = window.house
    qloop.run_until_complete(asyncio.wait_for(house.mqtt.connected.wait(), 20))
    qloop.run_until_complete(window.hub.engine())  # the model is loaded before anything is said
    client = listen("test/resume/outcome")
    said = record_turns(window)

    async def scenario() -> list[dict]:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as http:
            reply = await http.post("/announce", json={"text": NORMAL, "chime": "ding", "id": "n1"})
            assert reply.status_code == 202
            await until(speech_started(window, 0.4))  # well inside its first sentence
            client.publish(
                "test/resume/say", json.dumps({"text": URGENT, "priority": "urgent", "chime": "none", "id": "u1"})
            )
            outcomes = [await asyncio.to_thread(client.next, "test/resume/outcome", 180) for _ in range(2)]
        return outcomes

    with SinkCapture(sink) as capture:
        outcomes = qloop.run_until_complete(scenario())
        qloop.run_until_complete(asyncio.sleep(0.3))  # the last block leaves the device before parec stops
        recorded = capture.stop()
    assert [(o["id"], o["outcome"], o["source"]) for o in outcomes] == [
        ("u1", "spoken", "mqtt"),
        ("n1", "spoken", "http"),
    ]
    assert outcomes[1]["text"] == NORMAL  # the outcome names the announcement as it was sent
    assert len(said) == 3  # each turn was recorded as it ended, before its outcome went out

    (cut, cut_audio), (urgent, urgent_audio), (rest, rest_audio) = (said[key] for key in sorted(said))
    assert cut.text.strip() == NORMAL and cut.state.value == "cut" and cut.cut.sentence == 0, cut.cut
    assert urgent.text.strip() == URGENT and urgent.state.value == "done"
    assert rest.text.strip() == "The dryer is done too. Please empty both of them." and rest.state.value == "done"
    history = rows(window.console.announcements.history)
    assert any("dryer" in row and "HTTP · normal · resumed" in row for row in history), history

    # The recording: the normal one, cut; the urgent one; then the rest of the normal one.
    at = {}
    for name, audio in (("cut", cut_audio), ("urgent", urgent_audio), ("rest", rest_audio)):
        stretch, start = head(audio)
        at[name] = locate_fft(recorded, stretch) - start
    assert at["cut"] < at["urgent"] < at["rest"], at
    # Cut: its first sentence was heard from its start, and never to its end.
    heard_head, _start = head(cut_audio)
    assert found_pieces(recorded, heard_head) >= 0.5, found_pieces(recorded, heard_head)
    first = cut_audio[: int(cut.sentences[0].audio_end_s * SAMPLE_RATE)]
    first_end = int(np.flatnonzero(np.abs(first) > 1e-4)[-1]) + 1  # its last sound, before its closing pause
    assert first_end - 4096 > (cut.cut.heard_s + 0.5) * SAMPLE_RATE, (cut.cut.heard_s, first_end)
    assert found_pieces(recorded, cut_audio[first_end - 4096 : first_end], 0.8) == 0.0
    # The chime once: before the normal one (then the model's time for its first sentence, on a CPU), and not
    # again anywhere after the urgent one started.
    chime = built_in("ding") * window.announce.console.core.policy.volume[Priority.NORMAL]
    assert found_pieces(recorded[: at["cut"]], chime) >= 0.5, found_pieces(recorded[: at["cut"]], chime)
    assert found_pieces(recorded[at["urgent"] :], chime, 0.8) == 0.0


def paced_window(make_window, **house):
    """The real window on the paced stand-in (a tone per word at real-time pace): priorities and stops, not voices."""
    return make_window(
        engine_opener=paced_opener(PacedSynthesizer(20.0)), house=HouseInputs(http_port=0, loudness=False, **house)
    )


def reports_of(window) -> list[Report]:
    got: list[Report] = []  # the house's (the person's own end with one too, not sent to the house)
    window.announce.console.reports.append(lambda report: report.source.house and got.append(report))
    return got


def test_the_persons_stop_ends_a_house_announcement_interrupted_without_resuming(make_window, qloop):
    require_null_sink()
    window = paced_window(make_window)
    house = window.house
    reports = reports_of(window)

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as http:
            reply = await http.post("/announce", json={"text": "Alpha one two three. Bravo one two three.", "id": "s1"})
            assert reply.status_code == 202
        await until(speech_started(window, 0.3))
        await window.announce.stop()
        await until(lambda: reports)

    qloop.run_until_complete(scenario())
    assert [(r.id, r.outcome.value, r.reason) for r in reports] == [("s1", "interrupted", "stopped")]
    assert not window.announce.console.core.waiting  # nothing goes back to resume
    assert [turn.state.value for turn in window.controller.turns] == ["cut"]


def test_the_persons_own_text_resumes_and_a_cut_one_past_its_ttl_expires(make_window, qloop):
    """A typed announcement cut by an urgent one resumes behind it; a house one whose TTL passes while the urgent
    one plays is dropped as expired, not said."""
    require_null_sink()
    window = paced_window(make_window)
    house = window.house
    reports = reports_of(window)
    controller = window.controller

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as http:
            typed = Request("Alpha one two. Bravo one two. Charlie one.", source=Source.WINDOW, origin="Typed")
            window.announce.submit(typed)
            await until(speech_started(window, 0.3))
            await http.post("/announce", json={"text": "Fire in the kitchen.", "priority": "urgent", "id": "u1"})
            await until(lambda: len(controller.turns) == 3 and not controller.turns[-1].active)
            assert [r.id for r in reports] == ["u1"]

            # A normal one that may wait 2 s, cut by an urgent one that plays for longer than that.
            await http.post("/announce", json={"text": "Delta one two. Echo one two.", "ttl_s": 2, "id": "n1"})
            await until(speech_started(window, 0.3))
            await http.post("/announce", json={"text": LONG_URGENT, "priority": "urgent", "id": "u2"})
            await until(lambda: len(reports) == 3)

    qloop.run_until_complete(scenario())
    said = [(turn.text.strip(), turn.state.value) for turn in controller.turns]
    assert said == [
        ("Alpha one two. Bravo one two. Charlie one.", "cut"),
        ("Fire in the kitchen.", "done"),
        ("Bravo one two. Charlie one.", "done"),
        ("Delta one two. Echo one two.", "cut"),
        (LONG_URGENT, "done"),
    ], said
    # The cut one waited behind the urgent one and expired there (reported when its TTL passed, taken out of the
    # window's queue).
    assert {r.id: (r.outcome.value, r.reason) for r in reports} == {
        "u1": ("spoken", ""),
        "u2": ("spoken", ""),
        "n1": ("expired", "its TTL passed before it could be said"),
    }
    history = rows(window.console.announcements.history)
    assert any("Bravo one two." in row and "Typed · resumed" in row for row in history), history
    assert not window.announce.console.core.waiting


def test_a_stop_from_the_house_ends_what_plays_and_the_window_carries_on(make_window, qloop):
    """Issue 33.2: POST /stop (the MQTT stop and Home Assistant's Stop alike) left the next announcement "Paused
    after a stop" in the window until another arrived; the announcer carried on. One behaviour: it carries on."""
    require_null_sink()
    window = paced_window(make_window)
    house = window.house
    reports = reports_of(window)

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{house.http.port}") as http:
            await http.post("/announce", json={"text": "Alpha one two three. Bravo one two three.", "id": "s1"})
            await http.post("/announce", json={"text": "Charlie.", "id": "s2"})
            await until(speech_started(window, 0.3))
            assert (await http.post("/stop")).status_code == 200
            await until(lambda: len(reports) == 2)

    qloop.run_until_complete(scenario())
    assert [(r.id, r.outcome.value, r.reason) for r in reports] == [
        ("s1", "interrupted", "stopped"),
        ("s2", "spoken", ""),
    ]
    assert not window.announce.console.core.paused
