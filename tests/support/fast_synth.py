"""The test-only fast synthesizer (``app.lab.paced_synth.PacedSynthesizer``: a tone per word at a settable multiple
of real time, GPU-like by default) behind a real uvicorn server, and a look at that server's sessions.

For flow-control tests, where the random-weight Kokoro on a shared CPU (several seconds per sentence) would make
a test of "the client stopped reading after 5 s of audio" take minutes. Everything else is real: uvicorn, the
transport guards, the session core and driver, the scheduler, real clients.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from tests.support.endpoint import server_settings
from voicedesk.app.lab.paced_synth import PacedSynthesizer
from voicedesk.endpoint.runner import ServerThread
from voicedesk.endpoint.server import create_app

FAST_FACTOR = 50.0
"""Seconds of audio per second of compute: roughly Kokoro on a data-centre GPU."""

FLOW_SETTINGS: dict[str, object] = {
    "send_timeout_s": 2.0,
    "idle_timeout_s": 3.0,
    "max_sessions": 40,
    "max_sessions_per_client": None,  # every test client comes from 127.0.0.1
    "shutdown_grace_s": 5.0,
}
"""Short timeouts, so a stalled client is dropped within seconds; room for 16 stalled clients and a healthy one."""


def start_fast_server(synthesizer: PacedSynthesizer | None = None, **settings: object) -> ServerThread:
    """A started ServerThread around a ``PacedSynthesizer`` (``server.runtime.synthesizer``); stop it after use."""
    merged = {**FLOW_SETTINGS, **settings}
    app = create_app(synthesizer or PacedSynthesizer(FAST_FACTOR), server_settings(**merged))  # type: ignore[arg-type]
    return ServerThread(app).start()


@dataclass(frozen=True, slots=True)
class SessionState:
    """One open session as the server sees it (read on the server's loop)."""

    kind: str
    produced_s: float
    """Audio synthesized so far."""
    audio_ahead_s: float
    """Synthesized and not yet taken by the transport (WebSocket) or the response body (HTTP)."""
    queued_frames: int
    """Frames in the connection's send queue (WebSocket only)."""


def _session_of(callback: object) -> object | None:
    """The session object a lease's callback belongs to: its ``__self__`` (a bound method), or an object with a
    ``core`` that the callback closes over (``endpoint.speech.routes``'s drain)."""
    owner = getattr(callback, "__self__", None)
    if owner is not None:
        return owner
    for cell in getattr(callback, "__closure__", None) or ():
        if hasattr(cell.cell_contents, "core"):
            return cell.cell_contents
    return None


def session_states(server: ServerThread) -> list[SessionState]:
    """The open sessions' flow-control state. The runtime keeps leases, not sessions; a lease's callbacks belong to
    its session (``BidiConnection.stop`` for a WebSocket, a ``LocalSession``'s wind-down for HTTP)."""

    async def read() -> list[SessionState]:
        states = []
        for lease in list(server.runtime._leases.values()):
            owner = _session_of(lease.stop)
            if owner is not None and hasattr(owner, "connection"):  # a WebSocket
                connection = owner.connection
                core, frames = connection.core, len(connection._out)
            else:
                session = _session_of(lease.drain)
                if session is None:
                    continue
                core, frames = session.core, 0
            states.append(SessionState(lease.kind, core._produced_s, core.audio_ahead_s, frames))
        return states

    return server.call(read)


def open_connections(server: ServerThread) -> int:
    """TCP connections uvicorn still holds (HTTP and WebSocket), whatever their session's state: a transport
    that was closed but still waits to flush bytes to a client that does not read counts as open."""

    async def count() -> int:
        return len(server.server.server_state.connections)

    return server.call(count)


def small_receive_buffer_socket(port: int, rcvbuf: int = 4096) -> socket.socket:
    """A connected TCP socket whose receive buffer is tiny (set before connecting, so the window stays small):
    a client that stops reading stalls the server's sends after a few kilobytes instead of megabytes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock
