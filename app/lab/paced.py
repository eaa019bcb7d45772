"""The paced stand-in synthesizer behind a LocalEngine, as an engine opener for lab scenarios (``--stand-in``)."""

from __future__ import annotations


def paced_opener(realtime_factor: float):
    from voicedesk.app.lab.paced_synth import PacedSynthesizer
    from voicedesk.engine.local import LocalEngine

    synthesizer = PacedSynthesizer(realtime_factor)

    async def opener(_spec):
        return LocalEngine(synthesizer)

    return opener
