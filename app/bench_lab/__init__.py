"""The latency lab (``voicedesk bench lab`` and its scenarios): perceived latency end to end, side by side.

Layers: ``recorder`` (pure: events and marks → ``engine.timeline``), ``runs``/``report``/``table`` (pure:
summaries, the JSON document, the text table), ``plot`` (the picture, from the document), and the I/O around
them: ``probe`` (drives a session), ``scenarios``/``transport`` (what is measured), ``lab``/``main``/``cli``.
"""
