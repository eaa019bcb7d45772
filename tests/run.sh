#!/usr/bin/env bash
# The README's test command: installs everything the suite needs (system packages when missing, the Python 3.12
# venv, test assets), starts a private audio sink and virtual display, then runs the whole suite.
# Extra arguments go to pytest, e.g. `bash tests/run.sh -m "not slow"` or `bash tests/run.sh tests/engine`.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(libportaudio2 pulseaudio pulseaudio-utils libasound2-plugins xvfb xauth x11-utils
  libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0 libegl1 libgl1 libfontconfig1 libdbus-1-3
  imagemagick xdotool mosquitto mosquitto-clients espeak-ng)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/run.sh: installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# A real Home Assistant (its own Python 3.13 venv, .cache/ha-venv, kept between runs) for
# tests/app/house/test_home_assistant.py: 5–12 minutes the first time, nothing once cached. It shares nothing with
# the project's venv, so it installs in the background meanwhile. VOICEDESK_HOME_ASSISTANT=0 leaves it out; a machine
# without Python 3.13 is told how to get it, and those tests are skipped saying so.
ha_install=""
ha_log=.cache/home-assistant-install.log
if [ "${VOICEDESK_HOME_ASSISTANT:-1}" = 1 ]; then
  mkdir -p .cache
  bash tests/support/install_home_assistant.sh >"$ha_log" 2>&1 &
  ha_install=$!
  trap 'kill "$ha_install" 2>/dev/null || true' EXIT  # a failed install step above leaves no orphan behind
fi

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  for candidate in python3 python3.12 python3.13; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      PYTHON=$candidate; break
    fi
  done
fi
[ -n "$PYTHON" ] || { echo "tests/run.sh: Python 3.12 or newer is required" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
echo "tests/run.sh: installing voicedesk and its test dependencies into .venv"
.venv/bin/python -m pip install -q --upgrade pip
# [languages]: the Japanese and Mandarin G2P packages, so the suite speaks all nine of Kokoro's languages offline.
.venv/bin/python -m pip install -q -e ".[all,test,languages]"
bash packaging/install_spacy_model.sh .venv/bin/python
echo "tests/run.sh: building the offline test model cache (random weights, real config)"
.venv/bin/python -m tests.support.fake_hf_cache
echo "tests/run.sh: building the English text-normalization grammars once (NeMo; about a minute the first time)"
VOICEDESK_TEXT_GRAMMARS="$PWD/.cache/text-grammars" .venv/bin/python -m voicedesk.engine.text.frontend.grammars
# The Wyoming Whisper server the listening tests run (wyoming-faster-whisper, from the test extra) needs an older
# PyAV than the product's: a small venv over .venv's packages with just that (.cache/wyoming-asr-venv).
bash tests/support/install_wyoming_asr.sh .venv/bin/python
# The folder of docs/languages.md's offline Japanese set-up (tests/engine/model/test_offline_japanese.py), downloaded
# as the docs say: about 170 MB the first time, kept between runs.
if [ ! -f .cache/offline-ja/.done ]; then
  echo "tests/run.sh: downloading the offline Japanese set-up folder (.cache/offline-ja)"
  .venv/bin/python -m pip download -q -d .cache/offline-ja $(.venv/bin/python -c \
    'from voicedesk.engine.model.languages import download_requirements as d; print(*d("j"))')
  touch .cache/offline-ja/.done
fi
if [ -n "$ha_install" ]; then
  echo "tests/run.sh: waiting for Home Assistant's install (log: $ha_log)"
  if wait "$ha_install"; then cat "$ha_log"; else
    cat "$ha_log" >&2
    echo "tests/run.sh: no Home Assistant venv (see above); tests/app/house/test_home_assistant.py will be skipped" >&2
  fi
fi

# shellcheck source=tests/support/headless.sh
source tests/support/headless.sh
export VOICEDESK_REQUIRE_AUDIO=${VOICEDESK_REQUIRE_AUDIO:-1}
mkdir -p test-artifacts
set +e
# Two workers by default (VOICEDESK_TEST_WORKERS; 0 runs in this process): most tests wait on sockets, subprocesses
# and real-time audio, and the few that need the machine to themselves are marked alone (tests/support/parallel.py).
# Past 70 minutes something no per-test timer reaches is stuck (pytest-timeout's signal cannot stop a wait inside C;
# pyproject's faulthandler_timeout printed every thread's stack at 240 s): interrupt pytest so it still reports what
# ran (CI's limit is 90 minutes for everything), and kill it two minutes later if that does not end it.
timeout --signal=INT --kill-after=120 "${VOICEDESK_TEST_LIMIT_S:-4200}" \
  .venv/bin/python -m pytest -n "${VOICEDESK_TEST_WORKERS:-2}" --dist loadfile "$@"
status=$?
set -e
[ $status -ne 124 ] || echo "tests/run.sh: the suite ran past its ${VOICEDESK_TEST_LIMIT_S:-4200} s and was interrupted" >&2
exit $status
