"""The structure reads top-down, and is installed under one name.

- ``voicedesk.app`` uses ``voicedesk.engine`` and ``voicedesk.endpoint``; ``voicedesk.endpoint`` uses
  ``voicedesk.engine``; nothing in ``voicedesk.engine`` imports upward (not even inside a function).
- Inside the engine, ``text/``, ``model/`` and ``measure/`` sit under the session core: they use the shared
  vocabulary (errors, events, audio, the data folder) and the text rules, never the core, the driver, the clients
  or each other.
- The lab (``voicedesk.app.lab``: benchmarks, fuzzers, attack clients, stand-ins) imports the product and is never
  imported by it, and the endpoint image (what packaging/Dockerfile copies) does not hold it.
- No import cycles between modules: module-level imports, including those under ``if TYPE_CHECKING:`` (a circle of
  types is still a circle of knowledge); a function's own imports run later and may not form one either.
- The window's helpers (``app/ui/*_actions.py``) take the few objects they use, never the window: no parameter
  called ``window`` or typed as one of the app's windows (Qt's own ``QMainWindow``, for a menu bar or a dialog's
  parent, is not the app's window).
- Code imports the installed names (``voicedesk.engine…``), never the folders (``engine…``), which would load a
  second copy of a module beside the first.
- setup.py installs every package folder: every folder of modules is a package.
"""

from __future__ import annotations

import ast
import runpy
import tomllib
from pathlib import Path

import setuptools

from tests.support.image import image_sources

REPO = Path(__file__).resolve().parent.parent
LAYERS = {"app": {"app", "engine", "endpoint"}, "endpoint": {"endpoint", "engine"}, "engine": {"engine"}}
LAB = "voicedesk.app.lab"
ENGINE_VOCABULARY = {
    "voicedesk.engine.errors",
    "voicedesk.engine.events",
    "voicedesk.engine.audio",
    "voicedesk.engine.paths",
}
ENGINE_FOLDERS = {"text": {"text"}, "model": {"model", "text"}, "measure": {"measure", "text"}}
"""Which of the engine's folders each folder may import, besides ENGINE_VOCABULARY."""
KNOWN_CYCLES: set[str] = set()
"""Modules allowed in a cycle: none. (The window's helpers took the whole MainWindow, a type-only import back to
it; they now take the few objects they use.) Never add one."""


def _modules() -> dict[str, Path]:
    found = {}
    for top in LAYERS:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found["voicedesk." + ".".join(parts)] = path
    return found


def _names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return set()


def _module_level(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run when the module is imported or type-checked: the top level and its if/try blocks."""
    found = []
    for node in statements:
        found.append(node)
        if isinstance(node, ast.If):
            found += _module_level(node.body) + _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            blocks = [node.body, node.orelse, node.finalbody, *(handler.body for handler in node.handlers)]
            for block in blocks:
                found += _module_level(block)
    return found


def _imports(path: Path, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _module_level(tree.body) if module_level_only else list(ast.walk(tree))
    return {name for node in nodes if isinstance(node, ast.stmt) for name in _names(node)}


def test_layers_only_import_downwards():
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        layer = name.split(".")[1]
        for imported in _imports(path, module_level_only=False):
            if imported.startswith("voicedesk."):
                target = imported.split(".")[1]
                if target not in LAYERS[layer]:
                    wrong.append(f"{name} imports {imported}")
    assert wrong == []


def _engine_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "engine" and parts[2] in ENGINE_FOLDERS else None


def test_the_engines_folders_import_only_what_sits_under_them():
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        folder = _engine_folder(name)
        if folder is None:
            continue
        for imported in _imports(path, module_level_only=False):
            if not imported.startswith("voicedesk.") or imported in ENGINE_VOCABULARY or imported not in modules:
                continue
            target = _engine_folder(imported) or ("model" if imported == "voicedesk.engine.model" else None)
            if target not in ENGINE_FOLDERS[folder]:
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


def test_the_product_never_imports_the_lab():
    """Not even the window: the lab adds its window tools (Tools ▸ A/B runs) through an entry point."""
    wrong = []
    for name, path in _modules().items():
        if name == LAB or name.startswith(LAB + "."):
            continue
        for imported in _imports(path, module_level_only=False):
            if imported == LAB or imported.startswith(LAB + "."):
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


def test_the_endpoint_image_holds_what_serve_runs_and_not_the_lab_or_the_app():
    shipped = {p.relative_to(REPO).as_posix() for p in image_sources()}
    assert "engine/commands.py" in shipped and "endpoint/serve_cli.py" in shipped and "setup.py" in shipped
    assert [p for p in shipped if p.startswith(("app/", "tests/"))] == []


def test_no_import_cycles_not_even_between_types():
    modules = _modules()
    graph = {
        name: {i for i in _imports(path, module_level_only=True) if i in modules and i != name}
        for name, path in modules.items()
    }
    visiting: list[str] = []
    done: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        if node in done:
            return
        if node in visiting:
            cycles.append([*visiting[visiting.index(node) :], node])
            return
        visiting.append(node)
        for nxt in sorted(graph[node]):
            # A package's __init__ imported by its own submodule is not a cycle worth failing on.
            if not node.startswith(nxt + "."):
                visit(nxt)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert [cycle for cycle in cycles if not set(cycle) <= KNOWN_CYCLES] == []


def test_the_cycle_check_sees_type_only_imports():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from voicedesk.app.ui.window import MainWindow\n"
    assert "voicedesk.app.ui.window" in {n for s in _module_level(ast.parse(source).body) for n in _names(s)}


def _window_parameters(source: str) -> list[str]:
    """Parameters of ``source``'s functions that hand over the app's window: called ``window`` or typed as a
    ``…Window`` that is not one of Qt's classes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                typed = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                qt = typed.startswith("Q") and typed[1:2].isupper()
                if not qt and (arg.arg == "window" or typed.strip("'\"").endswith("Window")):
                    found.append(f"{arg.arg}: {typed}" if typed else arg.arg)
    return found


def test_the_windows_helpers_take_the_objects_they_use_not_the_window():
    offenders = {
        path.name: found
        for path in sorted((REPO / "app" / "ui").glob("*_actions.py"))
        if (found := _window_parameters(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_window_parameter_check_sees_a_window_handed_over():
    assert _window_parameters("def __init__(self, window, history): ...") == ["window"]
    assert _window_parameters("def __init__(self, owner: 'ConsoleWindow'): ...") == ["owner: 'ConsoleWindow'"]
    assert _window_parameters("def __init__(self, window: MainWindow): ...") == ["window: MainWindow"]
    assert _window_parameters("def __init__(self, window: QMainWindow, status: StatusLine): ...") == []


def test_code_and_tests_import_the_installed_names_only():
    offenders = []
    for top in (*LAYERS, "tests"):
        for path in (REPO / top).rglob("*.py"):
            for imported in _imports(path, module_level_only=False):
                if imported.split(".")[0] in LAYERS:
                    offenders.append(f"{path.relative_to(REPO)}: {imported}")
    assert offenders == []


def test_every_folder_of_modules_is_a_package_that_setup_installs(monkeypatch):
    """setup.py installs the folders with an __init__.py; a folder of modules without one would be left out."""
    bare = [
        folder.relative_to(REPO).as_posix()
        for top in LAYERS
        for folder in [REPO / top, *(p for p in (REPO / top).rglob("*") if p.is_dir())]
        if folder.name != "__pycache__" and any(folder.glob("*.py")) and not (folder / "__init__.py").exists()
    ]
    assert bare == []
    asked: dict[str, object] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **options: asked.update(options))
    runpy.run_path(str(REPO / "setup.py"))
    folders = {
        "voicedesk." + ".".join(i.parent.relative_to(REPO).parts)
        for t in LAYERS
        for i in (REPO / t).rglob("__init__.py")
    }
    assert set(asked["packages"]) == folders
    assert asked["package_dir"] == {f"voicedesk.{top}": top for top in LAYERS}
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"voicedesk": "voicedesk.engine.commands:main"}


def _fields_matched_by_position(source: str) -> list[str]:
    """Class patterns naming more than one field by position (``case Request(text, voice, speed)``): a field added
    to the class in the middle would shift them silently."""
    tree = ast.parse(source)
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.MatchClass) and len(n.patterns) > 1]


def test_the_engine_and_the_endpoint_match_fields_by_name():
    offenders = {
        path.relative_to(REPO).as_posix(): found
        for top in ("engine", "endpoint")
        for path in sorted((REPO / top).rglob("*.py"))
        if (found := _fields_matched_by_position(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_field_check_sees_fields_matched_by_position():
    source = "match c:\n    case Request(text, voice):\n        pass\n    case Request(text, voice=v) | Flush(r): pass"
    assert _fields_matched_by_position(source) == ["Request(text, voice)"]
