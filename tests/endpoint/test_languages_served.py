"""``GET /v1/audio/voices`` tells each language's readiness, through a real server and HTTP client."""

from __future__ import annotations

import sys

import httpx

from voicedesk.engine.model.languages import LANGUAGES

GUARD_S = 60


def test_the_voice_list_says_which_languages_are_ready_and_how_to_set_up_the_others(server, monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # as on a server without Mandarin's G2P
    response = httpx.get(server.http_url + "/v1/audio/voices", timeout=GUARD_S)
    assert response.status_code == 200
    languages = {entry["tag"]: entry for entry in response.json()["languages"]}
    assert list(languages) == [lang.tag for lang in LANGUAGES.values()]
    assert all(languages[tag]["ready"] for tag in languages if tag != "zh")
    mandarin = languages["zh"]
    assert mandarin["ready"] is False and mandarin["missing"] == ["Python module jieba"]
    assert mandarin["fix"].startswith("voicedesk models fetch --languages zh")


async def test_the_websocket_engine_shows_the_voices_of_a_language_the_server_has_not_set_up(server, monkeypatch):
    from voicedesk.engine.clients.websocket import WebSocketEngine, WebSocketSettings, normalize_url

    monkeypatch.setitem(sys.modules, "jieba", None)  # as on a server without Mandarin's G2P
    voices = await WebSocketEngine(WebSocketSettings(url=normalize_url(server.ws_url))).voices()
    mandarin = [voice for voice in voices if voice.name.startswith("z")]
    assert mandarin, "the Mandarin voices are listed, not left out"
    assert all(not voice.language_ready and not voice.usable for voice in mandarin)
    english = [voice for voice in voices if voice.name.startswith("a")]
    assert english and all(voice.usable for voice in english)
