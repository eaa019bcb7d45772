# Sourced by tests/run.sh: a private PulseAudio null sink (24 kHz mono float32), a virtual microphone (a second null
# sink, 16 kHz, whose monitor is the default source: tests play speech into it) and an Xvfb display, so the audio,
# voice and Qt tests use real PortAudio streams and a real X server on a machine with neither.
# Exports XDG_RUNTIME_DIR, VOICEDESK_TEST_SINK, VOICEDESK_TEST_MIC, DISPLAY, QT_QPA_PLATFORM; stops all on exit.
# See docs/testing.md ("Real audio and a real window, headless") for why each step is there.

VOICEDESK_HEADLESS_DIR=$(mktemp -d -t voicedesk-headless.XXXXXX)
export XDG_RUNTIME_DIR="$VOICEDESK_HEADLESS_DIR/xdg-runtime"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

_voicedesk_headless_stop() {
  pulseaudio --kill >/dev/null 2>&1 || true
  [ -n "${VOICEDESK_XVFB_PID:-}" ] && kill "$VOICEDESK_XVFB_PID" >/dev/null 2>&1 || true
  rm -rf "$VOICEDESK_HEADLESS_DIR"
}
trap _voicedesk_headless_stop EXIT

if command -v pulseaudio >/dev/null 2>&1; then
  bash "$(dirname "${BASH_SOURCE[0]}")/start_pulseaudio.sh" "$VOICEDESK_HEADLESS_DIR/pulse.log" \
    && export VOICEDESK_TEST_SINK=voicedesk_test VOICEDESK_TEST_MIC=voicedesk_mic \
    || echo "tests/run.sh: PulseAudio did not start (see $VOICEDESK_HEADLESS_DIR/pulse.log)" >&2
fi

if command -v Xvfb >/dev/null 2>&1; then
  for n in $(seq 99 140); do
    [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ] && continue
    Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >"$VOICEDESK_HEADLESS_DIR/xvfb.log" 2>&1 &
    VOICEDESK_XVFB_PID=$!
    for _ in $(seq 100); do DISPLAY=":$n" xdpyinfo >/dev/null 2>&1 && break; sleep 0.05; done
    if DISPLAY=":$n" xdpyinfo >/dev/null 2>&1; then
      export DISPLAY=":$n" QT_QPA_PLATFORM=xcb
      break
    fi
    kill "$VOICEDESK_XVFB_PID" >/dev/null 2>&1 || true
    unset VOICEDESK_XVFB_PID
  done
fi
[ -n "${DISPLAY:-}" ] || export QT_QPA_PLATFORM=offscreen
