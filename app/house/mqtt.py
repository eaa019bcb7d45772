"""The console on MQTT (paho-mqtt): announcements in, refusals back, state and outcomes out, Home Assistant
discovery, and a retained availability with a last will, so the house sees a console that went away.

paho runs its network loop on its own thread and reconnects by itself (with a growing delay) when the broker
goes away; each (re)connect subscribes again and republishes discovery, availability and the current state.
Messages arrive on paho's thread and are handed to the asyncio loop, where the runner lives.

Topics (``Topics``): ``<base>/say`` (JSON or plain text), ``<base>/stop``, ``<base>/state`` (retained JSON),
``<base>/outcome`` (one JSON per announcement), ``<base>/error`` (refused payloads; also sent to an MQTT 5
request's response topic), ``<base>/availability`` (online/offline, retained, the last will); a console that listens
also takes ``<base>/listen`` (start/stop) and publishes what it heard on ``<base>/heard`` (``app.house.listening``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicedesk.app.console.announcement import Report, Source
from voicedesk.app.console.core import QueueFull
from voicedesk.app.console.runner import ConsoleRunner, State
from voicedesk.app.house.discovery import DISCOVERY_PREFIX, Topics, discovery_messages
from voicedesk.app.house.payload import PayloadError, parse_listen, parse_payload

log = logging.getLogger(__name__)

SESSION_EXPIRY_S = 3600
"""How long the broker keeps the console's subscriptions and its QoS 1 announcements while it is away."""


@dataclass(frozen=True, slots=True)
class MqttSettings:
    host: str
    port: int = 1883
    username: str | None = None
    password: str | None = None
    base: str = "voicedesk/console"
    node_id: str = "console"
    name: str = "voicedesk console"
    discovery: bool = True
    discovery_prefix: str = DISCOVERY_PREFIX
    keepalive_s: int = 30
    client_id: str = ""
    tls: bool = False


class MqttBridge:
    def __init__(
        self,
        runner: ConsoleRunner,
        settings: MqttSettings,
        version: str = "",
        listen: Callable[[bool], str] | None = None,
    ) -> None:
        import paho.mqtt.client as mqtt

        self.runner = runner
        self.listen = listen
        """Push-to-talk (True: start) when the console listens; None: it does not."""
        self.settings = settings
        self.topics = Topics(settings.base)
        self.version = version
        self.connected = asyncio.Event()
        """Set once the broker confirmed the subscriptions (announcements reach the console)."""
        self.connects = 0
        """Successful connections so far (a reconnect after a broker restart counts again)."""
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Future[object]] = set()
        self._state: State | None = None
        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=settings.client_id or f"voicedesk-{settings.node_id}",
            protocol=mqtt.MQTTv5,
        )
        if settings.username:
            client.username_pw_set(settings.username, settings.password)
        if settings.tls:
            client.tls_set()
        client.will_set(self.topics.availability, "offline", qos=1, retain=True)
        client.reconnect_delay_set(min_delay=1, max_delay=30)
        client.max_queued_messages_set(1000)  # outcomes wait out a broker restart; bounded over a long outage
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        self.client = client
        runner.reports.append(self.publish_report)
        runner.states.append(self.publish_state)

    # ---- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Connects in the background (a broker that is not up yet is retried, like one that went away).

        A persistent session (MQTT 5 session expiry): announcements sent while the console was briefly
        disconnected are kept by the broker and delivered when it reconnects, and a broker with persistence (Home
        Assistant's Mosquitto add-on has it on) keeps them across its own restart."""
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        properties = Properties(PacketTypes.CONNECT)
        properties.SessionExpiryInterval = SESSION_EXPIRY_S
        self.client.connect_async(
            self.settings.host, self.settings.port, self.settings.keepalive_s, clean_start=False, properties=properties
        )
        self.client.loop_start()

    async def aclose(self) -> None:
        if self.client.is_connected():
            info = self.client.publish(self.topics.availability, "offline", qos=1, retain=True)
            await asyncio.to_thread(info.wait_for_publish, 2.0)
        self.client.disconnect()
        await asyncio.to_thread(self.client.loop_stop)

    # ---- paho's thread ----------------------------------------------------------------------------

    def _on_connect(self, client: Any, _userdata: Any, _flags: Any, reason: Any, _properties: Any) -> None:
        if reason.is_failure:
            log.warning("the MQTT broker %s refused the connection: %s", self._where, reason)
            return
        listen = [(self.topics.listen, 1)] if self.listen is not None else []
        client.subscribe([(self.topics.say, 1), (self.topics.stop, 1), *listen])
        client.publish(self.topics.availability, "online", qos=1, retain=True)
        if self.settings.discovery:
            settings = self.settings
            messages = discovery_messages(
                self.topics, settings.node_id, settings.name, self.version, settings.discovery_prefix, bool(listen)
            )
            for topic, payload in messages.items():
                client.publish(topic, json.dumps(payload), qos=1, retain=True)

    def _on_subscribe(self, _client: Any, _userdata: Any, _mid: Any, reasons: Any, _properties: Any) -> None:
        # Connected means "announcements reach us": the broker has confirmed the subscriptions.
        failed = [str(reason) for reason in reasons if reason.is_failure]
        if failed:
            log.error("the MQTT broker %s refused the subscription to %s: %s", self._where, self.topics.say, failed)
        self._loop.call_soon_threadsafe(self._connected)

    def _on_disconnect(self, _client: Any, _userdata: Any, _flags: Any, reason: Any, _properties: Any) -> None:
        self._loop.call_soon_threadsafe(self._disconnected, str(reason))

    def _on_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        properties = getattr(message, "properties", None)
        reply_to = getattr(properties, "ResponseTopic", None) if properties is not None else None
        self._loop.call_soon_threadsafe(self._handle, message.topic, bytes(message.payload), reply_to)

    # ---- the loop's side --------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return f"{self.settings.host}:{self.settings.port}"

    def _connected(self) -> None:
        self.connects += 1
        self.connected.set()
        log.warning("connected to the MQTT broker %s (connection %d)", self._where, self.connects)
        self._state = None
        self.publish_state(self.runner.state())

    def _disconnected(self, reason: str) -> None:
        if self.connected.is_set():
            log.warning("lost the MQTT broker %s (%s); reconnecting", self._where, reason)
        self.connected.clear()

    def _handle(self, topic: str, payload: bytes, reply_to: str | None) -> None:
        if topic == self.topics.stop:
            task = asyncio.ensure_future(self.runner.stop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        try:
            if topic == self.topics.listen and self.listen is not None:
                if refused := self.listen(parse_listen(payload)):
                    self.refuse(refused, payload, reply_to, topic)
                return
            request = parse_payload(payload, Source.MQTT, self.runner.chimes.names)
            self.runner.submit(request)
        except (PayloadError, QueueFull) as exc:
            self.refuse(str(exc), payload, reply_to, topic)

    def refuse(self, reason: str, payload: bytes, reply_to: str | None, topic: str) -> None:
        log.warning("refused an MQTT message on %s: %s", topic, reason)
        shown = payload[:200].decode("utf-8", "replace")
        body = json.dumps({"error": reason, "payload": shown, "topic": topic})
        self.client.publish(self.topics.error, body, qos=1)
        if reply_to:
            self.client.publish(reply_to, body, qos=1)

    def publish_heard(self, heard: dict[str, object]) -> None:
        self.client.publish(self.topics.heard, json.dumps(heard), qos=1)

    def publish_report(self, report: Report) -> None:
        if not report.source.house:
            return  # the person's own at the window stay there
        self.client.publish(self.topics.outcome, json.dumps(report.as_dict()), qos=1)

    def publish_state(self, state: State) -> None:
        if state == self._state:
            return
        self._state = state
        self.client.publish(self.topics.state, json.dumps(state.as_dict()), qos=1, retain=True)
