"""``voicedesk bench lab|…``: bad options get a clear error before anything is loaded; small pure helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicedesk.app.lab.main import parse_levels, sentences_of
from voicedesk.app.lab.transport import http_url_of
from voicedesk.engine.commands import main
from voicedesk.engine.errors import VoicedeskError


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["bench", "lab", "--scenarios", "streaming,nope"],
            "--scenarios takes names from cold,streaming,first-cut,seed",
        ),
        (["bench", "server", "--sessions", "x"], "--sessions takes positive integers like 1,2,4; got '1,x'."),
        (["bench", "streaming", "--repeat", "0"], "--repeat must be at least 1; got 0."),
        (["bench", "streaming", "--tokens-per-s", "0"], "--tokens-per-s must be above 0"),
        (["bench", "concurrency", "--sessions", "1,x"], "--sessions takes positive integers like 1,2,4; got '1,x'."),
        (["bench", "concurrency", "--sessions", "0,2"], "--sessions takes positive integers"),
        (["bench", "ab", "--engine-b", "carrier-pigeon"], "Unknown engine 'carrier-pigeon'"),
        (["bench", "seed", "--engine", "websocket"], "The websocket engine needs a ws:// or wss:// URL"),
        (["bench", "concurrency", "--arrival", "sideways"], "--arrival takes spread, together or spread,together"),
        (["bench", "capacity", "--target-ms", "0"], "--target-ms must be above 0; got 0."),
        (["bench", "capacity", "--max-sessions", "0"], "--max-sessions must be at least 1; got 0."),
        (["bench", "server", "--arrivals", "all"], "--arrival takes spread, together or spread,together"),
        (["bench", "capacity", "--serve", "--engine", "sagemaker", "x"], "--serve starts an endpoint around the"),
    ],
)
def test_bad_options_are_refused_with_what_to_do(argv, said, capsys):
    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_a_missing_or_empty_text_file_is_refused(tmp_path: Path, capsys):
    assert main(["bench", "seed", "--text-file", str(tmp_path / "absent.txt")]) == 2
    assert "Cannot read --text-file" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    assert main(["bench", "seed", "--text-file", str(empty)]) == 2
    assert "is empty: give it the agent's reply" in capsys.readouterr().err


def test_every_scenario_is_a_bench_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    for name in ("lab", "streaming", "seed", "ab", "concurrency", "transport", "cold", "capacity", "server"):
        assert f"    {name}" in out


def test_seed_sentences_from_a_text_file_are_its_first_three_whole_sentences():
    text = "Sure, I can help. The lights are off now. The door is locked. It will rain."
    # No early first fragment here: each seed request is a whole sentence.
    assert sentences_of(text) == ("Sure, I can help.", "The lights are off now.", "The door is locked.")
    assert sentences_of("Just one line without an end") == ("Just one line without an end",)


def test_levels_are_sorted_and_deduplicated():
    assert parse_levels("4, 1,2,2") == (1, 2, 4)
    with pytest.raises(VoicedeskError):
        parse_levels("")


@pytest.mark.parametrize(
    ("target", "url"),
    [
        ("ws://127.0.0.1:8080/invocations-bidirectional-stream", "http://127.0.0.1:8080"),
        ("wss://box.lan:8443", "https://box.lan:8443"),
        ("http://gpu-box:8080/", "http://gpu-box:8080"),
        ("gpu-box:8080", "http://gpu-box:8080"),
    ],
)
def test_the_transport_scenario_finds_the_http_side_of_a_websocket_url(target, url):
    assert http_url_of(target) == url
