"""Text to speakable pieces: the chunker family, sentence splitting, quiet release, and the text front-end
(``frontend``: markup, spoken form, lexicon). Pure; no I/O."""
