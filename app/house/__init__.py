"""The console in the smart home: announcements from MQTT and HTTP, chimes, discovery, ``voicedesk announcer``."""
