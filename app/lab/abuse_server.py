"""The server ``voicedesk bench abuse`` attacks: ``voicedesk serve`` in a subprocess, its memory read from ``/proc``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HEALTHY_TEXT = "Sure, I can help with that."


def rss_mib(pid: int) -> dict[str, float]:
    """Resident memory now and at its peak (``VmHWM``), in MiB."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = round(int(rest.split()[0]) / 1024, 1)
    return values


@dataclass
class ServerProcess:
    port: int
    process: subprocess.Popen
    log_path: Path

    def log_bytes(self) -> int:
        return self.log_path.stat().st_size

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> int | None:
        if self.alive:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(device: str, header_timeout_s: float, log_dir: Path) -> ServerProcess:
    port = _free_port()
    log_path = log_dir / "server.log"
    command = [sys.executable, "-m", "voicedesk.engine.commands", "serve", "--port", str(port), "--device", device]
    command += ["--header-timeout", str(header_timeout_s)]
    env = {k: v for k, v in os.environ.items() if k != "VOICEDESK_TOKEN"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    return ServerProcess(port, process, log_path)


async def wait_ready(server: ServerProcess, limit_s: float = 300.0) -> None:
    import httpx

    deadline = time.monotonic() + limit_s
    async with httpx.AsyncClient(timeout=5) as client:
        while time.monotonic() < deadline:
            if not server.alive:
                raise RuntimeError(f"the server exited with {server.process.returncode}:\n{server.log_text()}")
            try:
                if (await client.get(f"http://127.0.0.1:{server.port}/ping")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.3)
    raise RuntimeError("the server did not answer /ping with 200 in time")
