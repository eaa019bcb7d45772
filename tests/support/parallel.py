"""Two pytest-xdist workers on one machine: each its own display and sound server, ``alone`` tests by themselves.

tests/run.sh runs the suite on two workers (most tests wait on sockets, subprocesses and real-time audio, so a
second one takes a third off their time on two cores). What they would share is split or arbitrated here:

- **The X display and PulseAudio.** A window taking the keyboard focus would take it from the other worker's
  window, and a test recording the sink would hear the other worker's audio; so each worker starts its own Xvfb
  and its own PulseAudio with the same two null sinks (``start_pulseaudio.sh``) when headless.sh gave the run them.
- **The machine's time.** A test that times something side by side, or whose real-time audio must not starve, is
  marked ``alone``: it waits for the other worker's current test to end and holds it off until it is done. Every
  other test holds the machine shared: a readers-writer lock over two ``flock`` files, with a turnstile so a
  waiting ``alone`` test is not starved.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def worker() -> str | None:
    """This process's pytest-xdist worker id (``gw0``…), or None when the run has no workers."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def start_own_pulseaudio() -> None:
    """Give this worker its own PulseAudio with the suite's sinks; its subprocesses (paplay, parec) find it too."""
    folder = Path(tempfile.mkdtemp(prefix=f"voicedesk-{worker()}-"))
    runtime = folder / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    script = Path(__file__).with_name("start_pulseaudio.sh")
    started = subprocess.run(
        ["bash", str(script), str(folder / "pulse.log")], env=env, capture_output=True, text=True, timeout=60
    )
    if started.returncode != 0:
        raise RuntimeError(f"worker {worker()}: PulseAudio did not start: {started.stderr.strip()} (see {folder})")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)

    def stop() -> None:
        subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)


def start_own_display() -> None:
    """Give this worker its own Xvfb (Xvfb picks a free display number and writes it to a pipe)."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    if not number:
        xvfb.kill()
        raise RuntimeError(f"worker {worker()}: Xvfb gave no display number")
    atexit.register(xvfb.kill)
    os.environ["DISPLAY"] = f":{number}"


# Longer than any test may run (pytest-timeout fails one at 300 s): past it the other worker is stuck where no timer
# reaches, which this worker says once (tests/run.sh's time limit ends such a run).
LOCK_WAIT_SAY_S = 330.0


def _lock(file: object, mode: int, test: str) -> None:
    said_at = time.monotonic() + LOCK_WAIT_SAY_S
    while True:
        try:
            fcntl.flock(file, mode | fcntl.LOCK_NB)  # type: ignore[arg-type]
            return
        except BlockingIOError:
            if time.monotonic() > said_at:
                said_at = float("inf")
                print(
                    f"worker {worker()}: {test} has waited {LOCK_WAIT_SAY_S:.0f} s for the other worker's test to end",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(0.01)


class MachineShare:
    """The readers-writer lock every test takes: ``alone`` ones exclusively, the rest shared."""

    def __init__(self, run_folder: Path) -> None:
        """``run_folder``: the run's pytest basetemp, shared by its workers (pytest keeps the last three)."""
        self._turnstile = (run_folder / "voicedesk-tests.turnstile").open("a")
        self._machine = (run_folder / "voicedesk-tests.machine").open("a")

    @contextlib.contextmanager
    def hold(self, alone: bool, test: str) -> Iterator[None]:
        _lock(self._turnstile, fcntl.LOCK_EX, test)
        try:
            _lock(self._machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH, test)
        finally:
            if not alone:  # a shared holder only passes the turnstile; an alone one keeps it shut behind itself
                fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._machine, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(self._turnstile, fcntl.LOCK_UN)
