"""``voicedesk phonemes``: stdout is exactly the phoneme strings the model receives, one line per model call."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from voicedesk.engine.commands import main


def test_stdout_is_one_line_per_model_call_and_nothing_else(speaker, capsys, text_grammars):
    text = "Outside it is -5°C tonight. Call Siobhan at 3:07 PM!"
    assert main(["phonemes", text]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines == [speaker.phonemes("Outside it is -5°C tonight."), speaker.phonemes("Call Siobhan at 3:07 PM!")]
    assert "mˈInəs fˈIv dəɡɹˈiz" in lines[0]
    assert err == ""


def test_lexicon_file_stdin_and_explain(tmp_path, capsys, monkeypatch, text_grammars):
    lexicon = tmp_path / "names.json"
    lexicon.write_text(json.dumps([{"word": "Siobhan", "phonemes": "ʃɪvˈɔn"}]), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO("Siobhan set it to 21°C."))
    assert main(["phonemes", "-", "--voice", "bf_emma", "--lexicon", str(lexicon), "--explain"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and "ʃɪvˈɔn" in out
    assert "spoken: [Siobhan](/ʃɪvˈɔn/) set it to twenty one degrees Celsius." in err
    assert "nemo: " in err and "lexicon phonemes: 'Siobhan' -> 'ʃɪvˈɔn'" in err


def test_a_bad_lexicon_entry_is_named(tmp_path, capsys):
    lexicon = tmp_path / "names.json"
    lexicon.write_text(json.dumps([{"word": "Siobhan", "phonemes": "shivawn!"}]), encoding="utf-8")
    assert main(["phonemes", "Hi", "--lexicon", str(lexicon)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "lexicon entry 0 ('Siobhan')" in err and "names.json" in err


# One fresh process runs ``voicedesk phonemes`` in turn for each of these (a first import, logging set up anew); each
# G2P library is first imported by its own call. One process, not three: each start re-imports torch and kokoro.
FRESH = (
    ("jf_alpha", "今日は25人です。"),
    ("zf_xiaobei", "我用Google搜索。"),
    ("hf_alpha", "मैं Google पर हूँ। 15/03/2025"),
)
FRESH_PROBE = """
import sys
from voicedesk.engine.commands import main
for voice, text in zip(sys.argv[1::2], sys.argv[2::2]):
    for stream in (sys.stdout, sys.stderr):
        print("=== voice", voice, file=stream, flush=True)
    code = main(["phonemes", "--voice", voice, text])
    sys.stdout.flush()
    print("=== exit", code, file=sys.stderr, flush=True)
"""


@pytest.fixture(scope="module")
def fresh_phonemes(text_grammars) -> dict[str, tuple[int, str, str]]:
    """voice: (exit code, stdout, stderr) of its call in the fresh process."""
    said = subprocess.run(
        [sys.executable, "-c", FRESH_PROBE, *(part for case in FRESH for part in case)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert said.returncode == 0, said.stderr
    outs, errs = said.stdout.split("=== voice ")[1:], said.stderr.split("=== voice ")[1:]
    assert len(outs) == len(errs) == len(FRESH), said.stdout + said.stderr
    calls = {}
    for out, err in zip(outs, errs, strict=True):
        voice, out = out.split("\n", 1)
        err, code = err.split("\n", 1)[1].rsplit("=== exit ", 1)
        calls[voice] = (int(code), out, err)
    return calls


def test_notices_a_g2p_library_prints_on_import_stay_off_stdout(fresh_phonemes):
    # pyopenjtalk-plus prints its "ONNX Runtime is not installed" notice once, when first imported (FRESH's first).
    code, out, err = fresh_phonemes["jf_alpha"]
    assert code == 0, err
    assert out.splitlines() == ["kʲoː βa ɲiʥɨːɡoɲiɴ desɨ."]  # 25人 as Open JTalk reads it


def test_phonemes_chunks_as_a_session_with_that_voice_does(capsys):
    """A long Japanese text: cut where the Japanese G2P's phonemes would fill a model call, not the English
    estimate's (which made 5 calls of it instead of 3)."""
    from voicedesk.engine.model.phonemes_cli import chunks_of

    text = "今日はいい天気ですね、明日も晴れるでしょうか、週末は家族と一緒に海へ行く予定なので、"
    text = (text + "とても楽しみにしています。") * 2
    assert main(["phonemes", "--voice", "jf_alpha", text]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(chunks_of(text, "j")) < len(chunks_of(text, None))


def test_the_g2p_libraries_do_not_log_on_every_call(fresh_phonemes):
    """jieba logged its dictionary build, phonemizer a warning per espeak-ng call that switches language."""
    for voice in ("zf_xiaobei", "hf_alpha"):
        code, out, err = fresh_phonemes[voice]
        assert code == 0, err
        assert not [line for line in err.splitlines() if "jieba" in line or "phonemizer" in line], err
        assert out.strip()


def test_explain_shows_the_spoken_form_of_another_language(capsys):
    assert main(["phonemes", "--voice", "ef_dora", "--explain", "Cuesta 3,20 € el 15/03/2025."]) == 0
    err = capsys.readouterr().err
    assert "spoken: Cuesta tres euros con veinte el quince de marzo de dos mil veinticinco." in err


def test_lines_mode_answers_each_line_of_stdin_on_a_line_of_its_own(speaker, capsys, monkeypatch, text_grammars):
    rooms = [f"Room {n} is warm." for n in range(40)]
    lines = ["It is -5°C.", "", "It is very cold tonight. Call me at 3:07 PM!", *rooms]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["phonemes", "-", "--lines"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(lines)
    assert out[0] == speaker.phonemes("It is -5°C.") and out[1] == ""
    assert out[2].split("\t") == [speaker.phonemes("It is very cold tonight."), speaker.phonemes("Call me at 3:07 PM!")]
    assert out[-1] == speaker.phonemes("Room 39 is warm.")


def test_lines_mode_reads_stdin_only(capsys):
    assert main(["phonemes", "Hi", "--lines"]) == 2
    assert "--lines reads its texts from stdin" in capsys.readouterr().err


def test_an_english_preview_loads_neither_kokoro_nor_torch_and_says_the_same(speaker, text_grammars):
    text = "Outside it is -5°C tonight. " + "The lights in the hall are on and the heating is at 21°C. " * 12
    probe = (
        "import sys; from voicedesk.engine.commands import main; code = main(['phonemes', sys.argv[1]]); "
        "print([m for m in ('torch', 'kokoro', 'transformers') if m in sys.modules], file=sys.stderr); sys.exit(code)"
    )
    said = subprocess.run([sys.executable, "-c", probe, text], capture_output=True, text=True, timeout=300)
    assert said.returncode == 0, said.stderr
    assert said.stderr.strip().splitlines()[-1] == "[]"
    from voicedesk.engine.model.phonemes_cli import chunks_of

    assert said.stdout.splitlines() == [piece for chunk, _ in chunks_of(text) for piece in _pieces(speaker, chunk)]


def _pieces(speaker, chunk: str) -> list[str]:
    from voicedesk.engine.model.prepared import prepare_pieces

    spoken = speaker.front_end.to_spoken(chunk, "a")
    return [p.phonemes for p in prepare_pieces(speaker.pipeline("a"), spoken, "a")]


@pytest.mark.parametrize("british", [False, True])
def test_the_light_english_g2p_reads_and_cuts_as_kokoros_pipeline(speaker, british):
    from voicedesk.engine.model.english_g2p import EnglishG2P

    pipeline, light = speaker.pipeline("b" if british else "a"), EnglishG2P(british)
    for text in ("Read the colour of 21 tomatoes.", "The lights are on and the door is shut. " * 30):
        _, ours = light.g2p(text)
        _, theirs = pipeline.g2p(text)
        cut = [(t, p) for t, p, _ in light.en_tokenize(ours)]
        assert cut == [(t, p) for t, p, _ in pipeline.en_tokenize(theirs)]
    assert len(cut) > 1  # past 510 phonemes: kokoro's own cut
