"""The commands people run: `voicedesk say` pieces that decide whether long input is spoken whole, and `voicedesk`
on a machine without a display."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicedesk.app.say_cli import text_slices


@given(st.text(max_size=9000), st.integers(min_value=4, max_value=3000))
def test_slices_keep_every_character_in_order_and_stay_under_the_size(text, size):
    pieces = text_slices(text, size)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= size for p in pieces)


def test_slices_cut_at_whitespace_when_there_is_some():
    pieces = text_slices("word " * 1000, 2000)
    assert all(p.endswith(" ") for p in pieces[:-1])


@pytest.mark.slow
def test_long_input_is_paced_and_spoken_in_full(monkeypatch, tmp_path, capsys):
    """With tiny limits, text far beyond them still comes out whole: slices wait for speech to catch up."""
    import wave

    from voicedesk.app import say_cli
    from voicedesk.engine.commands import main

    monkeypatch.setattr(say_cli, "SLICE_CHARS", 24)
    monkeypatch.setattr(say_cli, "AHEAD_CHARS", 30)
    text = "One two three four. Five six seven eight. Nine ten eleven twelve. Thirteen fourteen done."
    out = tmp_path / "long.wav"
    assert main(["say", "--device", "cpu", "--out", str(out), text]) == 0
    log = capsys.readouterr().err
    assert "error" not in log
    with wave.open(str(out)) as wav:
        frames = wav.getnframes()
    # Every sentence was spoken: the log has one line per sentence and the WAV holds all of their audio.
    durations = [float(line.split("] ")[1].split(" s")[0]) for line in log.splitlines() if line.startswith("  [")]
    assert len(durations) >= 4
    assert frames == pytest.approx(sum(durations) * 24_000, abs=0.005 * 24_000 * len(durations))  # log rounds to 10 ms


def test_the_app_on_a_headless_machine_says_what_to_do_instead_of_aborting():
    from voicedesk.app.main import require_display
    from voicedesk.engine.errors import VoicedeskError

    with pytest.raises(VoicedeskError, match="voicedesk say"):
        require_display({}, "linux")
    require_display({"DISPLAY": ":0"}, "linux")
    require_display({"QT_QPA_PLATFORM": "offscreen"}, "linux")
    require_display({}, "darwin")


HEAVY_MODULES = ("torch", "kokoro", "PySide6", "starlette", "uvicorn", "boto3", "botocore", "awscrt", "av", "soxr")


def test_help_lists_every_command_and_stays_import_light():
    """``voicedesk --help`` builds every command's parser without importing a heavy library (it must stay fast)."""
    import subprocess
    import sys

    probe = (
        "import sys; from voicedesk.engine.commands import build_parser; parser = build_parser();"
        "text = parser.format_help(); print(text);"
        f"heavy = [m for m in {HEAVY_MODULES!r} if m in sys.modules]; print('HEAVY', heavy)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert "HEAVY []" in result.stdout, result.stdout.splitlines()[-1]
    for command in ("app", "say", "models", "serve", "wyoming", "bench", "sagemaker-local", "deploy"):
        assert f"    {command}" in result.stdout, command


def test_every_speaking_command_takes_the_same_engine_options():
    from voicedesk.engine.commands import build_parser

    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    bench = next(a for a in subcommands["bench"]._actions if a.dest == "bench").choices
    for parsed in (subcommands["say"], subcommands["wyoming"], bench["streaming"], bench["ab"]):
        options = {s for action in parsed._actions for s in action.option_strings}
        expected = {"--engine", "--device", "--token", "--region", "--profile", "--variant", "--voice"}
        assert expected <= options, parsed.prog
        assert "--max-buffer-delay" in options, parsed.prog


def test_alsa_chatter_is_kept_out_of_the_terminal_and_everything_else_gets_through():
    """ALSA prints underruns on file descriptor 2 from PortAudio's audio thread: a real fd-level write is filtered."""
    import subprocess
    import sys

    script = (
        "import os, sys\n"
        "from voicedesk.app.stderr_filter import StderrFilter\n"
        "f = StderrFilter().start()\n"
        "os.write(2, b'ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred\\n')\n"
        "print('voicedesk: first audio after 0.4 s', file=sys.stderr, flush=True)\n"
        "os.write(2, b'ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred\\nno newline at the end')\n"
        "f.stop()\n"
        "print('dropped', f.dropped)\n"
        "raise SystemExit('a real error still shows')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "ALSA lib" not in result.stderr
    assert "voicedesk: first audio after 0.4 s" in result.stderr
    assert "no newline at the end" in result.stderr
    assert "a real error still shows" in result.stderr
    assert "dropped 2" in result.stdout


def test_a_late_completion_of_a_cancelled_future_is_not_printed_but_other_errors_are():
    import subprocess
    import sys

    script = (
        "from concurrent.futures import Future, InvalidStateError\n"
        "from voicedesk.app.stderr_filter import quiet_late_completions\n"
        "quiet_late_completions()\n"
        "class Late:\n"
        "    def __init__(self, error): self.error = error\n"
        "    def __del__(self): raise self.error\n"
        "future = Future(); future.cancel()\n"
        "try:\n"
        "    future.set_result(1)\n"
        "except InvalidStateError as exc:\n"
        "    late = exc\n"
        "Late(late)\n"
        "Late(ValueError('a real bug'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "InvalidStateError" not in result.stderr
    assert "ValueError: a real bug" in result.stderr
