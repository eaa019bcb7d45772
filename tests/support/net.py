"""Small network helpers for tests that start servers on loopback."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (for 'server down' cases and servers started by a subprocess)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
