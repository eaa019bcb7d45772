"""The model side: the Kokoro synthesizer, its voices and weights, model import and the models command."""
