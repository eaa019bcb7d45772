"""Places in the announcement queue (a resumed announcement goes behind the one that cut it), and an interruption
that arrives while the current announcement is still starting (pure state and a real asyncio loop)."""

from __future__ import annotations

import asyncio

from tests.support.endpoint import GUARD_S
from voicedesk.app.announcements import Announcement, AnnouncementQueue
from voicedesk.app.announcer import Announcer
from voicedesk.app.conversation import Turn, TurnKind


def item(text: str) -> Announcement:
    return Announcement(TurnKind.SPEAK, text)


def test_an_announcement_can_be_put_at_a_place_in_line():
    queue = AnnouncementQueue()
    a, b, c, d = item("a"), item("b"), item("c"), item("d")
    queue.add(a)
    queue.add(b)
    queue.add(c, at=1)
    queue.add(d, first=True, at=2)  # a place wins over "first"
    assert [i.text for i in queue.items] == ["a", "c", "d", "b"]


async def test_an_interruption_while_the_current_one_starts_stops_it_once_it_has_started():
    """Starting takes time (the engine, the house's chime and loudness); an urgent one that arrives meanwhile finds
    nothing to stop yet, so the announcer stops the current one as soon as its turn exists."""
    release, starting, urgent_started = asyncio.Event(), asyncio.Event(), asyncio.Event()
    stopped: list[str] = []
    started: list[str] = []
    endings: dict[int, asyncio.Future[None]] = {}
    running: list[Turn] = []

    async def start(announcement: Announcement) -> Turn:
        if announcement.text == "slow":
            starting.set()
            await release.wait()
        turn = Turn(len(started) + 1, announcement.kind, announcement.text, "Local")
        endings[turn.id] = asyncio.get_running_loop().create_future()
        started.append(announcement.text)
        running.append(turn)
        if announcement.text == "urgent":
            urgent_started.set()
        return turn

    async def wait_turn(turn: Turn) -> None:
        await endings[turn.id]

    async def stop_speech() -> None:
        if running:  # like the controller: a stop with nothing playing does nothing
            turn = running.pop()
            stopped.append(turn.prompt)
            endings[turn.id].set_result(None)

    announcer = Announcer(start, wait_turn, stop_speech)
    announcer.start()
    try:
        announcer.submit(item("slow"))
        await asyncio.wait_for(starting.wait(), GUARD_S)
        announcer.submit(item("urgent"), interrupt=True)
        await asyncio.sleep(0)  # the stop it spawned runs now, with no turn to stop
        assert stopped == []
        release.set()
        await asyncio.wait_for(urgent_started.wait(), GUARD_S)
        assert started == ["slow", "urgent"] and stopped == ["slow"]
        await stop_speech()
    finally:
        await announcer.aclose()
