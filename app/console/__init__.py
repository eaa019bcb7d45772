"""The console's one core (``core``, pure) and its asyncio driver (``runner``), shared by the window, the headless
announcer and the voice input."""
