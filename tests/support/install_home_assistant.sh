#!/usr/bin/env bash
# Makes .cache/ha-venv: a real Home Assistant in its own Python 3.13 venv (Home Assistant needs 3.13; the project
# runs on 3.12), pinned by tests/support/home-assistant-requirements.txt, for tests/app/house/test_home_assistant.py.
# Kept between runs: reinstalled only when the pins change. 5–12 minutes the first time on 2 cores (idle/busy;
# pyspeex-noise and a few others build from source), nothing when cached; tests/run.sh runs it unless
# VOICEDESK_HOME_ASSISTANT=0. Python 3.13 is looked for as $VOICEDESK_HA_PYTHON, python3.13, then pyenv's;
# $VOICEDESK_HA_VENV puts the venv elsewhere.
set -euo pipefail
cd "$(dirname "$0")/../.."

REQUIREMENTS=tests/support/home-assistant-requirements.txt
VENV=${VOICEDESK_HA_VENV:-.cache/ha-venv}  # tests/support/home_assistant.py reads the same variable
STAMP=$VENV/.voicedesk-requirements

if [ -x "$VENV/bin/hass" ] && cmp -s "$REQUIREMENTS" "$STAMP"; then
  echo "install_home_assistant.sh: $VENV is up to date"
  exit 0
fi

HA_PYTHON=${VOICEDESK_HA_PYTHON:-}
if [ -z "$HA_PYTHON" ]; then
  for candidate in python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
      HA_PYTHON=$candidate; break
    fi
  done
fi
if [ -z "$HA_PYTHON" ]; then
  echo "install_home_assistant.sh: Home Assistant needs Python 3.13 and none was found; install it (e.g." \
    "\`pyenv install 3.13\`) or point VOICEDESK_HA_PYTHON at one" >&2
  exit 1
fi

echo "install_home_assistant.sh: installing Home Assistant into $VENV with $HA_PYTHON (minutes the first time)"
started=$SECONDS
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$HA_PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -r "$REQUIREMENTS"
cp "$REQUIREMENTS" "$STAMP"
echo "install_home_assistant.sh: done in $((SECONDS - started)) s"
