"""Measuring a session: the recorder (events and marks), the timeline it builds, the metrics over it."""
