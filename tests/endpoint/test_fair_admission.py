"""Who makes room on a full server (``endpoint.fair_admission``), pure: the idlest holder of the busiest address,
only for a newcomer whose address holds clearly less."""

from __future__ import annotations

from dataclasses import dataclass

from voicedesk.endpoint.fair_admission import idlest_of_busiest


@dataclass
class _Held:
    client: object
    last_active: float


def test_a_newcomer_from_a_quiet_address_takes_the_place_of_the_idlest_of_the_busiest():
    held = [_Held("10.0.0.1", t) for t in (5.0, 1.0, 3.0)] + [_Held("10.0.0.2", 0.5)]
    victim = idlest_of_busiest(held, "10.0.0.9")
    assert victim is held[1]  # the busiest address's idlest, not the idlest overall


def test_nobody_is_evicted_for_an_address_that_would_hold_as_much():
    held = [_Held("10.0.0.1", 1.0), _Held("10.0.0.1", 2.0), _Held("10.0.0.2", 0.0)]
    assert idlest_of_busiest(held, "10.0.0.2") is None  # 1 + 1 is not fewer than 2
    assert idlest_of_busiest(held, "10.0.0.1") is None
    assert idlest_of_busiest(held, None) is None
    assert idlest_of_busiest([], "10.0.0.1") is None


def test_uvicorn_style_peers_count_by_host():
    held = [_Held(("10.0.0.1", port), float(port)) for port in (4000, 4001)]
    assert idlest_of_busiest(held, "10.0.0.7") is held[0]
