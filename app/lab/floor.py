"""The latency floor's measured part: one bare model forward of the first fragment (see ``engine.measure.metrics``).

Only an engine whose model runs in this process can be measured this way (the local engine exposes its
synthesizer); for a remote engine the floor is reported as absent rather than guessed from another machine.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from voicedesk.engine.events import SAMPLE_RATE
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.measure.metrics import first_audible_sample, floor_ratio, latency_floor_s
from voicedesk.engine.measure.timeline import UtteranceTimeline
from voicedesk.engine.model.voices import language_of, parse_voice_spec


@dataclass(frozen=True, slots=True)
class BareForward:
    text: str
    seconds: float
    """Wall time of one ``KPipeline`` call on the text (G2P + model forward), nothing of ours around it."""
    leading_silence_s: float | None
    """Its audio's leading silence (onset rule); None when nothing in it is audible."""


def bare_forward(synthesizer: Any, text: str, voice: str) -> BareForward:
    """Blocking: call it off the event loop, while the engine is idle."""
    spec, pack = synthesizer.resolve_voice(voice)
    pipeline = synthesizer.pipeline(language_of(parse_voice_spec(spec)[0].source))
    started = time.perf_counter()
    pieces = [r.audio for r in pipeline(text, voice=pack, speed=1.0) if r.audio is not None]
    seconds = time.perf_counter() - started
    audio = np.concatenate([p.detach().cpu().numpy().reshape(-1) for p in pieces]) if pieces else np.zeros(0)
    onset = first_audible_sample(audio)
    return BareForward(text, seconds, None if onset is None else onset / SAMPLE_RATE)


def first_fragment(text: str) -> str | None:
    """The first chunk the session's chunker makes of ``text`` streamed token by token (what the floor models)."""
    from voicedesk.app.sources.scripted import tokenize
    from voicedesk.engine.text.chunking.chunker import IncrementalSentenceChunker

    chunker = IncrementalSentenceChunker()
    for token in tokenize(text):
        chunks = chunker.feed(token)
        if chunks:
            return chunks[0]
    return chunker.flush()


async def measure_bare_forward(engine: Any, text: str | None, voice: str) -> BareForward | str:
    """One bare forward of ``text`` on the engine's own model, or why there is none."""
    if not isinstance(engine, LocalEngine):
        return "the model does not run in this process (remote engine)"
    synthesizer = engine.synthesizer
    if not text:
        return "no first fragment"
    return await asyncio.to_thread(bare_forward, synthesizer, text, voice)


def floor_figures(timeline: UtteranceTimeline, forward: BareForward | str) -> dict[str, Any]:
    """The floor and TTFA ÷ floor for one utterance; ``available`` False (with the reason) when not measurable."""
    if isinstance(forward, str):
        return {"available": False, "why": forward}
    first = next((s for s in timeline.sentences if s.text), None)
    if first is None or first.chunk_released_at_s is None:
        return {"available": False, "why": "no first fragment was recorded"}
    if first.text != forward.text:
        return {"available": False, "why": f"the first fragment was {first.text!r}, not {forward.text!r}"}
    ttfa = timeline.first_audible_at_s
    if ttfa is None or forward.leading_silence_s is None:
        return {"available": False, "why": "no audible sample in the utterance or in the bare forward's audio"}
    arrival = first.chunk_released_at_s
    return {
        "available": True,
        "fragment": first.text,
        "fragment_arrival_s": arrival,
        "bare_forward_s": forward.seconds,
        "leading_silence_s": forward.leading_silence_s,
        "floor_s": latency_floor_s(arrival, forward.seconds, forward.leading_silence_s),
        "ttfa_s": ttfa,
        "ratio": floor_ratio(ttfa, arrival, forward.seconds, forward.leading_silence_s),
    }
