"""Saved phrases spoken with a click or a shortcut (pure); validated here so the settings and the editor agree."""

from __future__ import annotations

from dataclasses import dataclass

MAX_PHRASES = 50
MAX_NAME_CHARS = 60
MAX_TEXT_CHARS = 2000

MODIFIERS = {**{m: f"<{m}>" for m in ("ctrl", "alt", "shift")}, "control": "<ctrl>", "meta": "<cmd>", "super": "<cmd>"}
NAMED_KEYS = {
    **{name: f"<{name}>" for name in ("space", "esc", "enter", "tab", "pause", "home", "end")},
    **{"escape": "<esc>", "return": "<enter>", "pgup": "<page_up>", "pgdown": "<page_down>"},
    **{"ins": "<insert>", "del": "<delete>"},
    **{f"f{n}": f"<f{n}>" for n in range(1, 25)},
}


@dataclass
class Phrase:
    name: str = ""
    text: str = ""
    voice: str = ""  # empty: the voice chosen in the Voice card
    output: str = ""  # as the Output card names it; empty: the current output
    shortcut: str = ""  # Qt's spelling, "Ctrl+Alt+1"

    @property
    def title(self) -> str:
        return self.name.strip() or self.text.strip()[:40]


def phrase_problem(phrase: Phrase) -> str | None:
    if not phrase.text.strip():
        return "it has no text"
    if len(phrase.text) > MAX_TEXT_CHARS:
        return f"its text is longer than {MAX_TEXT_CHARS} characters"
    if len(phrase.name) > MAX_NAME_CHARS:
        return f"its name is longer than {MAX_NAME_CHARS} characters"
    if phrase.shortcut and pynput_hotkey(phrase.shortcut) is None:
        return f"its shortcut {phrase.shortcut!r} is not one the desktop can grab (e.g. Ctrl+Alt+1)"
    return None


def shortcut_owner(shortcut: str, taken: dict[str, str]) -> str | None:
    """Who in ``taken`` (shortcut → "the phrase “Dinner”") has ``shortcut``, however it is spelled."""
    wanted = pynput_hotkey(shortcut) if shortcut else None
    if wanted is None:
        return None
    return next((owner for keys, owner in taken.items() if keys and pynput_hotkey(keys) == wanted), None)


def pynput_hotkey(shortcut: str) -> str | None:
    """'Ctrl+Alt+1' → '<ctrl>+<alt>+1'; None without a modifier (a bare key would steal it from every program)."""
    parts = [p.strip().lower() for p in shortcut.split("+")]
    if len(parts) < 2 or any(not p for p in parts):
        return None
    *mods, key = parts
    if any(m not in MODIFIERS for m in mods) or key in MODIFIERS:
        return None
    if len(key) == 1 and key.isprintable() and not key.isspace():
        key_text = key
    elif key in NAMED_KEYS:
        key_text = NAMED_KEYS[key]
    else:
        return None
    return "+".join([*dict.fromkeys(MODIFIERS[m] for m in mods), key_text])


def default_phrases() -> list[Phrase]:
    return [
        Phrase("Dinner", "Dinner is ready.", shortcut="Ctrl+Alt+1"),
        Phrase("Front door", "Someone is at the front door.", shortcut="Ctrl+Alt+2"),
    ]
