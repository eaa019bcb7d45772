"""A server whose front-end and G2P run in worker processes (``serve --prepare-workers 1``), through a real
websockets client beside the in-process server: the same sentences (phonemes, lengths) and the same error frame for
text that cannot be read; stopping the server leaves no worker behind."""

from __future__ import annotations

import multiprocessing

from tests.support.endpoint import bidi, receive_until
from voicedesk.engine.protocol import SynthesizeRequest, encode_command

GOOD = "It is 21°C at 3:30 pm."  # NeMo reads both: prepared by the worker's front-end, not passed through
BROKEN = "<speak><s>Unclosed</speak>"


async def _spoken(server) -> tuple[list[dict], list[dict]]:  # type: ignore[no-untyped-def]
    async with bidi(server) as ws:
        await ws.send(encode_command(SynthesizeRequest(GOOD, voice="af_heart", request_id="good")))
        good = await receive_until(ws, "synthesis_complete")
        await ws.send(encode_command(SynthesizeRequest(BROKEN, voice="af_heart", request_id="broken")))
        broken = await receive_until(ws, "synthesis_complete")
    ends = [{k: v for k, v in e.items() if k not in ("elapsed_s", "synthesis_s")} for e in good.of_type("sentence_end")]
    return ends, broken.of_type("error")


async def test_workers_give_the_client_the_same_sentences_and_errors(server, make_server):
    pooled = make_server(prepare_workers=1, idle_timeout_s=120)
    runtime = pooled.app.state.runtime
    assert runtime.synthesizer.prepare_workers == 1
    pids = runtime._prepare_pool.worker_pids()
    in_workers = runtime._prepare_pool.stages.count
    here_ends, here_errors = await _spoken(server)
    there_ends, there_errors = await _spoken(pooled)
    assert runtime._prepare_pool.stages.count >= in_workers + 2  # both sentences were prepared in the worker
    assert there_ends == here_ends and there_ends
    assert there_errors == here_errors and there_errors[0]["code"] == "bad_text"
    pooled.stop()
    assert runtime.synthesizer.prepare_workers == 0  # the shared synthesizer is back to in-process
    assert pids and not [p for p in multiprocessing.active_children() if p.pid in pids]
