"""A streamed sentence is warmed while it arrives: through the real local engine (real Kokoro, random weights), the
driver hands the synthesizer the text the chunker still holds, and its numbers reach NeMo before the sentence is
released; the released sentence then finds them done and is spoken as it would be without warming."""

from __future__ import annotations

import asyncio

from voicedesk.engine.events import Error, Flushed, SentenceFinished, SentenceStarted, SessionConfig
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.request_fields import MAX_BUFFER_DELAY_MS
from voicedesk.engine.text.frontend.memo import MemoNormalize

EVENT_WAIT_S = 180.0
"""A guard against hanging forever on a busy machine, not a speed requirement."""


async def test_the_sentence_still_arriving_is_warmed_before_it_is_released(synthesizer) -> None:
    memo = synthesizer.front_end.spoken_forms["a"].normalize
    assert isinstance(memo, MemoNormalize)
    memo.clear()
    engine = LocalEngine(synthesizer)
    # no quiet release: the fragment stays held until the rest arrives, whatever the machine's load
    session = await engine.open_session(SessionConfig(voice="af_heart", max_buffer_delay_ms=MAX_BUFFER_DELAY_MS))
    events = session.events()
    await session.send_text("It hit 37°C in the garage this ")  # no clause mark: the chunker holds them
    warmer = synthesizer._warmer
    assert warmer is not None
    assert await asyncio.to_thread(warmer.wait_idle, EVENT_WAIT_S)
    # the number with four words of context after it: nothing arriving later changes that stretch
    assert memo.cached("It hit 37°C in the garage this") == "It hit thirty seven degrees Celsius in the garage this"
    calls = memo.misses
    await session.send_text("morning, so it is warm.")
    await session.flush()
    seen = []
    while not seen or not isinstance(seen[-1], Flushed):
        seen.append(await asyncio.wait_for(anext(events), EVENT_WAIT_S))
    assert not [e for e in seen if isinstance(e, Error)]
    finished = [e for e in seen if isinstance(e, SentenceFinished)]
    assert finished and memo.misses == calls  # the released sentence did not reach NeMo again
    texts = {e.seq: e.text for e in seen if isinstance(e, SentenceStarted)}
    shown = {texts[e.seq][w.start_char : w.end_char] for e in finished for w in e.words if w.start_char is not None}
    assert "37°C" in shown
    await session.close()
    await engine.aclose()
