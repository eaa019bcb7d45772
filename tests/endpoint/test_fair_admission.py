"""The one fair rule for every kind of slot (``endpoint.fair_admission``), pure: a per-address cap, and on a full
server a place taken from an address holding clearly more, an idle holder before a speaking one."""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.endpoint.fair_admission import admit


@dataclass
class _Held:
    client: object
    last_active: float
    speaking: bool = False


def test_a_newcomer_from_a_quiet_address_takes_the_place_of_the_idlest_of_the_busiest():
    held = [_Held("10.0.0.1", t) for t in (5.0, 1.0, 3.0)] + [_Held("10.0.0.2", 0.5)]
    assert admit(held, "10.0.0.9", 4, 4).victim is held[1]  # the busiest address's idlest, not the idlest overall


def test_a_speaking_session_is_never_evicted_before_an_idle_one():
    # Four addresses with four sessions each; only the first one's are speaking (and were busy most recently).
    speaking = [_Held("10.0.0.1", 0.0, speaking=True) for _ in range(4)]
    idle = [_Held(f"10.0.0.{a}", 10.0 + i, speaking=False) for a in (2, 3, 4) for i in range(4)]
    held = [*speaking, *idle]
    for newcomer in ("10.0.1.1", "10.0.1.2", "10.0.1.3"):
        victim = admit(held, newcomer, 16, 4).victim
        assert victim is not None and not victim.speaking
        held.remove(victim)
        held.append(_Held(newcomer, 100.0))
    assert all(s in held for s in speaking)
    # Only once no idle holder of a busier address is left does a speaking one make room.
    only_speaking = [*speaking, *(_Held(f"10.0.2.{i}", 0.0, speaking=True) for i in range(12))]
    assert admit(only_speaking, "10.0.3.1", 16, 4).victim in speaking


def test_nobody_is_evicted_for_an_address_that_would_hold_as_much():
    held = [_Held("10.0.0.1", 1.0), _Held("10.0.0.1", 2.0), _Held("10.0.0.2", 0.0)]
    assert admit(held, "10.0.0.2", 3, 4).refused == "cap"  # 1 + 1 is not fewer than 2
    assert admit(held, "10.0.0.1", 3, 4).refused == "cap"
    assert admit(held, None, 3, 4).refused == "cap"
    assert admit([], "10.0.0.1", 3, 4).refused is None


def test_the_per_address_cap_and_no_fair_share_without_one():
    held = [_Held("10.0.0.1", 1.0), _Held("10.0.0.1", 2.0)]
    assert admit(held, "10.0.0.1", 10, 2).refused == "per-client cap"
    assert admit(held, "10.0.0.2", 2, None).refused == "cap"  # behind a proxy every client has one address
    assert admit(held, "10.0.0.2", 2, 4, evictable=lambda _: False).refused == "cap"


def test_uvicorn_style_peers_count_by_host():
    held = [_Held(("10.0.0.1", port), float(port)) for port in (4000, 4001)]
    assert admit(held, "10.0.0.7", 2, 4).victim is held[0]
