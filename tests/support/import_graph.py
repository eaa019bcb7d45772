"""The product's imports, read from its source (ast): who imports whom, at the top or inside a function."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("app", "engine", "endpoint")


def product_modules() -> dict[str, Path]:
    """Every module of app/, engine/ and endpoint/ by its installed name (``voicedesk.engine.events``)."""
    found = {}
    for top in LAYERS:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found["voicedesk." + ".".join(parts)] = path
    return found


@cache
def parse(source: str) -> ast.Module:
    """Parsed once per text: the architecture tests read every module several times."""
    return ast.parse(source)


def imported_names(node: ast.AST) -> set[str]:
    """What an import statement names: the module, and each ``from`` name as a possible submodule."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return set()


def module_level(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run when the module is imported or type-checked: the top level and its if/try blocks."""
    found = []
    for node in statements:
        found.append(node)
        if isinstance(node, ast.If):
            found += module_level(node.body) + module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in [node.body, node.orelse, node.finalbody, *(handler.body for handler in node.handlers)]:
                found += module_level(block)
    return found


@cache
def imports(path: Path, module_level_only: bool = False) -> frozenset[str]:
    tree = parse(path.read_text(encoding="utf-8"))
    nodes = module_level(tree.body) if module_level_only else list(ast.walk(tree))
    return frozenset(name for node in nodes for name in imported_names(node))


def module_strings(source: str, modules: set[str]) -> set[str]:
    """Strings that name one of ``modules`` (``"voicedesk.app.main"``, ``"voicedesk.app.lab.x:install"``): imports
    the ast cannot see. A logger's name is not one."""
    tree = parse(source)
    loggers = {
        id(arg)
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("getLogger")
        for arg in call.args
    }
    return {
        node.value.split(":")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in loggers
        if node.value.split(":")[0] in modules
    }


def packages_of(module: str) -> set[str]:
    """The packages Python imports before ``module`` (``voicedesk.engine``, ``voicedesk.engine.model``…)."""
    parts = module.split(".")
    return {".".join(parts[:end]) for end in range(2, len(parts))}


def closure(roots: set[str], modules: dict[str, Path]) -> set[str]:
    """The modules ``roots`` can import, at any level (a function's imports run too), packages included."""
    found: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in found:
            continue
        found.add(module)
        todo += [name for name in imports(modules[module]) | packages_of(module) if name in modules]
    return found
