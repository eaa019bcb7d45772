"""``voicedesk bench announcer``: the headless announcer soaked for N minutes, an announcement every few seconds at
mixed priorities (with duplicates), beside a broker restart half-way; every announcement must be accounted for
(spoken, interrupted, expired, merged) and memory must stay flat. A lab scenario, not a test (it takes minutes).

Starts its own Mosquitto on a free loopback port unless ``--mqtt`` names a broker (then no restart is done).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

PRIORITIES = ("urgent", "normal", "normal", "low", "low")
TEXTS = (
    "The washing machine has finished.",
    "Someone is at the front door. Please answer it.",
    "The garage door is still open.",
    "Dinner is ready in ten minutes. Please wash your hands. The table is set.",
    "Water leak in the basement!",
    "The parcel has arrived.",
    "The washing machine has finished.",  # a duplicate within the merge window
)


def register_bench(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "announcer",
        help="soak the headless announcer: announcements every few seconds, a broker restart, nothing lost",
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    parser.add_argument("--every", type=float, default=10.0, metavar="S", help="one announcement every S s (10)")
    parser.add_argument("--mqtt", metavar="HOST:PORT", help="an existing broker (default: a private mosquitto)")
    parser.add_argument("--audio", action="store_true", help="play through the sound device (default: none)")
    parser.add_argument(
        "--type-counts",
        action="store_true",
        help="also print which kinds of live Python object grew between a third of the run and its end",
    )
    parser.add_argument(
        "--stand-in", type=float, metavar="FACTOR", help="the paced stand-in synthesizer at FACTOR x real time"
    )
    from voicedesk.engine.engine_spec import add_engine_options

    add_engine_options(parser)
    parser.set_defaults(handler=lambda args: asyncio.run(soak(args)))


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _Mosquitto:
    def __init__(self) -> None:
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        if not Path(binary).exists():
            raise SystemExit("voicedesk bench announcer: mosquitto is not installed (apt install mosquitto), or --mqtt")
        self.binary = binary
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.dir = tempfile.TemporaryDirectory(prefix="voicedesk-soak-")
        self.conf = Path(self.dir.name) / "mosquitto.conf"
        # Persistence on, as in Home Assistant's Mosquitto add-on: sessions and queued messages survive a restart.
        self.conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
            f"persistence_location {self.dir.name}/\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "-c", str(self.conf)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise SystemExit("voicedesk bench announcer: mosquitto did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


async def soak(args: argparse.Namespace) -> int:
    import paho.mqtt.client as mqtt

    from voicedesk.app.house.announcer import Announcer, AnnouncerConfig
    from voicedesk.app.house.inputs import HouseInputs
    from voicedesk.app.house.mqtt import MqttSettings
    from voicedesk.engine.engine_spec import spec_from_args

    broker = None
    if args.mqtt:
        host, _, port = args.mqtt.partition(":")
        port = int(port or 1883)
    else:
        broker = _Mosquitto()
        broker.start()
        host, port = "127.0.0.1", broker.port
    settings = MqttSettings(host, port, base="voicedesk/soak", node_id="soak", discovery=False)
    config = AnnouncerConfig(HouseInputs(settings, loudness=False), engine=spec_from_args(args), audio=args.audio)
    if args.stand_in:
        from voicedesk.app.lab.paced import paced_opener

        config.opener = paced_opener(args.stand_in)
    house = Announcer(config)
    outcomes: dict[str, list[str]] = {}
    received: asyncio.Queue[dict] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="voicedesk-soak-sender", protocol=mqtt.MQTTv5)
    sender_away: list[tuple[float, float]] = []  # (went away, came back) on the monotonic clock
    sender_lost_at: list[float] = []

    def sender_connected(c: mqtt.Client, *_: object) -> None:
        if sender_lost_at:
            sender_away.append((sender_lost_at.pop(), time.monotonic()))
        c.subscribe("voicedesk/soak/outcome", qos=1)

    client.on_connect = sender_connected
    client.on_disconnect = lambda *_: sender_lost_at.append(time.monotonic())
    client.on_message = lambda _c, _u, m: loop.call_soon_threadsafe(received.put_nowait, json.loads(m.payload))
    client.reconnect_delay_set(1, 5)
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    properties = Properties(PacketTypes.CONNECT)
    properties.SessionExpiryInterval = 3600  # the sender's outcomes wait for it across the restart too
    client.connect_async(host, port, clean_start=False, properties=properties)
    client.loop_start()
    said_here: dict[str, float] = {}  # when the announcer ended each one
    house.runner.reports.append(lambda report: said_here.setdefault(report.id, time.monotonic()))
    await house.start()
    await asyncio.wait_for(house.mqtt.connected.wait(), 30)  # type: ignore[union-attr]
    sent: list[str] = []
    rss = [_rss_mib()]
    objects = [len(gc.get_objects())]
    samples_at = [0.0]
    restarted = False
    kinds_at_third: Counter[str] | None = None
    started = time.monotonic()
    total_s = args.minutes * 60
    print(f"voicedesk bench announcer: {args.minutes:g} min, one every {args.every:g} s, broker {host}:{port}")
    try:
        while time.monotonic() - started < total_s:
            number = len(sent)
            item_id = f"s{number}"
            payload = {"text": TEXTS[number % len(TEXTS)], "priority": PRIORITIES[number % len(PRIORITIES)]}
            client.publish("voicedesk/soak/say", json.dumps({**payload, "id": item_id}), qos=1)
            sent.append(item_id)
            if broker is not None and not restarted and time.monotonic() - started > total_s / 2:
                broker.stop()
                await asyncio.sleep(3)
                broker.start()
                restarted = True
                print(f"  broker restarted at {time.monotonic() - started:.0f} s")
            await _drain(received, outcomes, args.every)
            rss.append(_rss_mib())
            objects.append(len(gc.get_objects()))
            samples_at.append(time.monotonic() - started)
            if args.type_counts and kinds_at_third is None and samples_at[-1] >= total_s / 3:
                kinds_at_third = _live_kinds()
        deadline = time.monotonic() + 120
        while set(sent) - set(outcomes) and time.monotonic() < deadline:
            await _drain(received, outcomes, 1.0)
    finally:
        await house.aclose()
        client.disconnect()
        client.loop_stop()
        if broker is not None:
            broker.stop()
    kinds = Counter(ended[0] for ended in outcomes.values())
    missing = sorted(set(sent) - set(outcomes), key=lambda i: int(i[1:]))
    twice = sorted(i for i, ended in outcomes.items() if len(ended) > 1)
    quarter = max(len(rss) // 4, 1)
    first, last = sum(rss[:quarter]) / quarter, sum(rss[-quarter:]) / quarter
    print(f"  sent {len(sent)}; outcomes: {dict(kinds)}; missing {len(missing)} {missing[:10]}; twice {twice[:10]}")
    if missing:
        ended_here = [item for item in missing if item in said_here]
        print(f"  of the missing, ended in the announcer but the outcome never reached the sender: {ended_here}")
        away = [i for i in ended_here if any(lost <= said_here[i] <= back for lost, back in sender_away)]
        if away:
            print(
                f"  of those, ended while the sender was away from the broker (its restart): {away}. Mosquitto 2.0 "
                "drops what is published for a persistent session restored from its database until that client "
                "reconnects (docs/house.md, 'Outcomes across a broker restart')"
            )
    print(
        f"  reconnects {house.mqtt.connects - 1 if house.mqtt else 0}; RSS first quarter {first:.1f} MiB, "
        f"last quarter {last:.1f} MiB ({last - first:+.1f}); max {max(rss):.1f}"
    )
    _print_memory_trend(samples_at, rss, objects)
    if kinds_at_third is not None:
        _print_kinds_grown(kinds_at_third, _live_kinds(), len(sent))
    return 0 if not missing and not twice else 1


def _print_memory_trend(samples_at: list[float], rss: list[float], objects: list[int]) -> None:
    """RSS and live Python objects per tenth of the run, and the slope after warm-up: a leak keeps climbing at a
    steady rate, while the allocator's and the model's warm-up settle in the first minutes."""
    tenth = max(len(rss) // 10, 1)
    windows = [
        (samples_at[i] / 60, sum(rss[i : i + tenth]) / len(rss[i : i + tenth]), max(objects[i : i + tenth]))
        for i in range(0, len(rss), tenth)
    ]
    print("  memory by tenth of the run (minute: mean RSS MiB, most live Python objects):")
    print("   " + "; ".join(f"{minute:.0f}: {mib:.0f}, {count}" for minute, mib, count in windows))
    settled = [i for i, at in enumerate(samples_at) if at >= samples_at[-1] / 3]
    if len(settled) >= 3:
        xs = [samples_at[i] / 3600 for i in settled]
        for name, ys in (("RSS", [rss[i] for i in settled]), ("objects", [float(objects[i]) for i in settled])):
            mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
                (x - mean_x) ** 2 for x in xs
            )
            unit = "MiB" if name == "RSS" else "objects"
            print(f"  {name} slope over the last two thirds: {slope:+.1f} {unit}/hour")


def _live_kinds() -> Counter[str]:
    gc.collect()
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


def _print_kinds_grown(before: Counter[str], after: Counter[str], sent: int) -> None:
    """A bounded store fills and stops; a leak is a kind that grows with every announcement to the end."""
    grown = Counter({kind: after[kind] - before[kind] for kind in after if after[kind] > before[kind]})
    print(f"  live objects grown from a third of the run to its end ({sent} sent), by kind:")
    for kind, count in grown.most_common(15):
        print(f"   {count:+7d}  {kind} (now {after[kind]})")


async def _drain(received: asyncio.Queue[dict], outcomes: dict[str, list[str]], within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            outcome = await asyncio.wait_for(received.get(), left)
        except TimeoutError:
            return
        outcomes.setdefault(outcome["id"], []).append(outcome["outcome"])
