"""The app's look: one palette and one style sheet, so every widget agrees on colours, radii and spacing."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication


@dataclass(frozen=True)
class Palette:
    window: str = "#F4F5F8"
    surface: str = "#FFFFFF"
    surface_alt: str = "#F8F9FB"
    border: str = "#E2E5EB"
    text: str = "#1D2230"
    text_secondary: str = "#5B6272"
    text_muted: str = "#9AA1AE"
    accent: str = "#4F46E5"
    accent_hover: str = "#4338CA"
    accent_soft: str = "#EEF0FF"
    accent_text: str = "#312E81"
    highlight: str = "#C7D2FE"
    success: str = "#15803D"
    warning: str = "#B45309"
    warning_soft: str = "#FEF3C7"
    error: str = "#B91C1C"
    error_soft: str = "#FEE2E2"
    info_soft: str = "#E0F2FE"
    info: str = "#0369A1"
    # latency waterfall stages
    stage_text: str = "#CBD5E1"
    stage_dispatch: str = "#94A3B8"
    stage_synthesis: str = "#6366F1"
    stage_onset: str = "#A78BFA"
    stage_output: str = "#10B981"


PALETTE = Palette()

STATE_COLORS = {
    "ready": PALETTE.success,
    "loading": PALETTE.warning,
    "downloading": PALETTE.warning,
    "missing": PALETTE.warning,
    "disconnected": PALETTE.warning,
    "error": PALETTE.error,
    "idle": PALETTE.text_muted,
}


def style_sheet(p: Palette = PALETTE) -> str:
    return f"""
    QMainWindow, QWidget#Root {{ background: {p.window}; }}
    QWidget {{ color: {p.text}; }}
    QToolTip {{ background: {p.text}; color: white; border: none; padding: 4px 6px; }}

    QFrame#Header {{ background: {p.surface}; border-bottom: 1px solid {p.border}; }}
    QLabel#AppName {{ font-size: 15pt; font-weight: 600; color: {p.text}; }}
    QLabel#AppTagline {{ color: {p.text_muted}; }}

    QScrollArea#Sidebar, QWidget#SidebarBody {{ background: {p.window}; border: none; }}
    QFrame#Card {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 10px; }}
    QLabel#CardTitle {{ color: {p.text_secondary}; font-size: 8pt; font-weight: 700; letter-spacing: 1px; }}
    QLabel#FieldLabel {{ color: {p.text_secondary}; }}
    QLabel#Hint {{ color: {p.text_muted}; font-size: 8pt; }}
    QLabel#Message {{ color: {p.text_secondary}; font-size: 8pt; }}
    QLabel#ErrorText {{ color: {p.error}; font-size: 8pt; }}
    QLineEdit#Invalid {{ border: 2px solid {p.error}; }}

    QLineEdit, QComboBox, QDoubleSpinBox, QSpinBox {{
        background: {p.surface}; border: 1px solid {p.border}; border-radius: 6px; padding: 4px 8px;
        min-height: 20px; selection-background-color: {p.highlight}; selection-color: {p.text};
    }}
    QAbstractSpinBox QLineEdit {{ border: none; padding: 0; min-height: 0; background: transparent; }}
    QLineEdit:focus, QComboBox:focus, QDoubleSpinBox:focus, QSpinBox:focus {{ border: 1px solid {p.accent}; }}
    QComboBox::drop-down {{ border: none; width: 18px; }}
    QComboBox QAbstractItemView {{ background: {p.surface}; border: 1px solid {p.border};
        selection-background-color: {p.accent_soft}; selection-color: {p.text}; }}
    QPlainTextEdit#Composer {{
        background: {p.surface}; border: 1px solid {p.border}; border-radius: 10px; padding: 8px 10px;
        font-size: 11pt; selection-background-color: {p.highlight}; selection-color: {p.text};
    }}
    QPlainTextEdit#Composer:focus {{ border: 1px solid {p.accent}; }}

    QPushButton {{
        background: {p.surface}; border: 1px solid {p.border}; border-radius: 6px; padding: 5px 12px;
        color: {p.text};
    }}
    QPushButton:hover {{ background: {p.surface_alt}; border-color: #CBD0D9; }}
    QPushButton:disabled {{ color: {p.text_muted}; background: {p.surface_alt}; }}
    QPushButton#Primary {{ background: {p.accent}; color: white; border: 1px solid {p.accent}; font-weight: 600;
        padding: 7px 18px; border-radius: 8px; }}
    QPushButton#Primary:hover {{ background: {p.accent_hover}; }}
    QPushButton#Primary:disabled {{ background: #A5A8E8; border-color: #A5A8E8; color: #F5F5FF; }}
    QPushButton#Danger {{ color: {p.error}; font-weight: 600; padding: 7px 14px; border-radius: 8px; }}
    QPushButton#Danger:disabled {{ color: {p.text_muted}; }}
    QPushButton#Link {{ border: none; background: transparent; color: {p.accent}; padding: 2px 4px; }}
    QPushButton#Link:hover {{ text-decoration: underline; }}

    QFrame#Segmented {{ background: {p.surface_alt}; border: 1px solid {p.border}; border-radius: 8px; }}
    QFrame#Segmented QPushButton {{ border: none; background: transparent; border-radius: 6px; padding: 5px 6px;
        color: {p.text_secondary}; }}
    QFrame#Segmented QPushButton:checked {{ background: {p.surface}; color: {p.text}; font-weight: 600;
        border: 1px solid {p.border}; }}

    QCheckBox {{ color: {p.text_secondary}; spacing: 6px; }}
    QSlider::groove:horizontal {{ height: 4px; background: {p.border}; border-radius: 2px; }}
    QSlider::sub-page:horizontal {{ background: {p.accent}; border-radius: 2px; }}
    QSlider::sub-page:horizontal:disabled {{ background: #C9CDD6; }}
    QSlider::handle:horizontal:disabled {{ border-color: #C9CDD6; }}
    QSlider::handle:horizontal {{ background: white; border: 2px solid {p.accent}; width: 12px; height: 12px;
        margin: -6px 0; border-radius: 8px; }}
    QProgressBar {{ background: {p.surface_alt}; border: 1px solid {p.border}; border-radius: 4px; height: 8px;
        text-align: center; color: transparent; }}
    QProgressBar::chunk {{ background: {p.accent}; border-radius: 3px; }}

    QScrollArea#Conversation, QWidget#ConversationBody {{ background: {p.window}; border: none; }}
    QFrame#Bubble {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 14px; }}
    QFrame#UserBubble {{ background: {p.accent}; border: none; border-radius: 14px; }}
    QLabel#UserText {{ color: white; font-size: 11pt; }}
    QLabel#BubbleText {{ font-size: 12pt; }}
    QLabel#BubbleMeta {{ color: {p.text_muted}; font-size: 8pt; }}
    QLabel#EmptyTitle {{ color: {p.text_secondary}; font-size: 14pt; font-weight: 600; }}
    QLabel#EmptyHint {{ color: {p.text_muted}; }}

    QFrame#LatencyPanel {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 10px; }}
    QLabel#PanelTitle {{ font-weight: 600; }}
    QLabel#Metric {{ background: {p.surface_alt}; border: 1px solid {p.border}; border-radius: 10px;
        padding: 2px 6px; color: {p.text_secondary}; }}

    QFrame#ComposerBar {{ background: {p.surface}; border-top: 1px solid {p.border}; }}
    QStatusBar {{ background: {p.surface}; border-top: 1px solid {p.border}; color: {p.text_secondary}; }}
    QStatusBar::item {{ border: none; }}
    QStatusBar QLabel {{ padding: 2px 10px; }}
    QToolButton {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 6px; padding: 4px 10px; }}
    QToolButton:hover {{ background: {p.surface_alt}; }}
    QToolButton::menu-indicator {{ subcontrol-position: right center; right: 6px; }}
    QToolButton[popupMode="2"] {{ padding-right: 20px; }}
    QMenu {{ background: {p.surface}; border: 1px solid {p.border}; padding: 4px; }}
    QMenu::item {{ padding: 5px 18px; border-radius: 4px; }}
    QMenu::item:selected {{ background: {p.accent_soft}; }}
    QSplitter::handle {{ background: transparent; }}
    QSplitter::handle:vertical {{ height: 6px; }}
    QSplitter::handle:hover {{ background: {p.border}; }}
    QPushButton#Small {{ padding: 3px 8px; }}
    QPushButton#Phrase {{ text-align: left; padding: 6px 10px; font-weight: 600; }}
    QListWidget {{ background: {p.surface}; border: 1px solid {p.border}; border-radius: 6px; padding: 2px; }}
    QListWidget::item {{ padding: 3px 4px; border-radius: 4px; }}
    QListWidget::item:selected {{ background: {p.accent_soft}; color: {p.text}; }}

    /* Every Tab stop shows where the keyboard is. */
    QPushButton:focus, QToolButton:focus {{ border: 1px solid {p.accent}; }}
    QPushButton#Primary:focus {{ border: 2px solid {p.accent_text}; }}
    QPushButton#Link:focus {{ border: 1px solid {p.accent}; border-radius: 4px; }}
    QFrame#Segmented QPushButton:focus {{ border: 1px solid {p.accent}; }}
    QCheckBox:focus {{ color: {p.accent}; }}
    QSlider:focus {{ background: {p.accent_soft}; border-radius: 4px; }}
    QListWidget:focus, QTextBrowser:focus, QKeySequenceEdit:focus {{ border: 1px solid {p.accent}; }}
    QScrollArea:focus, QScrollArea#Conversation:focus {{ border: 1px solid {p.accent}; }}
    QScrollBar:vertical {{ background: transparent; width: 10px; margin: 2px; }}
    QScrollBar::handle:vertical {{ background: #D5D9E0; border-radius: 4px; min-height: 24px; }}
    QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
    """


def apply_theme(app: QApplication) -> None:
    app.setStyle("Fusion")
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Window, QColor(PALETTE.window))
    palette.setColor(QPalette.ColorRole.Base, QColor(PALETTE.surface))
    palette.setColor(QPalette.ColorRole.Text, QColor(PALETTE.text))
    palette.setColor(QPalette.ColorRole.WindowText, QColor(PALETTE.text))
    palette.setColor(QPalette.ColorRole.Button, QColor(PALETTE.surface))
    palette.setColor(QPalette.ColorRole.ButtonText, QColor(PALETTE.text))
    palette.setColor(QPalette.ColorRole.Highlight, QColor(PALETTE.accent))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor("#FFFFFF"))
    palette.setColor(QPalette.ColorRole.PlaceholderText, QColor(PALETTE.text_muted))
    app.setPalette(palette)
    font = QFont(app.font())
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
    app.setFont(font)
    app.setStyleSheet(style_sheet())
