"""voicedesk app."""
