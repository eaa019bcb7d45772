"""``voicedesk bench flow``, the agent side: an agent streaming tokens over a real WebSocket at a set pace, and
what its listener gets (``bench_flow`` prints the table).

- **pauses**: the agent sends one reply and goes quiet, without a flush. Measured: from the reply's last token (or,
  when the session's previous sentence was still on the model then, from its end) to the server handing the last
  sentence to the model (``sentence_start``: how long finished text was held) and to that sentence's first
  audio, less the sentence's own synthesis time. Goal: ≤ 300 ms plus synthesis.
- **pacing**: one reply streamed at 5, 20 and 80 tokens/s, then a flush (the turn ends). A simulated player starts
  at the first audio and plays each sentence as soon as it has arrived and the previous one has ended. A gap is
  time the player waits. Each gap is set against what it may honestly contain: the agent had not written the
  sentence yet, then the ≤ 250 ms hold of finished text, then the sentence's own synthesis (after the session's
  previous sentence, since a session has one sentence in flight). The rest is *unexplained*: the server sat on
  text, or audio, for no reason. Goal: no unexplained gap (≤ 100 ms of scheduling noise).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import asdict, dataclass, field

from voicedesk.engine.text.chunking.quiet_release import SENTENCE_RELEASE_DELAY_MS

GUARD_S = 600.0
PAUSE_GOAL_S = 0.300
UNEXPLAINED_GOAL_S = 0.100
AUDIBLE_GAP_S = 0.020
"""Shorter waits are within a player's buffer; they are not counted as gaps."""

PAUSE_CASES = (
    ("period", "I will turn off the lights."),
    ("exclamation", "That is really great news!"),
    ("question", "Can you hear me now?"),
    ("ellipsis", "Let me think about that…"),
    ("CJK full stop", "我是一个机器人。"),
    ("one word", "Sure."),
    ("early-cut remainder", "Let me check the current thermostat settings in the living room for you."),
)
PACING_REPLY = (
    "Sure. Let me check the current thermostat settings in the living room for you. It is set to twenty one "
    "degrees right now, which is a little warm for the night. Okay. Do you want me to lower it before you go "
    "to bed, or leave it as it is? I can also turn off the lights in the kitchen."
)


def llm_tokens(text: str) -> list[str]:
    """Pieces as an LLM streams them: a word with the space before it, long words in pieces of up to four
    characters; CJK two characters at a time."""
    if re.search(r"[\u3000-\u9fff]", text):
        return [text[i : i + 2] for i in range(0, len(text), 2)]
    tokens: list[str] = []
    for word in re.findall(r"\s*\S+", text):
        tokens.extend(word[i : i + 4] for i in range(0, len(word), 4)) if len(word.strip()) > 6 else tokens.append(word)
    return tokens


@dataclass
class Spoken:
    """One sentence as the client saw it (times on the client's monotonic clock)."""

    seq: int
    text: str
    started_at: float
    text_done_at: float
    """When the agent had sent the sentence's last character."""
    audio_at: float | None = None
    audio_s: float = 0.0
    synthesis_s: float = 0.0


@dataclass
class Transcript:
    tokens_per_s: float
    sent_at: list[float] = field(default_factory=list)
    """Send time of each character of the reply (the time of the token that carried it)."""
    spoken: list[Spoken] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def done_at(self, text: str, chunk: str, cursor: int) -> tuple[float, int]:
        """When the agent had sent all of ``chunk`` (found in ``text`` from ``cursor``), and the cursor after it."""
        start = text.find(chunk, cursor)
        if start < 0:  # the chunker normalised something: fall back to the last character sent
            return self.sent_at[-1], cursor
        end = start + len(chunk)
        return self.sent_at[end - 1], end


async def stream_reply(
    ws_url: str, text: str, tokens_per_s: float, voice: str, flush: bool, headers: dict[str, str] | None = None
) -> Transcript:
    """Streams ``text`` token by token at ``tokens_per_s`` and records every sentence until all of it was spoken."""
    from websockets.asyncio.client import connect

    transcript = Transcript(tokens_per_s)
    expected = re.sub(r"\s", "", text)
    async with connect(ws_url, additional_headers=headers or {}, max_size=None) as ws:
        await ws.send(json.dumps({"type": "config", "voice": voice}))

        async def send() -> None:
            for number, token in enumerate(llm_tokens(text)):
                if number:
                    await asyncio.sleep(1 / tokens_per_s)
                transcript.sent_at.extend([time.monotonic()] * len(token))
                await ws.send(json.dumps({"type": "text", "text": token}))
            if flush:  # the turn ends with its last token
                await ws.send(json.dumps({"type": "flush"}))

        sender = asyncio.create_task(send())
        cursor, heard = 0, ""
        current: Spoken | None = None
        try:
            async with asyncio.timeout(GUARD_S):
                while True:
                    frame = await ws.recv()
                    now = time.monotonic()
                    if isinstance(frame, bytes):
                        if current is not None:
                            current.audio_at = current.audio_at or now
                            current.audio_s += len(frame) / 48_000
                        continue
                    message = json.loads(frame)
                    kind = message.get("type")
                    if kind == "sentence_start":
                        done_at, cursor = transcript.done_at(text, message["text"], cursor)
                        current = Spoken(message["seq"], message["text"], now, done_at)
                        transcript.spoken.append(current)
                    elif kind == "sentence_end" and current is not None:
                        current.synthesis_s = float(message.get("synthesis_s", 0.0))
                        heard += re.sub(r"\s", "", current.text)
                        if heard == expected and sender.done():
                            break
                    elif kind == "error":
                        transcript.errors.append(f"{message.get('code')}: {message.get('message')}")
                    elif kind == "closed":
                        break
        finally:
            sender.cancel()
    return transcript


# ---- pauses ---------------------------------------------------------------------------------------


@dataclass
class PauseResult:
    """Times from the reply's last token. When the session's previous sentence was still being made then, they
    count from its end instead (``waited_s``): a session has one sentence on the model at a time, and its
    listener is still hearing that one."""

    case: str
    text: str
    waited_s: list[float] = field(default_factory=list)
    """Last token → the model free for this session (0 when it already was)."""
    held_s: list[float] = field(default_factory=list)
    """→ the last sentence handed to the model (``sentence_start``)."""
    to_audio_s: list[float] = field(default_factory=list)
    """→ the last sentence's first audio."""
    synthesis_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def beyond_synthesis_s(self) -> list[float]:
        return [a - s for a, s in zip(self.to_audio_s, self.synthesis_s, strict=True)]


async def measure_pauses(ws_url: str, repeat: int, voice: str, progress) -> list[PauseResult]:  # type: ignore[no-untyped-def]
    results = []
    for case, text in PAUSE_CASES:
        result = PauseResult(case, text)
        for _ in range(repeat):
            transcript = await stream_reply(ws_url, text, 20.0, voice, flush=False)
            result.errors += transcript.errors
            if not transcript.spoken:
                continue
            last = transcript.spoken[-1]
            before = transcript.spoken[-2].audio_at if len(transcript.spoken) > 1 else None
            told = transcript.sent_at[-1]
            start = max(told, before or told)
            result.waited_s.append(start - told)
            result.held_s.append(last.started_at - start)
            if last.audio_at is not None:
                result.to_audio_s.append(last.audio_at - start)
                result.synthesis_s.append(last.synthesis_s)
        beyond = _ms_list(result.beyond_synthesis_s)
        progress(f"  {case}: handed to the model {_ms_list(result.held_s)}, to audio − synthesis {beyond}")
        results.append(result)
    return results


# ---- pacing ---------------------------------------------------------------------------------------


@dataclass
class Gap:
    seq: int
    text: str
    """The sentence the player waited for."""
    gap_s: float
    agent_s: float
    """Of the gap: the agent had not sent the sentence yet."""
    hold_and_synthesis_s: float
    """Of the gap: the ≤ 250 ms hold of finished text, and synthesis after the session's previous sentence."""
    unexplained_s: float


@dataclass
class PacingResult:
    tokens_per_s: float
    sentences: int = 0
    audio_s: float = 0.0
    first_audio_s: float | None = None
    """First token → first audio."""
    gaps: list[Gap] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def gap_total_s(self) -> float:
        return sum(g.gap_s for g in self.gaps)

    @property
    def max_gap_s(self) -> float:
        return max((g.gap_s for g in self.gaps), default=0.0)

    @property
    def max_unexplained_s(self) -> float:
        return max((g.unexplained_s for g in self.gaps), default=0.0)

    def to_json(self) -> dict[str, object]:
        body = asdict(self)
        body.update(gap_total_s=self.gap_total_s, max_gap_s=self.max_gap_s, max_unexplained_s=self.max_unexplained_s)
        return body


def play(transcript: Transcript) -> PacingResult:
    """The simulated player over one transcript (see the module docstring)."""
    result = PacingResult(transcript.tokens_per_s, errors=list(transcript.errors))
    hold_s = SENTENCE_RELEASE_DELAY_MS / 1000
    play_end: float | None = None
    model_free_at = transcript.sent_at[0] if transcript.sent_at else 0.0
    for spoken in transcript.spoken:
        if spoken.audio_at is None:
            continue
        result.sentences += 1
        result.audio_s += spoken.audio_s
        if play_end is None:
            result.first_audio_s = spoken.audio_at - transcript.sent_at[0]
            start = spoken.audio_at
        else:
            start = max(spoken.audio_at, play_end)
            gap = start - play_end
            if gap > AUDIBLE_GAP_S:
                agent = max(0.0, min(gap, spoken.text_done_at - play_end))
                ready = max(spoken.text_done_at + hold_s, model_free_at) + spoken.synthesis_s
                explained = max(0.0, min(gap, ready - play_end))
                unexplained = max(0.0, gap - explained)
                result.gaps.append(Gap(spoken.seq, spoken.text, gap, agent, explained - agent, unexplained))
        model_free_at = spoken.audio_at
        play_end = start + spoken.audio_s
    return result


async def measure_pacing(ws_url: str, rates: list[float], voice: str, progress) -> list[PacingResult]:  # type: ignore[no-untyped-def]
    results = []
    for rate in rates:
        result = play(await stream_reply(ws_url, PACING_REPLY, rate, voice, flush=True))
        progress(
            f"  {rate:g} tokens/s: {len(result.gaps)} gap(s), longest {result.max_gap_s * 1000:.0f} ms, "
            f"unexplained {result.max_unexplained_s * 1000:.0f} ms"
        )
        results.append(result)
    return results


def _ms_list(values: list[float]) -> str:
    return ", ".join(f"{v * 1000:.0f} ms" for v in values) or "—"
