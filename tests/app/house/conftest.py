"""A real Mosquitto broker per test session on a free loopback port (apt package ``mosquitto``, installed by
tests/run.sh), and helpers to talk to it with real paho clients."""

from __future__ import annotations

import json
import queue
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.voice.conftest import speech, tiny_en, virtual_mic, whisper  # noqa: F401 - announcer --listen

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    """One mosquitto process; ``restart`` stops it and starts it again on the same port (no persistence)."""

    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        self.config = directory / "mosquitto.conf"
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n")
        self.log = directory / "mosquitto.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"mosquitto did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> Iterator[Broker]:
    if not Path(MOSQUITTO).exists():
        pytest.fail("mosquitto is not installed: run the suite through tests/run.sh (it installs it)")
    running = Broker(tmp_path_factory.mktemp("mosquitto"))
    running.start()
    yield running
    running.stop()


class Listener:
    """A real paho client subscribed to some topics; messages land in a thread-safe queue."""

    def __init__(self, port: int, topics: list[str]) -> None:
        import paho.mqtt.client as mqtt

        self.messages: queue.Queue[tuple[str, bytes, bool]] = queue.Queue()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        subscribed = queue.Queue()

        def on_connect(client, _userdata, _flags, _reason, _properties):
            client.subscribe([(topic, 1) for topic in topics])

        self.client.on_connect = on_connect
        self.client.on_subscribe = lambda *_: subscribed.put(True)
        self.client.on_message = lambda _c, _u, m: self.messages.put((m.topic, bytes(m.payload), bool(m.retain)))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        subscribed.get(timeout=10)

    def publish(self, topic: str, payload: str | bytes, **kw) -> None:
        self.client.publish(topic, payload, qos=1, **kw).wait_for_publish(10)

    def next(self, topic: str, within_s: float = 60.0, where=lambda payload: True) -> dict | str:
        """The next message on ``topic`` that ``where`` accepts (JSON decoded when it is JSON)."""
        deadline = time.monotonic() + within_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching message on {topic} within {within_s} s")
            try:
                got, payload, _retain = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if got != topic:
                continue
            try:
                value = json.loads(payload)
            except ValueError:
                value = payload.decode()
            if where(value):
                return value

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def listen(broker) -> Iterator:
    made: list[Listener] = []

    def make(*topics: str) -> Listener:
        listener = Listener(broker.port, list(topics))
        made.append(listener)
        return listener

    yield make
    for listener in made:
        listener.close()
