"""The structure reads top-down, and is installed under one name.

- ``voicedesk.app`` uses ``voicedesk.engine`` and ``voicedesk.endpoint``; ``voicedesk.endpoint`` uses
  ``voicedesk.engine``; nothing in ``voicedesk.engine`` imports upward (not even inside a function).
- No import cycles between modules (imports at module level; a function's own imports run later and may not
  form one either, but would not break start-up).
- Code imports the installed names (``voicedesk.engine…``), never the folders (``engine…``), which would load a
  second copy of a module beside the first.
- ``pyproject.toml`` installs every package folder.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAYERS = {"app": {"app", "engine", "endpoint"}, "endpoint": {"endpoint", "engine"}, "engine": {"engine"}}


def _modules() -> dict[str, Path]:
    found = {}
    for top in LAYERS:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found["voicedesk." + ".".join(parts)] = path
    return found


def _imports(path: Path, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


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


def test_no_module_level_import_cycles():
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
    assert cycles == []


def test_code_and_tests_import_the_installed_names_only():
    offenders = []
    for top in (*LAYERS, "tests"):
        for path in (REPO / top).rglob("*.py"):
            for imported in _imports(path, module_level_only=False):
                if imported.split(".")[0] in LAYERS:
                    offenders.append(f"{path.relative_to(REPO)}: {imported}")
    assert offenders == []


def test_every_package_folder_is_installed_under_voicedesk():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        "voicedesk." + ".".join(init.parent.relative_to(REPO).parts)
        for top in LAYERS
        for init in (REPO / top).rglob("__init__.py")
    }
    assert set(config["packages"]) == folders
    assert config["package-dir"] == {f"voicedesk.{top}": top for top in LAYERS}


def test_the_window_parts_form_no_circle_even_for_type_checking():
    """app/ui: the window imports its helpers and widgets; none of them imports the window back, not even under
    ``if TYPE_CHECKING:`` (they see it as ``app.ui.console_window.ConsoleWindow``), so the parts read top-down."""
    modules = {name: path for name, path in _modules().items() if name.startswith("voicedesk.app.ui.")}

    def every_import(path: Path) -> set[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        blocks = [*tree.body]
        for node in tree.body:  # module level, and the imports made for the type checker only
            if isinstance(node, ast.If):
                blocks.extend(node.body)
        names: set[str] = set()
        for node in blocks:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        return {name for name in names if name in modules}

    graph = {name: every_import(path) - {name} for name, path in modules.items()}
    assert graph["voicedesk.app.ui.window"], "the rule reads the window's imports"
    importers_of_window = sorted(name for name, imported in graph.items() if "voicedesk.app.ui.window" in imported)
    assert importers_of_window == []

    def circle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    circles = [circle for name in sorted(graph) if (circle := circle_from(name)) is not None]
    assert circles == []
