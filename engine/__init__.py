"""voicedesk engine."""
