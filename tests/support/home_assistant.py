"""A real Home Assistant for the house tests: started headless from its own Python 3.13 venv (``.cache/ha-venv``,
made by tests/support/install_home_assistant.sh), with a written config folder that loads only what MQTT discovery
needs and an MQTT config entry pointing at the test broker (Home Assistant sets MQTT up only from a config entry),
then onboarded through its own API (what the first browser visit does) to get the owner's access token.

Nothing is downloaded at run time: ``hass --skip-pip``, with what the loaded integrations need installed beside it
(the frontend among them: without it Home Assistant starts in recovery mode).

By hand, with a broker on 127.0.0.1:1883 and ``voicedesk announcer --mqtt 127.0.0.1:1883`` running (prints Home
Assistant's URL, the owner's token and the MQTT entities it discovered, then keeps it up for ``--seconds``):
``.venv/bin/python -m tests.support.home_assistant --broker-port 1883``
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.net import free_port

REQUIREMENTS = Path(__file__).with_name("home-assistant-requirements.txt")
HA_VERSION = next(
    line.split("==")[1].strip() for line in REQUIREMENTS.read_text().splitlines() if line.startswith("homeassistant==")
)
"""The Home Assistant release install_home_assistant.sh pins (tests/support/home-assistant-requirements.txt)."""

HA_VENV = Path(os.environ.get("VOICEDESK_HA_VENV", Path(__file__).resolve().parents[2] / ".cache" / "ha-venv"))

CONFIGURATION_YAML = """\
# Only what a discovery test needs: no default_config (no cloud, no recorder, no zeroconf downloads).
homeassistant:
  name: voicedesk test house
  latitude: 0
  longitude: 0
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: GB
  currency: EUR
http:
  server_host: 127.0.0.1
  server_port: {port}
api:
config:
onboarding:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
"""


PACKAGES_LINE = "homeassistant:\n  packages: !include_dir_named packages\n"


def hass_executable(venv: Path = HA_VENV) -> Path | None:
    hass = venv / "bin" / "hass"
    return hass if hass.exists() else None


def _config_entries(broker_port: int) -> dict[str, Any]:
    """``.storage/core.config_entries`` with one MQTT entry (Home Assistant sets MQTT up only from a config entry;
    written at storage minor version 1, which Home Assistant migrates to its current form on load)."""
    return {
        "version": 1,
        "minor_version": 1,
        "key": "core.config_entries",
        "data": {
            "entries": [
                {
                    "entry_id": uuid.uuid4().hex,
                    "version": 1,
                    "minor_version": 2,
                    "domain": "mqtt",
                    "title": f"127.0.0.1:{broker_port}",
                    "data": {"broker": "127.0.0.1", "port": broker_port},
                    "options": {"discovery": True, "discovery_prefix": "homeassistant"},
                    "source": "user",
                    "unique_id": None,
                    "disabled_by": None,
                }
            ]
        },
    }


@dataclass
class Entity:
    entity_id: str
    unique_id: str
    platform: str
    device_id: str | None


class HomeAssistant:
    """One ``hass`` process on a free loopback port, talking to the broker on ``broker_port`` (None: no MQTT)."""

    def __init__(
        self,
        directory: Path,
        broker_port: int | None,
        venv: Path = HA_VENV,
        packages: dict[str, str] | None = None,
        secrets: dict[str, str] | None = None,
    ) -> None:
        """``packages``: name → YAML, each a Home Assistant package (configuration of several integrations, e.g.
        automations and a rest_command, merged into the configuration); ``secrets``: what ``!secret`` reads."""
        hass = hass_executable(venv)
        if hass is None:
            raise FileNotFoundError(f"no Home Assistant in {venv}: tests/run.sh installs it (see docs/house.md)")
        self.hass = hass
        self.directory = directory
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / "home-assistant.log"
        self.token = ""
        self.proc: subprocess.Popen[bytes] | None = None
        storage = directory / ".storage"
        storage.mkdir(parents=True, exist_ok=True)
        configuration = CONFIGURATION_YAML.format(port=self.port)
        if packages:
            (directory / "packages").mkdir()
            for name, text in packages.items():
                (directory / "packages" / f"{name}.yaml").write_text(text)
            configuration = configuration.replace("homeassistant:\n", PACKAGES_LINE, 1)
        (directory / "configuration.yaml").write_text(configuration)
        (directory / "secrets.yaml").write_text(json.dumps(secrets or {}))  # JSON is YAML
        if broker_port is not None:
            (storage / "core.config_entries").write_text(json.dumps(_config_entries(broker_port)))

    # ---- lifecycle --------------------------------------------------------------------------------

    def start(self, within_s: float = 180.0) -> None:
        """Starts hass and waits until its API answers; the first time, onboards the owner and keeps a token
        (Home Assistant keeps the owner and the token's refresh token in its folder across restarts)."""
        with (self.directory / "hass.out").open("ab") as out:  # what it prints before its log is set up
            self.proc = subprocess.Popen(
                [str(self.hass), "-c", str(self.directory), "--skip-pip", "--log-file", str(self.log)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + within_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hass exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(f"{self.url}/api/onboarding", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Home Assistant did not answer within {within_s} s: {self.tail()}")
            time.sleep(0.25)
        if not self.token:
            self.token = self._onboard()

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def _onboard(self) -> str:
        """The owner account through the onboarding API (what the first browser visit does), then its token."""
        client_id = f"{self.url}/"
        owner = {"client_id": client_id, "name": "Test", "username": "test", "password": "test-pass", "language": "en"}
        created = httpx.post(f"{self.url}/api/onboarding/users", json=owner, timeout=30)
        created.raise_for_status()
        token = httpx.post(
            f"{self.url}/auth/token",
            data={"grant_type": "authorization_code", "code": created.json()["auth_code"], "client_id": client_id},
            timeout=30,
        )
        token.raise_for_status()
        return token.json()["access_token"]

    # ---- REST and websocket API -------------------------------------------------------------------

    def rest(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = httpx.request(
            method, f"{self.url}{path}", json=body, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        response.raise_for_status()
        return response.json()

    def state(self, entity_id: str) -> dict[str, Any]:
        return self.rest("GET", f"/api/states/{entity_id}")

    def call(self, domain: str, service: str, **data: Any) -> Any:
        return self.rest("POST", f"/api/services/{domain}/{service}", data)

    def websocket(self, *commands: dict[str, Any]) -> list[Any]:
        """Runs websocket commands (the registries are only there) and returns each result."""
        from websockets.sync.client import connect

        results = []
        with connect(f"ws://127.0.0.1:{self.port}/api/websocket", open_timeout=30) as ws:
            assert json.loads(ws.recv(30))["type"] == "auth_required"
            ws.send(json.dumps({"type": "auth", "access_token": self.token}))
            assert json.loads(ws.recv(30))["type"] == "auth_ok"
            for number, command in enumerate(commands, start=1):
                ws.send(json.dumps({"id": number, **command}))
                while True:
                    reply = json.loads(ws.recv(30))
                    if reply.get("id") == number and reply["type"] == "result":
                        break
                if not reply["success"]:
                    raise RuntimeError(f"{command['type']}: {reply['error']}")
                results.append(reply["result"])
        return results

    def entities(self) -> list[Entity]:
        (rows,) = self.websocket({"type": "config/entity_registry/list"})
        return [Entity(r["entity_id"], r["unique_id"], r["platform"], r["device_id"]) for r in rows]

    def devices(self) -> dict[str, dict[str, Any]]:
        (rows,) = self.websocket({"type": "config/device_registry/list"})
        return {row["id"]: row for row in rows}


def main() -> None:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker-port", type=int, default=1883)
    parser.add_argument("--seconds", type=float, default=600, help="how long to keep it running")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="voicedesk-ha-") as folder:
        house = HomeAssistant(Path(folder), args.broker_port)
        started = time.monotonic()
        house.start()
        try:
            print(f"Home Assistant {HA_VERSION} up in {time.monotonic() - started:.1f} s at {house.url}")
            print(f"token: {house.token}")
            time.sleep(10)
            devices = house.devices()
            for entity in house.entities():
                if entity.platform == "mqtt":
                    device = devices.get(entity.device_id or "", {})
                    print(f"{entity.entity_id:45} {entity.unique_id:35} {device.get('name')}")
            time.sleep(args.seconds)
        finally:
            house.stop()


if __name__ == "__main__":
    main()
