"""The history file and the health record, without a window (the console's queue: tests/app/console)."""

from __future__ import annotations

import json

from voicedesk.app.engines import HealthRecord
from voicedesk.app.history import MAX_ENTRIES, History, HistoryEntry, load_history, save_history
from voicedesk.engine.clients.websocket import http_url


def entry(number: int, **changes) -> HistoryEntry:
    values = {"at": 1_700_000_000.0 + number, "kind": "speak", "text": f"Announcement {number}.", "voice": "af_heart"}
    values.update(changes)
    return HistoryEntry(**values)


def test_the_history_round_trips_and_keeps_only_the_newest(tmp_path):
    path = tmp_path / "data" / "history.json"
    history = History(path)
    assert history.entries == [] and history.message is None
    for number in range(MAX_ENTRIES + 5):
        history.entries.append(entry(number))
    history.add(entry(9999, state="cut", origin="Phrase · Dinner"))
    loaded = load_history(path)
    assert loaded.message is None and len(loaded.entries) == MAX_ENTRIES
    assert loaded.entries[-1] == entry(9999, state="cut", origin="Phrase · Dinner")
    assert loaded.entries[0].text == "Announcement 6."
    assert [p.name for p in path.parent.iterdir()] == ["history.json"]  # written atomically, no temp left


def test_a_damaged_history_is_kept_aside_and_damaged_entries_are_skipped(tmp_path):
    path = tmp_path / "history.json"
    path.write_text('{"entries": [' + "[" * 50_000)
    loaded = load_history(path)
    assert loaded.entries == [] and "damaged" in loaded.message
    assert any(p.name.startswith("history.damaged-") for p in tmp_path.iterdir())
    save_history([entry(1)], path)
    data = json.loads(path.read_text())
    data["entries"] += [
        {"at": "noon", "kind": "speak", "text": "x"},
        {"at": 1e400, "kind": "speak", "text": "y"},
        {"at": 5.0, "kind": "sing", "text": "z"},
        "nonsense",
        {"at": 6.0, "kind": "agent", "text": " "},
    ]
    path.write_text(json.dumps(data).replace("Infinity", "1" + "0" * 400))
    loaded = load_history(path)
    assert loaded.entries == [entry(1)]
    assert "5 damaged entries" in loaded.message


def test_the_health_record_backs_off_and_says_when_it_last_saw_the_engine():
    record = HealthRecord()
    assert record.summary(15) == "Checked every 15 s · not seen healthy yet"
    record.ok(1_700_000_000.0)
    assert record.next_delay(15) == 15 and "last seen healthy" in record.summary(15)
    for _ in range(3):
        record.failed(1_700_000_100.0, "down")
    assert record.next_delay(15) == 120  # 15 s x 8, capped at two minutes
    assert record.summary(15).startswith("Last seen healthy") and "retrying every 120 s" in record.summary(15)
    assert http_url("wss://box:8443/invocations-bidirectional-stream", "/ping") == "https://box:8443/ping"
    assert http_url("ws://127.0.0.1:8080", "/ping") == "http://127.0.0.1:8080/ping"


async def test_the_health_check_stops_even_when_stopped_while_it_drops_a_connection():
    """CI hung in a window's shutdown: the health loop, cancelled while its reconnect closed the old connection
    (which cancels and awaits the connection's reader), swallowed its own cancellation and went on checking."""
    import asyncio

    from voicedesk.app.engines import HealthMonitor
    from voicedesk.engine.tasks import cancel_and_wait

    cleaning = asyncio.Event()

    async def reader():
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.Event().wait()  # its clean-up is still going when the health loop is stopped

    async def reconnect() -> bool:
        task = asyncio.create_task(reader())
        await asyncio.sleep(0)  # let it start
        await cancel_and_wait(task)  # RemoteSession.aclose, as reconnect() drops the old connection
        return False

    async def probe(url: str) -> None:
        return None

    checked = []
    monitor = HealthMonitor(
        lambda: "websocket", lambda: "ws://127.0.0.1:1", lambda: False, reconnect, checked.append, probe=probe
    )
    monitor.start()
    monitor.check_now()
    await cleaning.wait()
    await asyncio.wait_for(monitor.aclose(), 10)  # hung for ever in the window
    assert not checked  # the check stopped where it was; it did not go on to report "could not be reached"
