"""Saved phrases: a text to speak with one click or a shortcut, in the voice and on the output chosen for it (pure).

A phrase's shortcut is written the way Qt shows it ("Ctrl+Alt+1"); ``pynput_hotkey`` turns it into what the
global-shortcut library expects ("<ctrl>+<alt>+1"). Validation is here so the settings loader and the editor
agree on what a phrase may hold.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PHRASES = 50
MAX_NAME_CHARS = 60
MAX_TEXT_CHARS = 2000

MODIFIERS = {
    "ctrl": "<ctrl>",
    "control": "<ctrl>",
    "alt": "<alt>",
    "shift": "<shift>",
    "meta": "<cmd>",
    "super": "<cmd>",
}
NAMED_KEYS = {
    "space": "<space>",
    "esc": "<esc>",
    "escape": "<esc>",
    "return": "<enter>",
    "enter": "<enter>",
    "tab": "<tab>",
    "pause": "<pause>",
    "home": "<home>",
    "end": "<end>",
    "pgup": "<page_up>",
    "pgdown": "<page_down>",
    "ins": "<insert>",
    "del": "<delete>",
    **{f"f{n}": f"<f{n}>" for n in range(1, 25)},
}


@dataclass
class Phrase:
    name: str = ""
    text: str = ""
    voice: str = ""
    """A voice spec; empty: the voice chosen in the Voice card."""
    output: str = ""
    """An output device (as the Output card names it); empty: the current output."""
    shortcut: str = ""
    """Qt's spelling, e.g. "Ctrl+Alt+1"; empty: none."""

    @property
    def title(self) -> str:
        return self.name.strip() or self.text.strip()[:40]


def phrase_problem(phrase: Phrase) -> str | None:
    """What is wrong with a phrase, or None."""
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
    """Who already has ``shortcut`` among ``taken`` (shortcut → what it does: "the phrase “Dinner”", "Stop"),
    however it is spelled ("ctrl+alt+1" is Ctrl+Alt+1), or None."""
    wanted = pynput_hotkey(shortcut) if shortcut else None
    if wanted is None:
        return None
    return next((owner for keys, owner in taken.items() if keys and pynput_hotkey(keys) == wanted), None)


def pynput_hotkey(shortcut: str) -> str | None:
    """'Ctrl+Alt+1' → '<ctrl>+<alt>+1'; None when it has no modifier or an unknown key (a bare key would
    steal that key from every other program)."""
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
