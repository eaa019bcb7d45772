"""Questions the window asks without blocking the event loop (the app keeps speaking while one is open)."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QMessageBox, QWidget


async def ask(parent: QWidget, title: str, text: str, yes: str, no: str) -> bool:
    """True for ``yes``; closing the box counts as ``no``."""
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.NoButton, parent)
    yes_button = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    no_button = box.addButton(no, QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(no_button)
    box.setObjectName("ConsentQuestion")
    answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    box.finished.connect(lambda _result: answered.done() or answered.set_result(box.clickedButton() is yes_button))
    box.open()
    try:
        return await answered
    finally:
        box.deleteLater()
