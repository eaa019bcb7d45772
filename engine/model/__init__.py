"""The model side: Kokoro's weights, voices, languages and the synthesizer."""
