#!/usr/bin/env bash
# Starts a private PulseAudio daemon in $XDG_RUNTIME_DIR with the suite's two null sinks: voicedesk_test (24 kHz
# mono float32, the default sink the console plays to) and voicedesk_mic (16 kHz, the virtual microphone, whose
# monitor is the default source). Used by headless.sh for the run, and by tests/support/parallel.py for each worker.
# Usage: XDG_RUNTIME_DIR=DIR bash tests/support/start_pulseaudio.sh LOG_FILE
set -euo pipefail
pulseaudio -n --daemonize=yes --exit-idle-time=-1 --disallow-exit=yes --use-pid-file=yes \
  --log-target=file:"$1" -L module-native-protocol-unix \
  -L "module-null-sink sink_name=voicedesk_test rate=24000 channels=1 format=float32le" \
  -L "module-null-sink sink_name=voicedesk_mic rate=16000 channels=1 format=float32le"
pactl set-default-sink voicedesk_test
pactl set-default-source voicedesk_mic.monitor
