"""The structure reads top-down, and is installed under one name.

- ``voicedesk.app`` uses ``voicedesk.engine`` and ``voicedesk.endpoint``; ``voicedesk.endpoint`` uses
  ``voicedesk.engine``; nothing in ``voicedesk.engine`` imports upward (not even inside a function).
- The engine's vocabulary (errors, audio, the data folder) imports nothing else of the engine. Its folders sit
  under the session core and import only what ``ENGINE_FOLDERS`` lets them (and the vocabulary): ``text/`` and
  ``model/`` never the core, ``clients/`` the protocol and never the session or the model. Every folder is listed.
- The lab (``voicedesk.app.lab``: benchmarks, fuzzers, attack clients, stand-ins) imports the product and is never
  imported by it.
- No module names another in a string the ast cannot follow, but the dispatch (``engine/commands.py``), whose
  ``COMMANDS`` are read here as its imports: the one module that may name every layer and the lab (``voicedesk
  bench``), because it imports a command only when the parser is built and says what to install when it is absent.
- No import cycles between modules, counting every import: module level, under ``if TYPE_CHECKING:`` (a circle of
  types is still a circle of knowledge), inside a function, and the dispatch's commands.
- The endpoint image (packaging/Dockerfile) holds exactly the import closure of what it runs: ``serve``, the
  ``voicedesk`` command and what its build calls. Nothing the image does not run, nothing it runs missing.
- The window's helpers (``app/ui/*_actions.py``) take the few objects they use, never the window: no parameter
  called ``window`` or typed as one of the app's windows (Qt's own ``QMainWindow``, for a menu bar or a dialog's
  parent, is not the app's window).
- Code imports the installed names (``voicedesk.engine…``), never the folders (``engine…``), which would load a
  second copy of a module beside the first.
- setup.py installs every package folder: every folder of modules is a package.
- The engine and the endpoint match a class's fields by name, so a field added in the middle shifts nothing.
"""

from __future__ import annotations

import ast
import runpy
import tomllib

import setuptools

from tests.support.image import (
    SERVE_SCRIPT,
    SOURCE_ROOT,
    copy_lines,
    image_files,
    image_runs,
    missing_sources,
    serve_closure,
    shipped_modules,
)
from tests.support.import_graph import (
    REPO,
    closure,
    imported_names,
    imports,
    module_level,
    module_strings,
    product_modules,
)
from voicedesk.engine.commands import COMMANDS

LAYERS = {"app": {"app", "engine", "endpoint"}, "endpoint": {"endpoint", "engine"}, "engine": {"engine"}}
LAB = "voicedesk.app.lab"
DISPATCH = "voicedesk.engine.commands"
ENGINE_VOCABULARY = {"errors", "audio", "paths", "tasks"}
"""Modules of the engine every part of it may import; they import only each other."""
ENGINE_FOLDERS = {
    "text": {"text"},
    "model": {"model", "text"},
    "measure": {"measure", "text", "events"},
    "clients": set("clients api engine_spec events protocol model.voices model.languages text".split()),
}
"""What each of the engine's folders may import besides the vocabulary: places under ``voicedesk.engine``, a
folder, a module or a folder's module. A remote client speaks the protocol and reads the voice catalogue; it never
runs the session or the model."""


def _engine_place(module: str) -> str | None:
    """``model.voices`` for ``voicedesk.engine.model.voices``; None outside the engine."""
    return module.removeprefix("voicedesk.engine.") if module.startswith("voicedesk.engine.") else None


def _within(module: str, places: set[str]) -> bool:
    place = _engine_place(module)
    return place is not None and any(place == p or place.startswith(p + ".") for p in places)


def _dispatched() -> set[str]:
    """The modules the dispatch names in strings, imported when ``voicedesk``'s parser is built."""
    return {command.module for command in COMMANDS}


def _import_graph() -> dict[str, set[str]]:
    """Every product module's imports of other product modules, at any level; the dispatch's commands included."""
    modules = product_modules()
    graph = {name: {i for i in imports(path) if i in modules and i != name} for name, path in modules.items()}
    graph[DISPATCH] |= _dispatched()
    return graph


def test_layers_only_import_downwards():
    """The dispatch's commands are not checked here: it is above the layers (see the module docstring)."""
    wrong = []
    for name, path in product_modules().items():
        layer = name.split(".")[1]
        for imported in imports(path):
            if imported.startswith("voicedesk.") and imported.split(".")[1] not in LAYERS[layer]:
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


def _engine_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "engine" else None


def test_every_folder_of_the_engine_is_under_the_folder_rule():
    folders = {_engine_folder(name) for name in product_modules()} - {None}
    assert folders == set(ENGINE_FOLDERS)


def _folder_rule_breaches(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, imported in sorted(graph.items()):
        if _within(name, ENGINE_VOCABULARY):
            allowed = ENGINE_VOCABULARY
        elif (folder := _engine_folder(name)) is not None:
            allowed = ENGINE_VOCABULARY | ENGINE_FOLDERS.get(folder, set())
        else:
            continue
        # A module's own package (``voicedesk.engine.model`` for ``model.voices``) is not a place of its own.
        wrong += [f"{name} imports {i}" for i in sorted(imported) if _engine_place(i) and not _within(i, allowed)]
    return wrong


def test_the_engines_folders_and_vocabulary_import_only_what_sits_under_them():
    graph = _import_graph()
    assert _folder_rule_breaches(graph) == []


def test_the_folder_rule_sees_a_folder_reaching_up_and_the_vocabulary_reaching_out():
    graph = {
        "voicedesk.engine.model.voices": {"voicedesk.engine.events", "voicedesk.engine.errors"},
        "voicedesk.engine.clients.remote": {"voicedesk.engine.protocol", "voicedesk.engine.model.kokoro_synth"},
        "voicedesk.engine.audio": {"voicedesk.engine.events"},
        "voicedesk.engine.text.chunking.chunker": {
            "voicedesk.engine.text.chunking.sentence_ends",
            "voicedesk.engine.paths",
        },
    }
    assert _folder_rule_breaches(graph) == [
        "voicedesk.engine.audio imports voicedesk.engine.events",
        "voicedesk.engine.clients.remote imports voicedesk.engine.model.kokoro_synth",
        "voicedesk.engine.model.voices imports voicedesk.engine.events",
    ]


def test_the_product_never_imports_the_lab():
    """Not even the window: the lab adds its window tools (Tools ▸ A/B runs) through an entry point. The dispatch's
    ``voicedesk bench`` is the one exception (see the module docstring)."""
    wrong = []
    for name, path in product_modules().items():
        if name == LAB or name.startswith(LAB + "."):
            continue
        for imported in imports(path):
            if imported == LAB or imported.startswith(LAB + "."):
                wrong.append(f"{name} imports {imported}")
    assert wrong == []


def test_module_names_in_strings_are_only_the_dispatchs_commands():
    modules = product_modules()
    named = {
        name: found
        for name, path in modules.items()
        if not name.startswith(LAB) and (found := module_strings(path.read_text(encoding="utf-8"), set(modules)))
    }
    assert named == {DISPATCH: _dispatched()}


def test_the_string_check_sees_a_module_named_in_a_string_and_not_a_logger():
    source = (
        "import importlib, logging\nlog = logging.getLogger('voicedesk.endpoint.bidi')\n"
        "TOOL = 'voicedesk.app.lab.ab_panel:install'\nimportlib.import_module('voicedesk.app.main')\n"
    )
    modules = {"voicedesk.endpoint.bidi", "voicedesk.app.lab.ab_panel", "voicedesk.app.main"}
    assert module_strings(source, modules) == {"voicedesk.app.lab.ab_panel", "voicedesk.app.main"}


def test_the_dispatchs_commands_exist_and_register():
    modules = product_modules()
    missing = [c.module for c in COMMANDS if c.module not in modules]
    assert missing == []
    unregistered = [
        c.module
        for c in COMMANDS
        if not any(
            isinstance(node, ast.FunctionDef) and node.name == "register"
            for node in ast.parse(modules[c.module].read_text(encoding="utf-8")).body
        )
    ]
    assert unregistered == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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
        for nxt in sorted(graph.get(node, ())):
            # A package's __init__ imported by its own submodule is not a cycle worth failing on.
            if not node.startswith(nxt + "."):
                visit(nxt)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    return cycles


def test_no_import_cycles_not_even_through_a_function_or_between_types():
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_sees_type_only_and_function_level_imports():
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from voicedesk.app.ui.window import MainWindow\n"
        "def later():\n    from voicedesk.engine.model import weights\n"
    )
    tree = ast.parse(source)
    assert "voicedesk.app.ui.window" in {n for s in module_level(tree.body) for n in imported_names(s)}
    assert "voicedesk.engine.model.weights" in {n for node in ast.walk(tree) for n in imported_names(node)}
    graph = {"a.languages": {"a.weights"}, "a.weights": {"a.voices"}, "a.voices": {"a.languages"}, "a": set()}
    assert _cycles(graph) == [["a.languages", "a.weights", "a.voices", "a.languages"]]


def test_the_endpoint_image_holds_exactly_what_it_runs():
    files = image_files()
    shipped = {path.relative_to(REPO).as_posix() for path in shipped_modules()}
    needed = {product_modules()[name].relative_to(REPO).as_posix() for name in serve_closure()}
    advice = f"run python -m tests.support.image --write; the COPY lines should be:\n{copy_lines(serve_closure())}"
    assert sorted(shipped - needed) == [], advice
    assert sorted(needed - shipped) == [], advice
    misplaced = [f"{p} → {files[REPO / p]}" for p in sorted(shipped) if files[REPO / p] != SOURCE_ROOT + p]
    assert misplaced == []
    assert files[SERVE_SCRIPT] == "/usr/local/bin/serve"
    assert missing_sources() == [], "docker build would fail"


def test_the_image_check_reads_what_a_dockerfile_copies_and_runs(tmp_path):
    dockerfile, serve = tmp_path / "Dockerfile", tmp_path / "serve"
    dockerfile.write_text(
        "FROM base AS build\n# COPY engine/gone.py /src/engine/ (a comment)\n"
        "COPY engine/errors.py \\\n    engine/gone.py /src/engine/\nCOPY --from=build /opt/venv /opt/venv\n"
        "RUN voicedesk phonemes --help && python -m voicedesk.engine.text.frontend.grammars\n"
    )
    serve.write_text('exec python -m voicedesk.endpoint.serve_cli "$@"\n')
    assert image_files(dockerfile) == {REPO / "engine" / "errors.py": "/src/engine/errors.py"}
    assert missing_sources(dockerfile) == ["engine/gone.py"]
    modules = {"voicedesk.engine.text.frontend.grammars", "voicedesk.endpoint.serve_cli"}
    assert image_runs(dockerfile, serve) == (modules, {"phonemes"})


def test_the_image_check_follows_what_the_image_runs(tmp_path):
    modules, commands = image_runs()
    assert "voicedesk.endpoint.serve_cli" in modules, "packaging/serve runs it"
    assert "voicedesk.engine.text.frontend.grammars" in modules and commands == {"models"}
    needed = serve_closure()
    assert {"voicedesk.engine.commands", "voicedesk.engine.model.models_cli", "voicedesk.engine"} <= needed
    left_out = ("voicedesk.app", "voicedesk.endpoint.deploy", "voicedesk.engine.clients", "voicedesk.engine.measure")
    assert [name for name in needed if name.startswith(left_out)] == []
    # A function's own import counts, and so does the package of each module.
    (tmp_path / "serve.py").write_text("def main():\n    from voicedesk.x.model import weights\n")
    (tmp_path / "weights.py").write_text("")
    (tmp_path / "model.py").write_text("")
    fake = {"voicedesk.x.serve": tmp_path / "serve.py", "voicedesk.x.model.weights": tmp_path / "weights.py"}
    fake["voicedesk.x.model"] = tmp_path / "model.py"
    assert closure({"voicedesk.x.serve"}, fake) == set(fake)


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
            for imported in imports(path):
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
    """Class patterns naming a field by position (``case Request(text, voice)``): a field added to the class before
    it would shift it silently. A builtin's pattern (``int(seq)``) matches the value itself."""
    builtins = {"bool", "bytes", "dict", "float", "int", "list", "set", "str", "tuple"}
    return [
        ast.unparse(n)
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.MatchClass) and n.patterns and ast.unparse(n.cls) not in builtins
    ]


def test_the_engine_and_the_endpoint_match_fields_by_name():
    offenders = {
        path.relative_to(REPO).as_posix(): found
        for top in ("engine", "endpoint")
        for path in sorted((REPO / top).rglob("*.py"))
        if (found := _fields_matched_by_position(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_field_check_sees_fields_matched_by_position():
    source = "match c:\n    case Request(text, voice): pass\n    case Request(text, voice=v) | Flush(r) | int(r): pass"
    assert _fields_matched_by_position(source) == ["Request(text, voice)", "Request(text, voice=v)", "Flush(r)"]
