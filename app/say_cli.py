"""``voicedesk say``: speak text (or text streaming in on stdin) through any engine, or write a WAV file.

``llm-cli "tell me a story" | voicedesk say -`` speaks each sentence while the model is still writing the next one."""

from __future__ import annotations

import argparse
import asyncio
import codecs
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from voicedesk.engine.engine_spec import (
    add_engine_options,
    add_lexicon_option,
    add_session_options,
    config_from_args,
    spec_from_args,
)
from voicedesk.engine.errors import ErrorCode, UsageError, VoicedeskError
from voicedesk.engine.events import Audio, Closed, Error, SentenceFinished, SentenceStarted
from voicedesk.engine.tasks import cancel_and_wait


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "say",
        help="speak text, or stream stdin sentence by sentence ('-')",
        description="Speak TEXT through the chosen engine. With '-', read text from stdin as it arrives "
        "(pipe an LLM's streaming output in) and speak each sentence as soon as it is complete.",
    )
    parser.add_argument("text", help="what to say, or '-' to read streaming text from stdin")
    add_session_options(parser)
    add_lexicon_option(parser, "this text (sent to a remote engine with the session)")
    parser.add_argument("--out", type=Path, help="write a WAV file instead of playing")
    add_engine_options(parser)
    parser.add_argument(
        "--whole",
        action="store_true",
        help="sagemaker engine: one whole request through InvokeEndpointWithResponseStream (boto3) "
        "instead of a bidirectional session",
    )
    parser.add_argument("--output-device", help="audio output device name (default: the system default)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-sentence progress on stderr")
    parser.set_defaults(handler=run_say)


def run_say(args: argparse.Namespace) -> int:
    return asyncio.run(say(args))


async def _stdin_fragments() -> AsyncIterator[str]:
    """Yields text as soon as the pipe delivers it (no waiting for newlines)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = sys.stdin.fileno()
    while True:
        chunk = await asyncio.to_thread(os.read, fd, 4096)
        if not chunk:
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
            return
        text = decoder.decode(chunk)
        if text:
            yield text


async def _single(text: str) -> AsyncIterator[str]:
    yield text


SLICE_CHARS = 2_000
"""Largest piece sent at once: a whole book given on the command line must not hit the per-message limit."""
AHEAD_CHARS = 8_000
"""Text sent but not yet started, at most: keeps a long pipe well inside the session's buffer limit."""


def text_slices(text: str, size: int = SLICE_CHARS) -> list[str]:
    """Cuts ``text`` into pieces of at most ``size`` characters, at whitespace where there is any."""
    pieces = []
    while len(text) > size:
        cut = text.rfind(" ", size // 2, size) + 1 or size
        pieces.append(text[:cut])
        text = text[cut:]
    if text:
        pieces.append(text)
    return pieces


def _letters(text: str) -> int:
    # Chunks come back stripped of surrounding whitespace, so pacing counts everything else.
    return sum(not c.isspace() for c in text)


async def say(args: argparse.Namespace) -> int:
    from voicedesk.app.stderr_filter import quiet_late_completions
    from voicedesk.engine.audio import pcm16_duration_s, pcm16_to_wav

    quiet_late_completions()

    if args.text != "-" and not args.text.strip():
        raise UsageError("Nothing to say: the text is empty.", "Give some text, or '-' to read it from stdin.")
    player = None
    if args.out is None:
        from voicedesk.app.player import AudioPlayer, wait_for_room
        from voicedesk.app.stderr_filter import StderrFilter

        StderrFilter().start()  # ALSA's underrun lines stay out of the terminal (the progress lines stay)

        player = AudioPlayer(device=args.output_device)
        player.open()  # fail before loading a model if there is no sound card
    from voicedesk.engine.factory import open_engine

    spec = spec_from_args(args)
    config = config_from_args(args)
    if args.whole:
        return await _say_whole(args, spec, player)
    log = (lambda *_: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    log(f"voicedesk: loading the {spec.describe()} engine…")
    engine = await open_engine(spec)
    errors = 0
    try:
        session = await engine.open_session(config)
        source = _stdin_fragments() if args.text == "-" else _single(args.text)
        sent = spoken = 0
        progress = asyncio.Condition()

        def caught_up() -> bool:
            return sent - spoken <= AHEAD_CHARS

        async def feed() -> None:
            nonlocal sent
            async for fragment in source:
                for piece in text_slices(fragment):
                    async with progress:
                        await progress.wait_for(caught_up)
                    await session.send_text(piece)
                    sent += _letters(piece)
            await session.close()

        feeder = asyncio.create_task(feed())
        started = time.monotonic()
        pcm_parts: list[bytes] = []
        first_audio = True
        async for event in session.events():
            match event:
                case SentenceStarted(text=text):
                    spoken += _letters(text)
                    async with progress:
                        progress.notify_all()
                case Audio(seq=seq, pcm=pcm):
                    if player is not None:
                        if first_audio:
                            player.begin_utterance()
                        player.push(pcm, seq)
                        await wait_for_room(player.buffer)  # backpressure: a book is not synthesized ahead
                    else:
                        pcm_parts.append(pcm)
                    if first_audio:
                        log(f"voicedesk: first audio after {time.monotonic() - started:.2f} s")
                    first_audio = False
                case SentenceFinished(seq=seq, duration_s=duration_s, synthesis_s=synthesis_s):
                    log(f"  [{seq}] {duration_s:.2f} s of audio in {synthesis_s:.2f} s")
                case Error(code=code, message=message):
                    errors += 1
                    print(f"voicedesk: error ({code}): {message}", file=sys.stderr)
                case Closed():
                    break
        await cancel_and_wait(feeder)  # the session may have ended early (a fatal error): stop feeding it
        if player is not None:
            player.end_utterance()
            await player.wait_finished()
        else:
            pcm = b"".join(pcm_parts)
            args.out.write_bytes(pcm16_to_wav(pcm))
            log(f"voicedesk: wrote {pcm16_duration_s(pcm):.2f} s of audio to {args.out}")
    finally:
        await engine.aclose()
        if player is not None:
            player.close()
    return 1 if errors else 0


async def _say_whole(args: argparse.Namespace, spec, player) -> int:
    """The whole-request path: audio chunks of the SSE response stream played (or saved) as they arrive."""
    import base64

    from voicedesk.engine.audio import pcm16_duration_s, pcm16_to_wav
    from voicedesk.engine.clients.invoke import WholeRequestClient

    if spec.kind != "sagemaker":
        raise UsageError("--whole works with the sagemaker engine only.", "Add --engine sagemaker ENDPOINT.")
    if args.text == "-":
        text = await asyncio.to_thread(sys.stdin.read)
    else:
        text = args.text
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()

    def run() -> None:
        try:
            with WholeRequestClient.from_spec(spec) as client:
                for event in client.stream(text, args.voice, args.speed):
                    if event.event == "audio_chunk":
                        loop.call_soon_threadsafe(chunks.put_nowait, base64.b64decode(event.data["audio"]))
                    elif event.event == "error":
                        raise VoicedeskError(
                            str(event.data.get("code", ErrorCode.INTERNAL)), str(event.data.get("message"))
                        )
        except BaseException as exc:  # handed to the event loop, which re-raises it
            loop.call_soon_threadsafe(chunks.put_nowait, exc)
        else:
            loop.call_soon_threadsafe(chunks.put_nowait, None)

    worker = asyncio.create_task(asyncio.to_thread(run))
    parts: list[bytes] = []
    try:
        if player is not None:
            player.begin_utterance()
        while (item := await chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            if player is not None:
                player.push(item)
            parts.append(item)
        if player is not None:
            player.end_utterance()
            await player.wait_finished()
        else:
            args.out.write_bytes(pcm16_to_wav(b"".join(parts)))
    finally:
        await worker
        if player is not None:
            player.close()
    if not args.quiet:
        print(f"voicedesk: {pcm16_duration_s(b''.join(parts)):.2f} s of audio (whole request)", file=sys.stderr)
    return 0
