"""How the window words an error, in one place: the message without raw codes or nested brackets, and its advice
unless that fits only this machine (``voicedesk models fetch``) and the error came from a remote engine."""

from __future__ import annotations

import re

from voicedesk.engine.errors import ErrorCode, LocalErrorCode, VoicedeskError
from voicedesk.engine.events import Error

REMOTE_KINDS = ("websocket", "sagemaker")
ENGINE_NAMES = {"local": "local engine", "websocket": "WebSocket server", "sagemaker": "SageMaker endpoint"}

_CODES = "|".join(re.escape(code.value) for code in (*ErrorCode, *LocalErrorCode))
_TRAILING_CODE = re.compile(rf"\s*[\(\[]\s*(?:code[:= ]\s*)?(?:{_CODES})\s*[\)\]]\s*$")
_INLINE_CODE = re.compile(rf"\s*[\(\[]\s*(?:code[:= ]\s*)?(?:{_CODES})\s*[\)\]]")
_VOICE_NAME = re.compile(r"[Vv]oice '([^']+)'|voice ([A-Za-z0-9_.:-]+)")


def error_text(error: VoicedeskError | Error | BaseException | str, engine_kind: str | None = None) -> str:
    """``engine_kind``: 'local', 'websocket' or 'sagemaker' when the error came from an engine."""
    code, message, advice = _parts(error)
    if code == ErrorCode.UNKNOWN_VOICE and engine_kind in REMOTE_KINDS:
        return _remote_voice_text(message, engine_kind)
    text = _tidy(message)
    if advice and engine_kind not in REMOTE_KINDS:
        text = f"{text} {_tidy(advice)}"
    return text


def _parts(error: VoicedeskError | Error | BaseException | str) -> tuple[str | None, str, str | None]:
    if isinstance(error, VoicedeskError):
        return str(error.code), error.message, error.advice
    if isinstance(error, Error):
        return str(error.code), error.message, error.advice
    if isinstance(error, BaseException):
        return None, str(error) or type(error).__name__, None
    return None, str(error), None


def _tidy(message: str) -> str:
    """No raw codes, no nested brackets, one space between sentences, a full stop at the end."""
    text = " ".join(message.split())
    text = _TRAILING_CODE.sub("", text)
    text = _INLINE_CODE.sub("", text)
    text = _flatten_brackets(text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    text = re.sub(r"\.{2,}(?!\.)", ".", text.replace("…", "\0")).replace("\0", "…")
    text = re.sub(r"\(\s*\)", "", text).strip()
    if text and text[-1] not in ".!?…":
        text += "."
    return text


def _flatten_brackets(text: str) -> str:
    """Keeps one level of parentheses: an inner pair becomes a dash-separated aside."""
    out: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
            out.append("(" if depth == 1 else "— ")
        elif char == ")":
            if depth == 0:
                continue  # an unbalanced closer is noise
            out.append(")" if depth == 1 else "")
            depth -= 1
        else:
            out.append(char)
    out.extend(")" * (depth > 0))
    return re.sub(r"\s+—\s+", " — ", "".join(out))


def _remote_voice_text(message: str, engine_kind: str) -> str:
    match = _VOICE_NAME.search(message)
    name = next((g for g in match.groups() if g), None) if match else None
    where = ENGINE_NAMES[engine_kind]
    which = f"the voice {name!r}" if name else "that voice"
    return (
        f"The {where} does not have {which}, so it kept speaking in the voice it had. Pick another voice, "
        f"or add the voice to the {where}'s model files (then restart it)."
    )


def failover_text(engine_label: str, reason: str, sentence: int) -> str:
    """The status line when a remote engine fails mid-reply and the local engine takes over."""
    return (
        f"The {engine_label} engine failed mid-reply: {_tidy(reason).rstrip('.')}. "
        f"Continuing on the local engine from sentence {sentence}."
    )
