"""The latency lab (``voicedesk bench lab`` and its scenarios): perceived latency end to end, side by side.

Layers: ``engine.measure.recorder`` (pure: events and marks → ``engine.measure.timeline``; the app's turns use it too),
``arrivals``/``runs``/``report``/``table`` (pure: when concurrent callers speak up, summaries, the JSON document,
the text table), ``plot`` (the picture, from the document), and the I/O around them: ``probe`` (drives a session),
``scenarios``/``ab``/``concurrency``/``capacity``/``transport`` (what is measured), ``served`` (``--serve``),
``lab``/``main``/``cli``.
"""
