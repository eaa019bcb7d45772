"""Wyoming's ``describe`` promises exactly the languages this machine can speak (Home Assistant users pick a
language first): a voice whose language is not set up is left out, even when asked for by name."""

from __future__ import annotations

import sys

import pytest
import torch
from wyoming.info import Describe, Info

from tests.endpoint.wyoming.conftest import client_of, read_until, running_wyoming
from tests.support.fake_hf_cache import random_voice_pack
from voicedesk.endpoint.wyoming.catalog import WYOMING_LANGUAGES
from voicedesk.engine.local import LocalEngine
from voicedesk.engine.model.kokoro_synth import KokoroSynthesizer
from voicedesk.engine.model.model_import import write_to_cache
from voicedesk.engine.model.weights import voice_file_name

pytestmark = pytest.mark.slow

ONE_VOICE_PER_LANGUAGE = ("af_heart", "bf_emma", "ef_dora", "ff_siwis", "hf_alpha", "if_sara", "jf_alpha",
                          "pf_dora", "zf_xiaobei")  # fmt: skip


async def test_describe_lists_exactly_the_languages_that_work(synthesizer, tmp_path, monkeypatch) -> None:
    packs = {}
    for index, name in enumerate(ONE_VOICE_PER_LANGUAGE):
        packs[voice_file_name(name)] = path = tmp_path / f"{name}.pt"
        torch.save(random_voice_pack(200 + index), path)
    cache = tmp_path / "hub"
    write_to_cache(packs, synthesizer.repo_id, cache)  # as `voicedesk models import` files them
    monkeypatch.setitem(sys.modules, "jieba", None)  # Mandarin's G2P is not installed on this machine
    machine = KokoroSynthesizer(synthesizer.model, synthesizer.repo_id, cache_dir=cache)
    assert set(machine.list_voices()) == set(ONE_VOICE_PER_LANGUAGE) - {"zf_xiaobei"}

    engine = LocalEngine(machine)
    try:
        # Every voice asked for by name (as with --voices): the probe through the engine drops the Mandarin one.
        async with running_wyoming(engine, candidates=ONE_VOICE_PER_LANGUAGE) as server, client_of(server) as client:
            await client.write_event(Describe().event())
            [info_event] = await read_until(client, "info")
            program = Info.from_event(info_event).tts[0]
    finally:
        await engine.aclose()
    spoken = {lang for voice in program.voices for lang in voice.languages}
    assert spoken == {tag for code, tag in WYOMING_LANGUAGES.items() if code != "z"}
    assert "zf_xiaobei" not in {v.name for v in program.voices}
