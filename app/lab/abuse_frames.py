"""Mutated protocol frames for the abuse suite (``voicedesk bench abuse``, ``tests/app/lab/test_abuse.py``). Pure.

``FrameMutator`` starts from valid commands (whole requests, text, flush, cancel, config) and breaks them the ways
faulty clients and attackers do: flipped, inserted and dropped bytes, cuts, hostile values in every field (huge
and non-finite numbers, 400-digit integers, deep nesting, control characters, lone surrogates, voice specs that
name files or home directories, absurd blend weights), wrong types, unknown keys, whole-frame junk. Frames go out
as text or binary at random, as SageMaker may deliver either.

Each frame comes with what the protocol says about it (``expect``): the error code and ``request_id`` the codec
rejects it with, or None when it is a valid command. The oracle is ``engine.protocol.decode_command``, the codec
the server itself runs: the suite checks that the whole server (transport, connection, session) answers every
frame the codec rejects, not the codec's own decisions (its unit tests do that). ``close`` commands are never
produced: the suite keeps its sessions open to show they still work afterwards.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from voicedesk.engine.protocol import DEFAULT_MAX_FRAME_BYTES, Close, ProtocolError, decode_command

TEMPLATES: tuple[dict[str, object], ...] = (
    {"text": "Hi there.", "request_id": "req-1"},
    {"text": "Hi.", "voice": "af_heart", "speed": 1.2, "request_id": "req-2"},
    {"type": "text", "text": "some words "},
    {"type": "flush", "request_id": "flush-1"},
    {"type": "cancel"},
    {"type": "config", "voice": "af_heart", "speed": 1.0, "max_buffer_delay_ms": 200},
)
FIELDS = ("text", "voice", "speed", "request_id", "type", "max_buffer_delay_ms")

HOSTILE_VALUES: tuple[object, ...] = (
    None,
    True,
    0,
    -1,
    1e308,
    -1e308,
    float("inf"),
    float("nan"),
    10**399,
    "",
    " ",
    "\u0000",
    "\x1b[2J",
    "line\nforged: log line",
    "\ud800",
    "x" * 5_000,
    "é" * 2_000,
    [],
    {},
    [[[[[[[[]]]]]]]],
    {"a": {"b": {"c": None}}},
    "af_heart:1e308,am_adam:1e308",
    "af_heart:-1,am_adam:1",
    "af_heart:0,am_adam:0",
    "af_heart:nan",
    "af_heart," * 100,
    "/etc/passwd",
    "../../../voices/x.pt",
    "~nosuchuser/voice.pt",
    "~/voice.pt",
    "\u0000.pt",
    "zz_nobody",
    "0.25",
    0.25,
    4.0000001,
    30_001,
    "close",
    "dance",
)

JUNK_FRAMES: tuple[str | bytes, ...] = (
    "",
    " ",
    "null",
    "[]",
    "{}",
    "[" * 100_000,
    '{"a":' * 50_000,
    "9" * 5_000,
    "-" + "9" * 400,
    '{"text": "Hi.", "speed": ' + "9" * 400 + "}",
    b"\xff\xfe\x00junk",
    b"\x00" * 64,
    '{"text": "' + "a" * 300_000 + '"}',
    '{"text": "Hi.", "text": 5}',
    '{"type": "text", "text": "\\ud800"}',
    "\ufeff{}",
    "NaN",
    '{"type": null}',
)


@dataclass(frozen=True, slots=True)
class MutatedFrame:
    frame: str | bytes
    expect: tuple[str, str | None] | None
    """(error code, request_id) the protocol rejects this frame with; None for a valid command."""

    @property
    def size(self) -> int:
        return len(self.frame.encode("utf-8", "surrogatepass") if isinstance(self.frame, str) else self.frame)


class FrameMutator:
    def __init__(
        self,
        seed: int,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        largest_frame_bytes: int = 2 * DEFAULT_MAX_FRAME_BYTES - 16 * 1024,
    ) -> None:
        self.random = random.Random(seed)
        self.max_frame_bytes = max_frame_bytes
        self.largest_frame_bytes = largest_frame_bytes
        """Frames stay below the WebSocket layer's own limit (that is a separate attack: ``oversized_frames``)."""

    def next(self) -> MutatedFrame:
        while True:
            frame = self._mutate()
            mutated = self._judge(frame)
            if mutated is not None and mutated.size <= self.largest_frame_bytes:
                return mutated

    def _judge(self, frame: str | bytes) -> MutatedFrame | None:
        try:
            command = decode_command(frame, self.max_frame_bytes)
        except ProtocolError as exc:
            return MutatedFrame(frame, (str(exc.code), exc.request_id))
        if isinstance(command, Close):
            return None
        return MutatedFrame(frame, None)

    def _mutate(self) -> str | bytes:
        rnd = self.random
        roll = rnd.random()
        if roll < 0.05:
            return rnd.choice(JUNK_FRAMES)
        message = dict(rnd.choice(TEMPLATES))
        if roll < 0.6:
            for _ in range(rnd.randint(1, 3)):
                self._change_field(message)
            text = json.dumps(message, ensure_ascii=rnd.random() < 0.5)
        else:
            text = json.dumps(message, ensure_ascii=False)
        data = text.encode("utf-8", "surrogatepass")
        if roll >= 0.6:
            data = self._mangle_bytes(data)
        if rnd.random() < 0.5:
            return data  # binary frame
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    def _change_field(self, message: dict[str, object]) -> None:
        rnd = self.random
        action = rnd.random()
        if action < 0.6:
            message[rnd.choice(FIELDS)] = rnd.choice(HOSTILE_VALUES)
        elif action < 0.75 and message:
            message.pop(rnd.choice(list(message)))
        elif action < 0.9:
            message[f"extra_{rnd.randint(0, 9)}"] = rnd.choice(HOSTILE_VALUES)
        else:
            message["nested"] = [message.copy()]

    def _mangle_bytes(self, data: bytes) -> bytes:
        rnd = self.random
        buffer = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            if not buffer:
                break
            where = rnd.randrange(len(buffer))
            action = rnd.random()
            if action < 0.35:
                buffer[where] = rnd.randrange(256)
            elif action < 0.55:
                buffer.insert(where, rnd.choice(b'{}[]",:\\\x00\xff 0e-'))
            elif action < 0.75:
                del buffer[where]
            elif action < 0.9:
                del buffer[where:]
            else:
                buffer[where:where] = buffer[: rnd.randint(1, 40)]
        return bytes(buffer)
