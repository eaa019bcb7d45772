"""The turn detector on a fake clock: 20 ms VAD windows, scripted probabilities and STT answers."""

from __future__ import annotations

import pytest

from voicedesk.app.voice.turns import (
    BargeIn,
    Dropped,
    Mode,
    Paused,
    Resumed,
    SpeechEnded,
    SpeechStarted,
    TranscribeRequest,
    Transcript,
    TurnConfig,
    TurnDetector,
)

W = 0.02


class Driver:
    def __init__(self, **config: object) -> None:
        self.turns = TurnDetector(TurnConfig(**config))  # type: ignore[arg-type]
        self.now = 0.0
        self.events: list[object] = []

    def windows(self, probability: float, seconds: float) -> list[object]:
        out: list[object] = []
        for _ in range(round(seconds / W)):
            self.now = round(self.now + W, 6)
            out += self.turns.vad(probability, self.now, W)
        self.events += out
        return out

    def requests(self) -> list[TranscribeRequest]:
        return [e for e in self.events if isinstance(e, TranscribeRequest)]

    def answer(self, request: TranscribeRequest, text: str) -> list[object]:
        out = self.turns.transcribed(request, text, self.now)
        self.events += out
        return out

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def test_speech_then_silence_ends_at_the_last_voiced_window():
    d = Driver(partial_every_s=0)
    d.windows(0.0, 0.5)
    d.windows(0.9, 1.0)
    (started,) = d.of(SpeechStarted)
    assert started.at == pytest.approx(0.5, abs=1e-6)  # backdated to the first voiced window
    d.windows(0.1, 0.59)
    assert not d.of(SpeechEnded)
    d.windows(0.1, 0.1)
    (ended,) = d.of(SpeechEnded)
    assert ended.reason == "silence"
    assert ended.at == pytest.approx(1.5, abs=1e-6)
    assert ended.decided_at - ended.at == pytest.approx(0.6, abs=W)


def test_a_click_is_never_a_turn_and_hysteresis_keeps_soft_speech():
    d = Driver(partial_every_s=0)
    d.windows(0.9, 0.064)  # 64 ms: under min_speech_s
    d.windows(0.0, 1.0)
    assert d.events == []
    d.windows(0.9, 0.3)
    d.windows(0.4, 1.0)  # under start_threshold, above keep_threshold: still speech
    assert d.of(SpeechStarted) and not d.of(SpeechEnded)


def test_speculative_transcript_becomes_the_final_without_a_second_request():
    d = Driver(partial_every_s=0)
    d.windows(0.9, 1.0)
    d.windows(0.0, 0.3)
    (spec,) = d.requests()
    assert not spec.final
    assert spec.end == pytest.approx(1.0 + 0.2, abs=1e-6)  # last voiced + tail
    assert spec.start == pytest.approx(-0.3, abs=1e-6)  # pre-roll
    partial = d.answer(spec, " Turn off the lights.")
    assert partial == [Transcript(1, "Turn off the lights.", False, d.now)]
    d.windows(0.0, 0.4)
    ended = d.of(SpeechEnded)
    assert ended
    finals = [e for e in d.of(Transcript) if e.final]
    assert [f.text for f in finals] == ["Turn off the lights."]
    assert len(d.requests()) == 1


def test_final_waits_for_an_in_flight_request_for_the_same_span():
    d = Driver(partial_every_s=0)
    d.windows(0.9, 1.0)
    d.windows(0.0, 0.7)  # ends while the speculative request is still unanswered
    (spec,) = d.requests()
    assert d.of(SpeechEnded) and not d.of(Transcript)
    out = d.answer(spec, "kitchen lights off")
    assert out == [Transcript(1, "kitchen lights off", True, d.now)]


def test_speech_resuming_discards_the_speculation_and_asks_for_a_new_final():
    d = Driver(partial_every_s=0)
    d.windows(0.9, 1.0)
    d.windows(0.0, 0.3)
    (spec,) = d.requests()
    d.answer(spec, "turn off")
    d.windows(0.9, 0.5)  # the person goes on
    d.windows(0.0, 0.7)
    last = d.requests()[-1]
    assert len(d.requests()) == 2 and not last.final  # a new speculation; its answer will be the final
    assert last.end == pytest.approx(1.8 + 0.2, abs=1e-6)
    assert d.of(SpeechEnded) and not [e for e in d.of(Transcript) if e.final]
    d.answer(last, "turn off the kitchen lights")
    assert [e.text for e in d.of(Transcript) if e.final] == ["turn off the kitchen lights"]


def test_partials_while_speaking_one_in_flight_and_stale_ones_ignored():
    d = Driver(partial_every_s=0.5)
    d.windows(0.9, 2.0)
    first, *rest = d.requests()
    assert rest == []  # the first is unanswered: no second request piles up
    d.answer(first, "turn")
    d.windows(0.9, 0.6)
    second = d.requests()[-1]
    assert second.end > first.end and not second.final
    d.windows(0.0, 0.7)  # ends with the partial still in flight
    assert not [r for r in d.requests() if r.final]
    assert d.answer(second, "turn off the") == [d.requests()[-1]]  # stale: not shown; the final is asked for
    final = d.requests()[-1]
    assert final.final
    d.answer(final, "turn off the kitchen")
    assert [e.text for e in d.of(Transcript)] == ["turn", "turn off the kitchen"]
    assert d.answer(second, "late") == []


def test_a_failed_transcription_drops_an_ended_utterance_at_once_and_a_speaking_one_asks_again():
    d = Driver(partial_every_s=0.5)
    d.windows(0.9, 0.6)
    (partial,) = d.requests()
    assert d.turns.transcribed(partial, "", d.now, failed=True) == []  # still speaking: its final will be asked
    d.windows(0.9, 0.5)
    second = d.requests()[-1]
    d.windows(0.0, 0.7)  # ends while the partial hangs: no final is asked behind it
    assert second is not partial and d.of(SpeechEnded) and d.requests()[-1] is second
    assert d.turns.transcribed(second, "", d.now, failed=True) == [Dropped(1, "nothing was said")]
    d.windows(0.9, 0.5)
    d.windows(0.0, 0.7)
    assert d.requests()[-1].utterance == d.of(SpeechStarted)[-1].utterance != 1  # the next one is asked for


def test_empty_final_is_dropped():
    d = Driver(partial_every_s=0, speculate_s=10)
    d.windows(0.9, 0.5)
    d.windows(0.0, 0.7)
    (final,) = d.requests()
    assert d.answer(final, "  ") == [Dropped(1, "nothing was said")]


def test_cap_splits_a_monologue_and_keeps_listening():
    d = Driver(partial_every_s=0, max_utterance_s=3.0)
    d.windows(0.9, 7.0)
    ended = d.of(SpeechEnded)
    assert [e.reason for e in ended] == ["capped", "capped"]
    assert len(d.of(SpeechStarted)) == 3


def test_barge_in_needs_the_minimum_speech_and_a_cough_is_dropped():
    d = Driver(partial_every_s=0, barge_in_min_s=0.5)
    d.turns.speaking = True
    d.windows(0.9, 0.3)  # a cough: it pauses the console at once, and lets it play on when it ends
    assert d.of(Paused) == [Paused(1, W)] and not d.of(Resumed)
    d.windows(0.0, 0.7)
    assert d.of(Dropped) == [Dropped(1, "too short to interrupt")] and not d.of(BargeIn)
    assert d.of(Resumed) == [Resumed(1, pytest.approx(0.9))]  # the end of speech: 0.6 s after the last voice
    assert d.turns.speaking
    assert d.answer(d.requests()[-1], "ahem") == []  # its speculation's answer is stale
    speech_from = d.now
    d.windows(0.9, 0.6)
    (barge,) = d.of(BargeIn)
    assert barge.at == pytest.approx(speech_from + 0.5) and not d.turns.speaking
    assert d.of(Paused)[1].at == pytest.approx(speech_from + W)  # paused at its onset, committed, never resumed
    assert len(d.of(Resumed)) == 1
    d.windows(0.0, 0.7)
    assert d.of(SpeechEnded)
    d.answer(d.requests()[-1], "no, the other light")  # the interruption becomes the next turn
    assert [e.text for e in d.of(Transcript) if e.final] == ["no, the other light"]


def test_barge_in_by_keyword_only():
    d = Driver(partial_every_s=0.3, barge_in_keywords=("stop",))
    d.turns.speaking = True
    d.windows(0.9, 2.0)
    assert not d.of(BargeIn)  # long speech alone does not interrupt
    d.answer(d.requests()[-1], "uh, stop!")
    assert d.of(BargeIn)
    d2 = Driver(partial_every_s=0, barge_in_keywords=("stop",))
    d2.turns.speaking = True
    d2.windows(0.9, 1.0)
    d2.windows(0.0, 0.7)
    final = [r for r in d2.requests()][-1]
    assert d2.of(Paused) == [Paused(1, W)] and not d2.of(Resumed)  # held while its transcript is awaited
    assert d2.answer(final, "mm-hm yes") == [Dropped(1, "no barge-in keyword"), Resumed(1, d2.now)]


def test_a_pause_waiting_for_a_keyword_resumes_after_the_hold_and_a_later_keyword_still_commits():
    d = Driver(partial_every_s=0.3, barge_in_keywords=("stop",), barge_in_hold_s=1.0)
    d.turns.speaking = True
    d.windows(0.9, 1.5)  # talking to someone else in the room: no keyword in what was heard so far
    assert d.of(Paused) == [Paused(1, W)]
    assert d.of(Resumed) == [Resumed(1, pytest.approx(1.0 + W))]
    assert len(d.of(Paused)) == 1  # one pause per utterance: it does not hold the console again
    d.answer(d.requests()[-1], "and then, stop")
    assert [type(e) for e in d.events[-2:]] == [Transcript, BargeIn]


def test_a_click_over_the_console_pauses_it_briefly_and_stopping_listening_never_leaves_it_held():
    d = Driver(partial_every_s=0)
    d.turns.speaking = True
    d.windows(0.9, 0.04)  # under min_speech_s: never a turn
    d.windows(0.0, 0.7)
    assert [type(e) for e in d.events] == [Paused, Resumed] and d.of(Resumed)[0].at == pytest.approx(0.64)
    d.windows(0.9, 0.1)
    assert d.turns.stop(d.now) == [Resumed(2, d.now)]
    off = Driver(partial_every_s=0, barge_in=False)
    off.turns.speaking = True
    off.windows(0.9, 1.0)
    assert not off.of(Paused)  # barge-in off: the console is never paused


def test_without_barge_in_speech_over_the_console_is_ignored():
    d = Driver(partial_every_s=0, barge_in=False)
    d.turns.speaking = True
    d.windows(0.9, 2.0)
    d.windows(0.0, 0.7)
    assert not d.of(BargeIn)
    assert d.of(Dropped) == [Dropped(1, "the console was speaking")]


def test_push_to_talk_ignores_the_vad_until_pressed_and_ends_on_release():
    d = Driver(mode=Mode.PUSH_TO_TALK, partial_every_s=0.5)
    d.windows(0.9, 1.0)
    assert d.events == []
    d.turns.speaking = True
    d.events += d.turns.press(d.now)
    assert [type(e) for e in d.events] == [SpeechStarted, BargeIn]
    d.windows(0.9, 0.6)
    d.windows(0.0, 2.0)  # silence does not end a held key
    assert not d.of(SpeechEnded)
    d.answer(d.requests()[-1], "hello")
    d.events += d.turns.release(d.now)
    (ended,) = d.of(SpeechEnded)
    assert ended.reason == "released" and ended.at == d.now
    final = d.requests()[-1]
    assert final.final and final.end == d.now  # no tail after a released key
    d.answer(final, "hello there")
    assert [e.text for e in d.of(Transcript) if e.final] == ["hello there"]


def test_a_held_key_is_a_turn_even_if_the_console_starts_speaking_meanwhile():
    d = Driver(mode=Mode.PUSH_TO_TALK, partial_every_s=0)
    d.events += d.turns.press(d.now)
    d.windows(0.9, 0.2)
    d.turns.speaking = True  # an announcement began while the key was held
    d.windows(0.9, 0.2)
    d.events += d.turns.release(d.now)
    assert not d.of(Dropped)
    d.answer(d.requests()[-1], "what time is it")
    assert [e.text for e in d.of(Transcript) if e.final] == ["what time is it"]


def test_a_press_from_a_wall_button_or_wake_word_ends_at_the_silence_after_speech():
    d = Driver(mode=Mode.PUSH_TO_TALK, partial_every_s=0, press_until_silence=True)
    d.events += d.turns.press(d.now)
    d.windows(0.0, 1.0)  # the person has not started yet: no end
    d.windows(0.9, 1.0)
    d.windows(0.0, 0.59)
    assert not d.of(SpeechEnded)
    d.windows(0.0, 0.1)
    (ended,) = d.of(SpeechEnded)
    assert ended.reason == "silence" and ended.at == pytest.approx(2.0, abs=1e-6)
    d.answer(d.requests()[-1], "turn off the lights")
    assert [e.text for e in d.of(Transcript) if e.final] == ["turn off the lights"]
    d.events += d.turns.press(d.now)  # pressed, then nothing said: it ends empty after press_wait_s
    d.windows(0.0, 5.0)
    assert len(d.of(SpeechEnded)) == 2
    d.answer(d.requests()[-1], "")
    assert d.of(Dropped) == [Dropped(3, "nothing was said")]


def test_stt_language_follows_the_voice_unless_set():
    from voicedesk.app.voice.stt import stt_language

    assert [stt_language(v) for v in ("af_heart", "bf_emma", "jf_alpha", "zf_xiaobei", "ff_siwis")] == [
        "en",
        "en",
        "ja",
        "zh",
        "fr",
    ]
    assert stt_language("jf_alpha", "en") == "en"
