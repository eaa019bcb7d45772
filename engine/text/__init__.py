"""Text to speakable pieces: the chunker family, sentence splitting, quiet release (pure; no I/O)."""
