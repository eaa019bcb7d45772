"""Home Assistant MQTT discovery topics and payloads (pure), so the console appears with no YAML on that side (a
listening console adds a Listen button and a Heard sensor): https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery"""

from __future__ import annotations

import re
from dataclasses import dataclass

DISCOVERY_PREFIX = "homeassistant"


def node_id_of(name: str) -> str:
    """Home Assistant allows [a-zA-Z0-9_-]."""
    return re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "voicedesk"


@dataclass(frozen=True, slots=True)
class Topics:
    base: str  # voicedesk/kitchen

    say = property(lambda self: f"{self.base}/say")
    stop = property(lambda self: f"{self.base}/stop")
    state = property(lambda self: f"{self.base}/state")
    outcome = property(lambda self: f"{self.base}/outcome")
    error = property(lambda self: f"{self.base}/error")
    listen = property(lambda self: f"{self.base}/listen")
    heard = property(lambda self: f"{self.base}/heard")
    availability = property(lambda self: f"{self.base}/availability")


def discovery_messages(
    topics: Topics, node_id: str, name: str, version: str, prefix: str = DISCOVERY_PREFIX, listens: bool = False
) -> dict[str, dict[str, object]]:
    device = {
        "identifiers": [f"voicedesk_{node_id}"],
        "name": name,
        "manufacturer": "voicedesk",
        "model": "voicedesk announcer",
        "sw_version": version,
    }
    common = {
        "device": device,
        "availability_topic": topics.availability,
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    speaking = {
        **common,
        "name": "Speaking",
        "unique_id": f"voicedesk_{node_id}_speaking",
        "state_topic": topics.state,
        "value_template": "{{ 'ON' if value_json.state == 'speaking' else 'OFF' }}",
        "payload_on": "ON",
        "payload_off": "OFF",
        "icon": "mdi:account-voice",
    }
    # Commands at QoS 1, as the console subscribes: the broker then keeps a Say or Stop for the console's persistent
    # session through a brief disconnect (Home Assistant publishes at QoS 0 unless told, and QoS 0 is not kept).
    say = {
        **common,
        "name": "Say",
        "unique_id": f"voicedesk_{node_id}_say",
        "command_topic": topics.say,
        "qos": 1,
        "mode": "text",
        "min": 1,
        "max": 255,
        "icon": "mdi:bullhorn",
    }
    stop = {
        **common,
        "name": "Stop",
        "unique_id": f"voicedesk_{node_id}_stop",
        "command_topic": topics.stop,
        "qos": 1,
        "payload_press": "PRESS",
        "icon": "mdi:stop",
    }
    state = {
        **common,
        "name": "State",
        "unique_id": f"voicedesk_{node_id}_state",
        "state_topic": topics.state,
        "value_template": "{{ value_json.state }}",
        "json_attributes_topic": topics.state,
        "icon": "mdi:information-outline",
    }
    messages = {
        f"{prefix}/binary_sensor/{node_id}/speaking/config": speaking,
        f"{prefix}/text/{node_id}/say/config": say,
        f"{prefix}/button/{node_id}/stop/config": stop,
        f"{prefix}/sensor/{node_id}/state/config": state,
    }
    if listens:
        listen = {**stop, "name": "Listen", "unique_id": f"voicedesk_{node_id}_listen", "icon": "mdi:microphone"}
        heard = {**state, "name": "Heard", "unique_id": f"voicedesk_{node_id}_heard", "icon": "mdi:account-voice"}
        listen |= {"command_topic": topics.listen, "payload_press": "start"}
        heard |= {"state_topic": topics.heard, "value_template": "{{ value_json.text[:255] }}"}
        heard.pop("json_attributes_topic")
        messages[f"{prefix}/button/{node_id}/listen/config"] = listen
        messages[f"{prefix}/sensor/{node_id}/heard/config"] = heard
    return messages
