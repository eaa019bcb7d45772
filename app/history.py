"""What was said, kept across restarts in ``history.json`` (bounded; never a token or key); a damaged file is kept
aside and a damaged entry skipped."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from voicedesk.app.json_file import keep_aside, read_json, write_json

HISTORY_FILE = "history.json"
MAX_ENTRIES = 500
MAX_FILE_BYTES = 4 << 20
MAX_TEXT_CHARS = 5000


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    at: float  # Unix time it ended
    kind: str  # one of KINDS
    text: str  # what was said (the reply, for an agent; the part heard, when stopped)
    prompt: str = ""  # the question, for an agent reply
    voice: str = ""
    engine: str = ""  # "Local", "WebSocket → Local"…
    state: str = "done"  # 'done', 'cut' or 'failed'
    output: str = ""
    origin: str = ""
    whole: str = ""  # the whole text of a stopped entry, which a replay says

    @property
    def replay_text(self) -> str:
        return self.whole or self.text

    @property
    def when(self) -> str:
        return time.strftime("%a %H:%M", time.localtime(self.at))


def default_history_path() -> Path:
    from voicedesk.engine.paths import data_dir

    return data_dir() / HISTORY_FILE


@dataclass(frozen=True, slots=True)
class LoadedHistory:
    entries: list[HistoryEntry]
    message: str | None = None


def load_history(path: Path) -> LoadedHistory:
    try:
        data = read_json(path, MAX_FILE_BYTES)
        items = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ValueError("it has no list of entries")
    except FileNotFoundError:
        return LoadedHistory([])
    except OSError as exc:
        return LoadedHistory([], f"Could not read the history in {path} ({exc}); starting a new one.")
    except ValueError as exc:
        kept = keep_aside(path)
        where = f" It was kept as {kept.name}." if kept else ""
        return LoadedHistory([], f"The history file {path} was damaged ({str(exc)[:120]}); starting a new one.{where}")
    entries = [entry for item in items[-MAX_ENTRIES:] if (entry := _entry(item)) is not None]
    skipped = min(len(items), MAX_ENTRIES) - len(entries)
    message = f"{skipped} damaged entries in {path} were skipped." if skipped else None
    return LoadedHistory(entries, message)


def save_history(entries: list[HistoryEntry], path: Path) -> None:
    write_json(path, {"version": 1, "entries": [asdict(e) for e in entries[-MAX_ENTRIES:]]})


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        loaded = load_history(path)
        self.entries = loaded.entries
        self.message = loaded.message

    def add(self, entry: HistoryEntry) -> None:
        self.entries.append(entry)
        del self.entries[:-MAX_ENTRIES]
        save_history(self.entries, self.path)

    def clear(self) -> None:
        self.entries.clear()
        save_history(self.entries, self.path)


def _entry(item: object) -> HistoryEntry | None:
    if not isinstance(item, dict):
        return None
    values: dict[str, object] = {}
    for spec in fields(HistoryEntry):
        if spec.name not in item:
            continue
        value = item[spec.name]
        if spec.name == "at":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e11:  # NaN too
                return None
            value = float(value)
        elif not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
            return None
        values[spec.name] = value
    if "at" not in values or not str(values.get("text", "")).strip() or values.get("kind") not in KINDS:
        return None
    return HistoryEntry(**values)  # type: ignore[arg-type]


KINDS = ("speak", "agent", "preview")
