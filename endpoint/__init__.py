"""voicedesk endpoint."""
