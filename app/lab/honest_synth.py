"""The honest stand-in for capacity work: the CPU side real, the model's forward faked at a GPU's cost.

``bench capacity`` against the paced stand-in (``paced_synth``) measures the server with no text work at all, but
on a real instance the CPU side is what saturates first (the AWS sample's load test of Kokoro on ml.g5.xlarge
saturated near 17 requests/s with the CPU at ~100 % and the GPU at 39 %). ``HonestSynthesizer`` runs, for every
sentence, what ``KokoroSynthesizer.prepare`` runs — the text front-end (``engine.text.frontend``: markup, spoken
form, lexicon) and Kokoro's own G2P (misaki, through a ``KPipeline`` without a model, into the same pieces) — and
then, instead of the forward, waits ``s_per_phoneme`` per phoneme in short slices that poll ``should_stop``. Its
audio is the paced stand-in's tone (not speech), as long as Kokoro would make it.

The default forward cost, ``A10G_S_PER_PHONEME``, is derived from that published load test: 39 % GPU at 17
requests/s is about 23 ms of GPU time per request; for the sample's requests of about one sentence (assumed about
60 phonemes; the artifacts give the rate, not the texts) that is about 0.4 ms per phoneme. It is an estimate to
set (``--s-per-phoneme``), not a measurement of this code on an A10G.

Each call records the CPU time of its stages (``stages``: front-end, G2P; the forward is faked, so its share is the
wall time it waited).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from voicedesk.app.lab.paced_synth import VOICES, PacedSynthesisInterrupted, PacedSynthesizer, tone
from voicedesk.engine.model.prepared import PreparedPiece, prepare_pieces
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.text.frontend import shared_front_end
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

A10G_S_PER_PHONEME = 0.0004
SECONDS_PER_PHONEME = 0.075
"""Audio per phoneme at speed 1 (Kokoro's English pace: about 60–90 ms)."""
SLICE_S = 0.002


@dataclass(slots=True)
class StageTimes:
    """CPU seconds per stage, summed over calls (thread CPU time: other threads' work is not counted)."""

    sentences: int = 0
    front_end_cpu_s: float = 0.0
    g2p_cpu_s: float = 0.0
    forward_s: float = 0.0
    """Wall seconds the faked forward waited (the GPU's share)."""

    def per_sentence_ms(self) -> dict[str, float]:
        n = max(1, self.sentences)
        return {
            "front-end": 1000 * self.front_end_cpu_s / n,
            "g2p": 1000 * self.g2p_cpu_s / n,
            "forward": 1000 * self.forward_s / n,
        }


class HonestSynthesizer(PacedSynthesizer):
    def __init__(
        self, s_per_phoneme: float = A10G_S_PER_PHONEME, language: str = "a", voices: tuple[str, ...] = VOICES
    ) -> None:
        super().__init__(realtime_factor=1.0, voices=voices)
        if not s_per_phoneme >= 0:
            raise ValueError(f"s_per_phoneme must be 0 or more; got {s_per_phoneme!r}.")
        self.s_per_phoneme = s_per_phoneme
        self.language = language
        self.stages = StageTimes()
        self._pipeline = None
        self._front_end = None
        self._pipeline_lock = threading.Lock()

    @property
    def device(self) -> str:
        return f"honest stand-in (real G2P, forward {self.s_per_phoneme * 1000:g} ms per phoneme)"

    def warm_up(self) -> None:
        self.prepare("Hello there.")

    def prepare(self, text: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> tuple[PreparedPiece, ...]:
        """The pieces ``KokoroSynthesizer.prepare`` would make of ``text``; records the stages' CPU time."""
        with self._pipeline_lock:
            if self._pipeline is None:
                from kokoro import KPipeline

                self._pipeline = KPipeline(lang_code=self.language, model=False)
                self._front_end = shared_front_end()
        started = time.thread_time()
        spoken = self._front_end.to_spoken(text, self.language, settings)
        spoken_at = time.thread_time()
        pieces = prepare_pieces(self._pipeline, spoken, self.language)
        done = time.thread_time()
        with self._lock:
            self.stages.front_end_cpu_s += spoken_at - started
            self.stages.g2p_cpu_s += done - spoken_at
        return pieces

    def synthesize(
        self, text: str, voice: str, speed: float, should_stop: Callable[[], bool] | None = None
    ) -> SynthesisResult:
        pieces = self.prepare(text)
        phonemes = sum(len(piece.phonemes) for piece in pieces)
        forward_s = phonemes * self.s_per_phoneme
        started = time.perf_counter()
        slices = max(1, round(forward_s / SLICE_S))
        for _ in range(slices):
            if should_stop is not None and should_stop():
                raise PacedSynthesisInterrupted("synthesis stopped: its session was cancelled")
            time.sleep(forward_s / slices)
        waited_s = time.perf_counter() - started
        with self._lock:
            self.stages.sentences += 1
            self.stages.forward_s += waited_s
        duration_s = max(0.2, phonemes * SECONDS_PER_PHONEME / speed)
        audio, words = tone(text, duration_s)
        return SynthesisResult(audio=audio, words=words, phonemes=" ".join(piece.phonemes for piece in pieces))
