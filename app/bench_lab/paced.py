"""The paced stand-in synthesizer behind a LocalEngine, as an engine opener for lab scenarios (``--stand-in``)."""

from __future__ import annotations


def paced_opener(realtime_factor: float):
    from voicedesk.engine.local import LocalEngine
    from voicedesk.engine.paced_synth import PacedSynthesizer

    synthesizer = PacedSynthesizer(realtime_factor)

    async def opener(_spec):
        return LocalEngine(synthesizer)

    return opener
