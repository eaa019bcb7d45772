"""The model side: Kokoro, voices, weights, and what is prepared for the model."""
