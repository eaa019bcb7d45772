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

Preparation runs where the real synthesizer runs it: in-process (one sentence at a time; the next one beside the
forward, as ``KokoroSynthesizer.prepare_ahead`` does) or, with a pool (``serve --prepare-workers``), in worker
processes (``engine.model.prepare_pool``) that every queued sentence is handed to. Each sentence's stage times are
kept (``stage_samples``: front-end and G2P CPU per sentence, wherever they ran; the forward is faked, so its share
is the wall time it waited).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from voicedesk.app.lab.paced_synth import VOICES, PacedSynthesisInterrupted, PacedSynthesizer, tone
from voicedesk.engine.model import weights
from voicedesk.engine.model.g2p_pipelines import G2PPipelines
from voicedesk.engine.model.prepare_pool import PreparedText, PreparePool, StageSamples, TextPreparation, WorkerSetup
from voicedesk.engine.model.synthesis import SynthesisResult
from voicedesk.engine.text.frontend import shared_front_end
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

A10G_S_PER_PHONEME = 0.0004
SECONDS_PER_PHONEME = 0.075
"""Audio per phoneme at speed 1 (Kokoro's English pace: about 60–90 ms)."""
SLICE_S = 0.002
MAX_AHEAD = 64


class HonestSynthesizer(PacedSynthesizer):
    def __init__(
        self, s_per_phoneme: float = A10G_S_PER_PHONEME, language: str = "a", voices: tuple[str, ...] = VOICES
    ) -> None:
        super().__init__(realtime_factor=1.0, voices=voices)
        if not s_per_phoneme >= 0:
            raise ValueError(f"s_per_phoneme must be 0 or more; got {s_per_phoneme!r}.")
        self.s_per_phoneme = s_per_phoneme
        self.language = language
        self.forward_s: list[float] = []
        """Wall seconds each faked forward waited."""
        self._local_stages = StageSamples()
        self._preparation: TextPreparation | None = None
        self._prepare_lock = threading.Lock()
        self._workers: PreparePool | None = None
        self._ahead: OrderedDict[tuple[str, TextSettings], Future[PreparedText]] = OrderedDict()
        self._ahead_thread: ThreadPoolExecutor | None = None

    @property
    def device(self) -> str:
        return f"honest stand-in (real G2P, forward {self.s_per_phoneme * 1000:g} ms per phoneme)"

    def warm_up(self) -> None:
        self._prepare_here("Hello there.", DEFAULT_TEXT_SETTINGS)
        self._local_stages = StageSamples()  # the first call loads spaCy and the grammars: not a sentence's cost

    # ---- where preparation runs (as KokoroSynthesizer) ----------------------------------------------

    @property
    def prepare_workers(self) -> int:
        return 0 if self._workers is None else self._workers.workers

    def worker_setup(self) -> WorkerSetup:
        return WorkerSetup(weights.REPO_ID, frozenset(), (self.language,))

    def use_prepare_pool(self, pool: PreparePool | None) -> None:
        self._workers = pool

    @property
    def stage_samples(self) -> StageSamples:
        """Front-end and G2P CPU seconds per sentence, from wherever preparation ran."""
        return self._local_stages if self._workers is None else self._workers.stages

    def prepare_ahead(self, text: str, voice: str, settings: TextSettings) -> None:
        key = (text, settings)
        with self._lock:
            if key in self._ahead:
                return
            if self._workers is not None:
                self._ahead[key] = self._workers.submit(text, self.language, settings)
            else:
                if self._ahead_thread is None:
                    self._ahead_thread = ThreadPoolExecutor(1, thread_name_prefix="honest-prepare")
                self._ahead[key] = self._ahead_thread.submit(self._prepare_here, text, settings)
            while len(self._ahead) > MAX_AHEAD:
                self._ahead.popitem(last=False)

    def prepare(self, text: str, settings: TextSettings = DEFAULT_TEXT_SETTINGS) -> PreparedText:
        """What ``KokoroSynthesizer.prepared`` gives: the sentence prepared ahead, or prepared now (in a worker when
        there is a pool)."""
        with self._lock:
            ahead = self._ahead.pop((text, settings), None)
        if ahead is not None:
            return ahead.result()
        if self._workers is not None:
            return self._workers.submit(text, self.language, settings).result()
        return self._prepare_here(text, settings)

    def _prepare_here(self, text: str, settings: TextSettings) -> PreparedText:
        with self._prepare_lock:
            if self._preparation is None:
                pipelines = G2PPipelines(weights.REPO_ID, False, weights.cached_vocab())
                self._preparation = TextPreparation(shared_front_end(), pipelines)
            prepared = self._preparation(text, self.language, settings)
        self._local_stages.add(prepared)
        return prepared

    # ---- the faked forward -----------------------------------------------------------------------------

    def synthesize(
        self,
        text: str,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
        settings: TextSettings | None = None,
    ) -> SynthesisResult:
        pieces = self.prepare(text, settings or DEFAULT_TEXT_SETTINGS).pieces
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
            self.forward_s.append(waited_s)
        duration_s = max(0.2, phonemes * SECONDS_PER_PHONEME / speed)
        audio, words = tone(text, duration_s)
        return SynthesisResult(audio=audio, words=words, phonemes=" ".join(piece.phonemes for piece in pieces))
