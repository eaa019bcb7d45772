"""The side-by-side flood benches read the server's CPU per thread from ``/proc``: the event loop (the main thread)
apart from the others (the model's, encoding), so the code's share of a slowdown is told from the machine's."""

from __future__ import annotations

import os
import threading
import time

from voicedesk.app.lab.abuse_side_by_side import CpuMeter, thread_cpu_s


def _burn(cpu_s: float) -> None:
    began = time.thread_time()
    while time.thread_time() - began < cpu_s:
        pass


def test_the_cpu_meter_tells_the_main_thread_from_the_others():
    assert "main" in thread_cpu_s(os.getpid())
    meter = CpuMeter(os.getpid())
    worker = threading.Thread(target=_burn, args=(0.3,))
    worker.start()
    worker.join()  # the main thread waits meanwhile: its CPU stays near nothing
    used = meter.read()
    assert used["others"] > 0.0
    assert used["others"] > used["event_loop"]
    _burn(0.3)  # now the main thread works, and no other does
    used = meter.read()
    assert used["event_loop"] > used["others"]
