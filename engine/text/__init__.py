"""Text on its way to the model: the chunker family and the front-end."""
