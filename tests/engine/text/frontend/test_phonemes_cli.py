"""``voicedesk phonemes``: stdout is exactly the phoneme strings the model receives, one line per model call."""

from __future__ import annotations

import io
import json
import subprocess
import sys

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


def test_notices_a_g2p_library_prints_on_import_stay_off_stdout(text_grammars):
    # A fresh process: pyopenjtalk-plus prints its "ONNX Runtime is not installed" notice once, when first imported.
    said = subprocess.run(
        [sys.executable, "-m", "voicedesk.engine.commands", "phonemes", "--voice", "jf_alpha", "今日は25人です。"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines() == ["kʲoː βa ɲiʥɨːɡoɲiɴ desɨ."]  # 25人 as Open JTalk reads it


def test_phonemes_chunks_as_a_session_with_that_voice_does(capsys):
    """A long Japanese text: cut where the Japanese G2P's phonemes would fill a model call, not the English
    estimate's (which made 5 calls of it instead of 3)."""
    from voicedesk.engine.model.phonemes_cli import chunks_of

    text = "今日はいい天気ですね、明日も晴れるでしょうか、週末は家族と一緒に海へ行く予定なので、"
    text = (text + "とても楽しみにしています。") * 2
    assert main(["phonemes", "--voice", "jf_alpha", text]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(chunks_of(text, "j")) < len(chunks_of(text, None))


def test_the_g2p_libraries_do_not_log_on_every_call():
    """jieba logged its dictionary build, phonemizer a warning per espeak-ng call that switches language."""
    for voice, text in (("zf_xiaobei", "我用Google搜索。"), ("hf_alpha", "मैं Google पर हूँ। 15/03/2025")):
        said = subprocess.run(
            [sys.executable, "-m", "voicedesk.engine.commands", "phonemes", "--voice", voice, text],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert said.returncode == 0, said.stderr
        assert not [line for line in said.stderr.splitlines() if "jieba" in line or "phonemizer" in line], said.stderr
        assert said.stdout.strip()


def test_explain_shows_the_spoken_form_of_another_language(capsys):
    assert main(["phonemes", "--voice", "ef_dora", "--explain", "Cuesta 3,20 € el 15/03/2025."]) == 0
    err = capsys.readouterr().err
    assert "spoken: Cuesta tres euros con veinte el quince de marzo de dos mil veinticinco." in err
