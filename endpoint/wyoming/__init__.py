"""``voicedesk wyoming``: voicedesk as a Wyoming text-to-speech service for Home Assistant's voice pipeline."""
