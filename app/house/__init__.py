"""The console in the smart home: announcements from the house (MQTT, HTTP) by priority, with chimes and equal
loudness, the console's state and Home Assistant discovery on MQTT, and the headless ``voicedesk announcer``.

``queue`` is the pure core (priorities, TTL, merging, quiet hours, interruption and resumption, outcomes; time
passed in). Everything else is a thin adapter around it: ``payload`` (what an input may say), ``mqtt``,
``http``, ``discovery``, ``chimes``, ``loudness``, ``shaped_player`` (gain + chime in the speech's stream),
``runner`` (the queue against the speech controller) and ``cli`` (``voicedesk announcer``).
"""
