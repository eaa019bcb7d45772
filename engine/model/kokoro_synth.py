"""The local synthesizer: Kokoro-82M through the ``kokoro`` package (one ``KModel``, a ``KPipeline`` per language).

``prepare`` (CPU, in worker processes with a pool) gives a picklable ``PreparedSentence``; ``render`` runs the
forwards. Voice packs are loaded and blended here, so ``KPipeline`` never looks a voice up on the hub."""

from __future__ import annotations

import difflib
import logging
import pickle
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from voicedesk.engine.audio import SAMPLE_RATE
from voicedesk.engine.errors import ErrorCode, VoicedeskError, VoiceError, WeightsMissingError
from voicedesk.engine.model import languages, weights
from voicedesk.engine.model.front_end_warmer import FrontEndWarmer
from voicedesk.engine.model.g2p_pipelines import G2PPipelines
from voicedesk.engine.model.prepare_pool import PreparePool, WorkerSetup
from voicedesk.engine.model.prepared import PreparedSentence, prepare_pieces
from voicedesk.engine.model.synthesis import SynthesisResult, WordTiming
from voicedesk.engine.model.voices import (
    DEFAULT_LANGUAGE,
    KNOWN_VOICES,
    LANGUAGES,
    VOICE_PACK_SHAPE,
    VoiceInfo,
    check_voice_pack,
    format_voice_spec,
    is_path_spec,
    language_of,
    parse_voice_spec,
)
from voicedesk.engine.text.frontend import FrontEnd, shared_front_end
from voicedesk.engine.text.frontend.settings import DEFAULT_TEXT_SETTINGS, TextSettings

if TYPE_CHECKING:
    import torch
    from kokoro import KModel, KPipeline

log = logging.getLogger(__name__)

# Known and harmless with kokoro 0.9.4 on torch 2.x (raised while kokoro and its imports load); left on, they
# would bury our own messages on every start.
warnings.filterwarnings("ignore", message="dropout option adds dropout", category=UserWarning)
warnings.filterwarnings("ignore", message=r".*weight_norm.* is deprecated", category=FutureWarning)
warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)

DEVICE_UNAVAILABLE = ErrorCode.DEVICE_UNAVAILABLE
WARM_UP_TEXT = "Hello there, it is 21°C."
"""Has a number and a unit, so the spoken form's grammars are warm too."""
MAX_CACHED_BLENDS = 64
"""Blends are cheap to recompute; the cap keeps a client sending ever-new blends from growing memory."""
MAX_PREPARED_AHEAD = 32
"""Sentences prepared ahead and not yet taken; older ones (a cancelled session's) are dropped past it."""

INTERRUPT_POINTS = frozenset({"AlbertLayer", "LSTM", "AdainResBlk1d", "AdaINResBlock1"})
"""KModel's layers where a synthesis checks whether to stop: a cancelled sentence frees the model within a few
percent."""


class SynthesisInterrupted(Exception):
    """The sentence's session was cancelled (or its client vanished) while the model was running it."""


def select_device(requested: str | None = None) -> str:
    """``None``/``"auto"``: CUDA when available, else CPU. Otherwise the named device, if this machine has it."""
    import torch

    if requested is None or requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(requested)
    except (RuntimeError, TypeError) as exc:
        raise VoicedeskError(
            DEVICE_UNAVAILABLE, f"{requested!r} is not a device; use cpu, cuda or cuda:N (or leave it unset)."
        ) from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise VoicedeskError(
                DEVICE_UNAVAILABLE,
                f"Device {requested!r} was asked for, but this machine has no usable CUDA GPU "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}). Use --device cpu.",
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise VoicedeskError(
                DEVICE_UNAVAILABLE,
                f"Device {requested!r} does not exist: this machine has {count} CUDA device(s), "
                f"cuda:0 to cuda:{count - 1}.",
            )
    elif device.type != "cpu":
        raise VoicedeskError(DEVICE_UNAVAILABLE, f"Device type {device.type!r} is not supported; use cpu or cuda.")
    return str(device)


def word_timings(tokens: Iterable[Any] | None, offset_s: float, end_s: float) -> list[WordTiming]:
    """Word timings from misaki ``MToken``s, shifted by ``offset_s`` and kept inside [offset_s, end_s]; tokens without
    timestamps and punctuation are skipped."""
    found: list[WordTiming] = []
    for token in tokens or ():
        start, end = getattr(token, "start_ts", None), getattr(token, "end_ts", None)
        text = getattr(token, "text", "")
        if start is None or end is None or not any(ch.isalnum() for ch in text):
            continue
        start_s = min(max(offset_s + float(start), offset_s), end_s)
        end_s_word = min(max(offset_s + float(end), start_s), end_s)
        found.append(
            WordTiming(text, start_s, end_s_word, getattr(token, "start_char", None), getattr(token, "end_char", None))
        )
    return found


def make_monotonic(words: Iterable[WordTiming]) -> tuple[WordTiming, ...]:
    """No word starts before the previous one ends, and none ends before it starts."""
    ordered: list[WordTiming] = []
    previous_end = 0.0
    for word in words:
        start = max(word.start_s, previous_end)
        end = max(word.end_s, start)
        ordered.append(replace(word, start_s=start, end_s=end))
        previous_end = end
    return tuple(ordered)


class KokoroSynthesizer:
    """``synthesize`` runs on one worker thread; caches are locked since ``check_voice`` comes from other threads."""

    def __init__(
        self,
        model: KModel,
        repo_id: str = weights.REPO_ID,
        cache_dir: str | Path | None = None,
        front_end: FrontEnd | None = None,
    ):
        self.model = model
        self._front_end = front_end
        self.repo_id = repo_id
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._g2p = G2PPipelines(repo_id, model, model.vocab)
        self._single_packs: dict[str, torch.Tensor] = {}
        self._blends: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._should_stop = threading.local()
        self._prepare_lock = threading.Lock()
        self._ahead: OrderedDict[tuple[str, str, TextSettings], Future[PreparedSentence]] = OrderedDict()
        self._ahead_pool: ThreadPoolExecutor | None = None
        self._workers: PreparePool | None = None
        self._warmer: FrontEndWarmer | None = None
        self.prepared_ahead = 0
        """Sentences whose preparation ``synthesize`` found done (or under way) ahead of it."""
        self._install_interrupt_hooks()

    def _install_interrupt_hooks(self) -> None:
        def check(_module: object, _inputs: object) -> None:
            should_stop = getattr(self._should_stop, "check", None)
            if should_stop is not None and should_stop():
                raise SynthesisInterrupted("synthesis stopped: its session was cancelled")

        for module in self.model.modules():
            if type(module).__name__ in INTERRUPT_POINTS:
                module.register_forward_pre_hook(check)

    # ---- construction --------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        device: str | None = None,
        repo_id: str = weights.REPO_ID,
        *,
        cache_dir: str | Path | None = None,
        warm_up: bool = True,
    ) -> KokoroSynthesizer:
        """Loads the model from the Hugging Face cache; raises ``WeightsMissingError`` naming what to fetch."""
        files = weights.require_model_files(repo_id, cache_dir)
        weights.require_spacy_model()
        resolved = select_device(device)
        model = cls._construct_model(repo_id, files)
        model = model.to(resolved).eval()
        synthesizer = cls(model, repo_id, cache_dir, shared_front_end())  # grammars load now, not on a request
        for note in synthesizer.front_end.notes:
            log.warning("%s", note)
        synthesizer.pipeline(DEFAULT_LANGUAGE)  # spaCy + lexicons load now, not on the first request
        if warm_up:
            synthesizer.warm_up()
        log.info("Kokoro loaded on %s from %s", resolved, files.model)
        return synthesizer

    @staticmethod
    def _construct_model(repo_id: str, files: weights.ModelFiles) -> KModel:
        from kokoro import KModel

        try:
            return KModel(repo_id=repo_id, config=str(files.config), model=str(files.model))
        except (RuntimeError, OSError, ValueError, EOFError, KeyError, AssertionError, pickle.UnpicklingError) as exc:
            raise WeightsMissingError(
                f"The Kokoro model in {files.model.parent} could not be loaded ({type(exc).__name__}: {exc}); "
                "the files may be damaged or from another model.",
                f"Delete them and run `{weights.FETCH_COMMAND}`, or `{weights.IMPORT_COMMAND}` with good copies.",
            ) from exc

    @property
    def device(self) -> str:
        return str(self.model.device)

    @property
    def front_end(self) -> FrontEnd:
        if self._front_end is None:
            self._front_end = shared_front_end()
        return self._front_end

    def pipeline(self, lang_code: str) -> KPipeline:
        """The shared-model ``KPipeline`` for a Kokoro language code, built on first use (``G2PPipelines.get``)."""
        return self._g2p.get(lang_code)

    # ---- Synthesizer protocol ------------------------------------------------------------------------

    def synthesize(
        self,
        text: str,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
        settings: TextSettings | None = None,
    ) -> SynthesisResult:
        """``render(prepare(...))``; raises ``SynthesisInterrupted`` when ``should_stop()`` turns true."""
        return self.render(self.prepared(text, voice, settings), voice, speed, should_stop)

    def prepared(self, text: str, voice: str, settings: TextSettings | None = None) -> PreparedSentence:
        """The sentence prepared ahead (``prepare_ahead``), waited for if still under way, or prepared now."""
        ahead = self._take_prepared_ahead(text, voice, settings or DEFAULT_TEXT_SETTINGS)
        return ahead.result() if ahead is not None else self.prepare(text, voice, settings)

    def prepare(self, text: str, voice: str, settings: TextSettings | None = None) -> PreparedSentence:
        """The CPU half: front-end and G2P into pieces of at most 510 phonemes, in the pool when there is one."""
        spec, _pack = self.resolve_voice(voice)
        language = language_of(parse_voice_spec(spec)[0].source)
        if self._workers is not None:
            done = self._workers.submit(text, language, settings or DEFAULT_TEXT_SETTINGS).result()
            return PreparedSentence(text, spec, language, done.spoken, done.pieces)
        # One preparation at a time: the G2P's spaCy pipeline and NeMo's grammars are not made for threads.
        with self._prepare_lock:
            spoken = self.front_end.to_spoken(text, language, settings or DEFAULT_TEXT_SETTINGS)
            pieces = prepare_pieces(self.pipeline(language), spoken, language)
        return PreparedSentence(text, spec, language, spoken, pieces)

    def prepare_ahead(self, text: str, voice: str, settings: TextSettings) -> None:
        """Starts preparing a coming sentence on a thread; ``synthesize`` of the same sentence takes the result."""
        key = (text, voice, settings)
        with self._lock:
            if key in self._ahead:
                return
            if self._ahead_pool is None:
                # With worker processes, a thread per worker only waits for its sentence to come back.
                threads = self._workers.workers if self._workers is not None else 1
                self._ahead_pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="voicedesk-prepare")
            self._ahead[key] = self._ahead_pool.submit(self.prepare, text, voice, settings)
            while len(self._ahead) > MAX_PREPARED_AHEAD:  # sentences of cancelled sessions are never taken
                self._ahead.popitem(last=False)

    def warm(self, text: str, voice: str, settings: TextSettings) -> None:
        """Normalizes a still-arriving sentence's numbers and units off the caller's thread (in the pool when there is
        one); never changes a result."""
        with self._lock:
            if self._warmer is None:
                self._warmer = FrontEndWarmer(self._warm_now)
        self._warmer.hint(text, voice, settings)

    def _warm_now(self, text: str, voice: str, settings: TextSettings) -> None:
        spec, _pack = self.resolve_voice(voice)  # on the warmer's thread: a voice may have to be read from disk
        language = language_of(parse_voice_spec(spec)[0].source)
        workers = self._workers
        if workers is not None:
            workers.warm(text, language, settings)
            return
        self.front_end.warm(text, language, settings)

    @property
    def prepare_workers(self) -> int:
        """Worker processes preparing sentences (0: in-process, one at a time beside the model)."""
        return 0 if self._workers is None else self._workers.workers

    def worker_setup(self) -> WorkerSetup:
        """What a preparation worker needs to make the same pieces as this synthesizer."""
        return WorkerSetup(self.repo_id, frozenset(self.model.vocab))

    def use_prepare_pool(self, pool: PreparePool | None) -> None:
        """Front-end and G2P from now on in ``pool``'s processes (None: in-process). Call it before serving."""
        with self._lock:
            self._workers = pool
            # A new warmer: the old one remembers what it warmed in the other memo (the pool's or this process's).
            self._warmer = None
            if self._ahead_pool is not None:
                self._ahead_pool.shutdown(wait=False)
                self._ahead_pool = None

    def _take_prepared_ahead(self, text: str, voice: str, settings: TextSettings) -> Future[PreparedSentence] | None:
        with self._lock:
            ahead = self._ahead.pop((text, voice, settings), None)
        if ahead is not None:
            self.prepared_ahead += 1
        return ahead

    def render(
        self,
        prepared: PreparedSentence,
        voice: str,
        speed: float,
        should_stop: Callable[[], bool] | None = None,
    ) -> SynthesisResult:
        """The model half: one forward per piece, its word timings carrying their source spans."""
        if not speed > 0:
            raise VoicedeskError(ErrorCode.BAD_SPEED, f"speed must be above 0; got {speed!r}.")
        _spec, pack = self.resolve_voice(voice)
        self._should_stop.check = should_stop
        try:
            return self._render(prepared, pack, speed)
        finally:
            self._should_stop.check = None

    def _render(self, prepared: PreparedSentence, pack: torch.Tensor, speed: float) -> SynthesisResult:
        from kokoro import KPipeline

        pack = pack.to(self.model.device)
        outputs = (KPipeline.infer(self.model, piece.phonemes, pack, speed * piece.rate) for piece in prepared.pieces)
        return assemble_result(prepared, outputs)

    def check_voice(self, voice: str) -> str:
        """Loads (and caches) the voice and its language's pipeline; returns the canonical spec."""
        spec, _pack = self.resolve_voice(voice)
        self.pipeline(language_of(parse_voice_spec(spec)[0].source))
        return spec

    def list_voices(self) -> list[str]:
        """Voices usable by name on this machine (downloaded, and their language set up)."""
        return [v.name for v in self.voice_catalog() if v.usable]

    def voice_catalog(self) -> list[VoiceInfo]:
        """Every Kokoro-82M voice (downloaded or not) and any other voice pack found in the cache."""
        local = set(weights.local_voice_names(self.repo_id, self._cache_dir))
        ready = languages.ready_languages()
        names = [(n, True) for n in KNOWN_VOICES] + [(n, False) for n in sorted(local - set(KNOWN_VOICES))]
        return [
            VoiceInfo(n, LANGUAGES[language_of(n)], n in local, known, language_of(n) in ready) for n, known in names
        ]

    def warm_up(self) -> None:
        """One short synthesis, so kernels, G2P and allocator are ready before the first real request."""
        import torch

        neutral = torch.zeros(VOICE_PACK_SHAPE, dtype=torch.float32)
        spoken = self.front_end.to_spoken(WARM_UP_TEXT, DEFAULT_LANGUAGE, DEFAULT_TEXT_SETTINGS)
        pieces = prepare_pieces(self.pipeline(DEFAULT_LANGUAGE), spoken, DEFAULT_LANGUAGE)
        self._render(PreparedSentence(WARM_UP_TEXT, "", DEFAULT_LANGUAGE, spoken, pieces), neutral, 1.0)

    # ---- voices --------------------------------------------------------------------------------------

    def resolve_voice(self, voice: str) -> tuple[str, torch.Tensor]:
        """The canonical spec and its voice pack (blends are the weighted sum of their packs)."""
        parts = parse_voice_spec(voice)
        spec = format_voice_spec(parts)
        with self._lock:
            cached = self._blends.get(spec) if len(parts) > 1 else self._single_packs.get(spec)
            if cached is not None and len(parts) > 1:
                self._blends.move_to_end(spec)
        if cached is not None:
            return spec, cached
        packs = [self._single_pack(part.source) for part in parts]
        if len(parts) == 1:
            return spec, packs[0]
        blended = parts[0].weight * packs[0]
        for part, pack in zip(parts[1:], packs[1:], strict=True):
            blended = blended + part.weight * pack
        with self._lock:
            self._blends[spec] = blended
            while len(self._blends) > MAX_CACHED_BLENDS:
                self._blends.popitem(last=False)
        return spec, blended

    def _single_pack(self, source: str) -> torch.Tensor:
        with self._lock:
            cached = self._single_packs.get(source)
        if cached is not None:
            return cached
        import torch

        path = self._voice_path(source)
        try:
            raw = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many kinds for a bad file; all mean "not a voice pack"
            raise VoiceError(f"Voice {source!r} could not be loaded from {path}: {exc}.") from exc
        pack = check_voice_pack(raw, f"Voice {source!r} ({path})")
        with self._lock:
            return self._single_packs.setdefault(source, pack)

    def _voice_path(self, source: str) -> Path:
        if is_path_spec(source):
            path = Path(source)
            if not path.is_file():
                raise VoiceError(f"Voice file {source} does not exist; give the path to a .pt voice pack.")
            return path
        path = weights.cached_file(weights.voice_file_name(source), self.repo_id, self._cache_dir)
        if path is None:
            raise self._missing_voice(source)
        return path

    def _missing_voice(self, name: str) -> VoiceError:
        """What is wrong in the message; the fixing commands in the advice, which a remote server's client does not
        get."""
        here = self.list_voices()
        here_text = ", ".join(here) if here else "none yet"
        if name in KNOWN_VOICES:
            return VoiceError(
                f"Voice {name!r} is a Kokoro voice but is not downloaded. Voices here: {here_text}.",
                f"Get it with `{weights.FETCH_COMMAND} --voices {name}` "
                f"(on an offline machine `{weights.IMPORT_COMMAND}`).",
            )
        close = difflib.get_close_matches(name, [*here, *KNOWN_VOICES], n=1)
        did_you_mean = f" Did you mean {close[0]!r}?" if close else ""
        return VoiceError(
            f"Unknown voice {name!r}.{did_you_mean} Voices here: {here_text}.",
            "Other Kokoro voices (e.g. af_bella, am_michael, bf_isabella) come with "
            f"`{weights.FETCH_COMMAND} --voices NAME[,NAME...]` or `--voices all`; a voice pack of your own "
            "can be given as the path to its .pt file.",
        )


def assemble_result(prepared: PreparedSentence, outputs: Iterable[Any]) -> SynthesisResult:
    """The sentence from its pieces' model output, in order: audio with SSML pauses between, word timings."""
    from kokoro import KPipeline

    parts: list[np.ndarray] = []
    words: list[WordTiming] = []
    offset = 0
    for piece, output in zip(prepared.pieces, outputs, strict=True):
        audio = output.audio.detach().cpu().numpy().astype(np.float32, copy=False).reshape(-1)
        if piece.tokens and output.pred_dur is not None:
            tokens = [SimpleNamespace(**_token_fields(t)) for t in piece.tokens]
            KPipeline.join_timestamps(tokens, output.pred_dur)
            start_s, end_s = offset / SAMPLE_RATE, (offset + len(audio)) / SAMPLE_RATE
            words.extend(word_timings(tokens, start_s, end_s))
        parts.append(audio)
        offset += len(audio)
        if piece.pause_after_s > 0:
            silence = np.zeros(round(piece.pause_after_s * SAMPLE_RATE), dtype=np.float32)
            parts.append(silence)
            offset += len(silence)
    audio = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return SynthesisResult(audio=audio, words=make_monotonic(words), phonemes=prepared.phonemes)


def _token_fields(token: object) -> dict[str, object]:
    """A prepared token as the mutable object ``KPipeline.join_timestamps`` fills in (``start_ts``/``end_ts``)."""
    return {
        "text": token.text,  # type: ignore[attr-defined]
        "phonemes": token.phonemes,  # type: ignore[attr-defined]
        "whitespace": token.whitespace,  # type: ignore[attr-defined]
        "start_char": token.start_char,  # type: ignore[attr-defined]
        "end_char": token.end_char,  # type: ignore[attr-defined]
        "start_ts": None,
        "end_ts": None,
    }
