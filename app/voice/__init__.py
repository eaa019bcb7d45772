"""Listening: microphone capture, echo cancellation, VAD, the turn detector and speech-to-text (docs/voice.md)."""
