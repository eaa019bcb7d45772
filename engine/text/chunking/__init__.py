"""Incremental sentence chunking, pure: ``chunker`` cuts streamed text into chunks worth one Kokoro call, with the
sentence ends of ``sentence_ends``, the first fragment's cut of ``first_cut``, no cut inside ``protected_spans``, and
chunks under the ceiling by ``phoneme_estimate``; ``quiet_release`` adds the clock."""
