"""Form and dialog helpers shared by the window's cards and dialogs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMessageBox,
    QScrollArea,
    QScrollBar,
    QVBoxLayout,
    QWidget,
)

from voicedesk.app.ui.widgets import label

WHEEL_CONTROLS = (QComboBox, QAbstractSlider, QAbstractSpinBox)


class CardColumn(QScrollArea):
    """One of the window's side columns: cards in ``column``, scrolling, never a Tab stop itself (its cards' widgets
    are)."""

    def __init__(self, min_width: int, margins: tuple[int, int, int, int]) -> None:
        super().__init__()
        self.setObjectName("Sidebar")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMinimumWidth(min_width)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        body = QWidget()
        body.setObjectName("SidebarBody")
        self.column = QVBoxLayout(body)
        self.column.setContentsMargins(*margins)
        self.column.setSpacing(12)
        self.setWidget(body)


class PageSwitcher(QWidget):
    """As tall as the page shown (a QStackedWidget keeps its tallest page's height once labels wrap)."""

    def __init__(self) -> None:
        super().__init__()
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._pages: list[QWidget] = []
        self._current = 0

    def addWidget(self, page: QWidget) -> int:
        self._pages.append(page)
        self._layout.addWidget(page)
        page.setVisible(len(self._pages) - 1 == self._current)
        return len(self._pages) - 1

    def setCurrentIndex(self, index: int) -> None:
        self._current = index
        for number, page in enumerate(self._pages):
            page.setVisible(number == index)

    def currentIndex(self) -> int:
        return self._current


def picker(min_chars: int = 8) -> QComboBox:
    """A combo box that asks for little width (long entries are elided, not widening the sidebar)."""
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(min_chars)
    return combo


def form_layout() -> QFormLayout:
    form = QFormLayout()
    form.setContentsMargins(0, 0, 0, 0)
    form.setHorizontalSpacing(10)
    form.setVerticalSpacing(8)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def page(form: QFormLayout, *extra: QWidget) -> QWidget:
    widget = QWidget()
    layout = QVBoxLayout(widget)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(8)
    layout.addLayout(form)
    for item in extra:
        layout.addWidget(item)
    return widget


class FocusedWheel(QObject):
    """The wheel changes only the focused control, else scrolls the column (not every slider the pointer passes)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        area = watched.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:  # the column scrolls as if the pointer were over its background
            QApplication.sendEvent(area.viewport(), event.clone())
        event.accept()
        return True

    def guard(self, root: QWidget) -> None:
        """Applies to every wheel-driven control inside ``root`` (a click or Tab still gives them the focus)."""
        for control in root.findChildren(QWidget):
            if isinstance(control, WHEEL_CONTROLS) and not isinstance(control, QScrollBar):
                control.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the wheel alone never takes the focus
                control.installEventFilter(self)


def save_row(
    layout: QVBoxLayout, on_save: Callable[[], object], on_cancel: Callable[[], object]
) -> tuple[QLabel, QDialogButtonBox]:
    """An edit dialog's foot: its error line (hidden until a save is refused) and Save / Cancel."""
    problem = label("", "ErrorText", wrap=True)
    problem.hide()
    layout.addWidget(problem)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
    buttons.accepted.connect(on_save)
    buttons.rejected.connect(on_cancel)
    layout.addWidget(buttons)
    return problem, buttons


async def ask(parent: QWidget, title: str, text: str, yes: str, no: str) -> bool:
    """True for ``yes``; closing the box counts as ``no``. Not modal to the loop: the app keeps speaking meanwhile."""
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
