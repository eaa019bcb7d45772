"""The model side: the Kokoro synthesizer, its voices and weights, model import, the models and phonemes
commands, and what is prepared for the model (front-end output, G2P pieces)."""
