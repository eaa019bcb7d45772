"""The HTTP speech routes (``routes``): the request in (``request``, pure), the audio out (``body``)."""
