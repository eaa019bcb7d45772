#!/usr/bin/env bash
# Makes .cache/wyoming-asr-venv for tests/app/voice/test_wyoming_stt.py: Home Assistant's Wyoming Whisper server
# (wyoming-faster-whisper, installed in the project venv by the test extra) run unchanged, over the project venv's
# packages, with the PyAV it needs. faster-whisper 1.2.1 reads the server's WAV files with
# av.open(..., metadata_errors=...), which PyAV 14 and later refuse; the product itself stays on its own PyAV.
# Usage: bash tests/support/install_wyoming_asr.sh PROJECT_PYTHON
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${1:-.venv/bin/python}
VENV=.cache/wyoming-asr-venv
AV=av==13.1.0
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import av, wyoming_faster_whisper; assert av.__version__ == "13.1.0"' 2>/dev/null; then
  echo "install_wyoming_asr.sh: $VENV is up to date"
  exit 0
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
# The site-packages that holds the server (a worktree's venv may chain to another one through a .pth).
SITE=$("$PY" -c 'import pathlib, wyoming_faster_whisper as w; print(pathlib.Path(w.__file__).parents[1])')
"$VENV/bin/python" -c 'import site, sys; print(site.getsitepackages()[0])' | while read -r own; do
  echo "$SITE" >"$own/_project.pth"
done
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$AV"
echo "install_wyoming_asr.sh: made $VENV ($AV over $SITE)"
