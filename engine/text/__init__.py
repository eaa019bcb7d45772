"""Text to speakable pieces: ``chunking``, sentence splitting and the text front-end (``frontend``: markup, spoken
form, lexicon). Pure; no I/O."""
