"""A newcomer's first sentence stops the call of a session far ahead of its listener, over real sockets (a real
uvicorn server with the test-only paced synthesizer, real ``websockets`` clients): what is checked is the order of
the model's calls and that neither client loses anything, not how fast (``voicedesk bench abuse --only flow``)."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from tests.support.endpoint import GUARD_S, receive_until
from tests.support.fast_synth import start_fast_server
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.engine.protocol import BIDI_PATH

WORDS = [f"word{i}" for i in range(150)]
"""About a dozen calls of 100 characters (6 s of audio, 0.3 s of model time each at 20×)."""
NEWCOMER = "Hello there."


async def test_a_first_sentence_stops_an_agent_far_ahead_which_still_gets_every_word_in_order() -> None:
    synthesizer = PacedSynthesizer(20.0)
    running = start_fast_server(synthesizer)
    url = running.ws_url + BIDI_PATH
    try:
        async with connect(url, open_timeout=GUARD_S) as agent, connect(url, open_timeout=GUARD_S) as newcomer:
            for word in WORDS:
                await agent.send(json.dumps({"type": "text", "text": word + " "}))
            await agent.send(json.dumps({"type": "flush", "request_id": "end"}))
            agent_done = asyncio.create_task(receive_until(agent, "flushed"))
            # Three of the agent's calls done (its listener now has far more audio in hand than a call costs) and
            # a fourth on the model: the newcomer's first sentence arrives now.
            started = await asyncio.to_thread(synthesizer.wait_for_call, lambda _: len(synthesizer.calls) >= 4, GUARD_S)
            assert started is not None
            await newcomer.send(json.dumps({"text": NEWCOMER, "request_id": "new"}))
            served = await receive_until(newcomer, "synthesis_complete")
            agent_frames = await agent_done
        assert not served.of_type("error") and served.audio
        assert not agent_frames.of_type("error") and agent_frames.of_type("flushed")[0]["request_id"] == "end"
        spoken = " ".join(m["text"] for m in agent_frames.of_type("sentence_start")).split()
        assert spoken == WORDS  # nothing lost or repeated by the stop
        calls = [(c.text, c.interrupted, c.finished) for c in synthesizer.calls]
        stopped = next(i for i, call in enumerate(calls) if call[1])
        # The stopped call, then the newcomer's, then the stopped one again, whole.
        assert calls[stopped + 1] == (NEWCOMER, False, True)
        assert calls[stopped + 2] == (calls[stopped][0], False, True)
        assert [text for text, _, finished in calls if finished and text != NEWCOMER] == [
            m["text"] for m in agent_frames.of_type("sentence_start")
        ]
        assert running.runtime.scheduler.preemptions == 1
    finally:
        running.stop()
