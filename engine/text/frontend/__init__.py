"""The text front-end: markup → spoken form → lexicon, a pure function of text and ``TextSettings``."""
