"""The shape of the code: the import graph of core/, ui/, app_pages/ and app.py has no cycle, imports only
go down the layers, core never imports streamlit, and the backends' "module:function" client factories resolve.

Layers, bottom to top (a module may import only modules in its own layer or a lower one):
    0  core/__init__.py, core/settings.py, core/backends.py, core/local_models.py, core/registries.py,
       core/declared.py, core/progress.py, core/threads.py, core/files.py
    1  core/data/        2  core/retrieval/     3  core/agents/ (core/agents/llm/ too)
    4  core/evaluation/ and core/store/     5  core/study/     6  core/analysis/     7  core/cli/, core/__main__.py
    8  ui/ (the dashboard's parts)   9  app_pages/ (one module per page)   10  app.py (registers the pages)
So core imports neither ui/ nor app_pages/, and ui/ never imports app_pages/.

The graph is read with `ast`, so it sees every import statement wherever it sits: at module level,
inside functions (the lazy imports that keep `--help` and the pages fast), and under
`if TYPE_CHECKING:`. TYPE_CHECKING imports count as imports on purpose: an annotation-only upward
import still couples a lower layer to a higher one, and such an import becomes real the day
someone drops the guard. `importlib.import_module(...)` / `__import__(...)` with a literal
"core..." argument count too. Names held in strings (the backends' "module:function" clients) are
not imports; check (d) tests those separately.

An import edge goes to the module named: `import core.a.b` -> core.a.b; `from core.a import b` ->
core.a.b when b is a submodule, else core.a; relative imports are resolved against the importing
module's package. The packages a dotted import passes through (core, core.a) are not added as
edges: every module would otherwise "import" its own package, and a package's __init__ that
re-exports its submodules would be reported as a cycle with each of them.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.settings import PROJECT_ROOT

CORE_DIR = PROJECT_ROOT / "core"

# Longest prefix wins. A module is "core.x.y" (a package is named without ".__init__").
CORE_LAYERS: dict[str, int] = {
    "core": 0,
    "core.settings": 0,
    "core.backends": 0,
    "core.local_models": 0,
    "core.registries": 0,
    "core.declared": 0,
    "core.progress": 0,
    "core.threads": 0,
    "core.files": 0,
    "core.embedding_models": 0,
    "core.wheels": 0,
    "core.data": 1,
    "core.retrieval": 2,
    "core.agents": 3,
    "core.agents.llm": 3,
    "core.evaluation": 4,
    "core.store": 4,
    "core.study": 5,
    "core.analysis": 6,
    "core.cli": 7,
    "core.__main__": 7,
}

# The dashboard above core: its packages (and app.py) by top-level name.
LAYERS: dict[str, int] = {**CORE_LAYERS, "ui": 8, "app_pages": 9, "app": 10}
DASHBOARD = ("ui", "app_pages", "app")

FORBIDDEN_IN_CORE = ("streamlit",)


# ------------------------------------------------------------------------------------- the checker

@dataclass(frozen=True)
class Import:
    source: str   # importing module
    target: str   # imported module (resolved), inside or outside the package
    line: int
    type_checking: bool = False
    in_function: bool = False

    def where(self, root: Path) -> str:
        return f"{module_path(root, self.source)}:{self.line}"

    def describe(self) -> str:
        notes = [n for n, on in (("under TYPE_CHECKING", self.type_checking),
                                 ("inside a function", self.in_function)) if on]
        return f"{self.source} imports {self.target}" + (f" ({', '.join(notes)})" if notes else "")


def module_name(root: Path, path: Path) -> str:
    """core/a/b.py -> core.a.b, core/a/__init__.py -> core.a, with `root` the directory holding core/."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_path(root: Path, name: str) -> str:
    """The file of module `name`, relative to root (for failure messages)."""
    base = root.joinpath(*name.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    return path.relative_to(root).as_posix()


def discover(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (the directory root/package, or the one file root/package.py), by dotted name."""
    if not (root / package).is_dir():
        return {package: root / f"{package}.py"}
    return {module_name(root, p): p for p in sorted((root / package).rglob("*.py")) if "__pycache__" not in p.parts}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, name: str, is_package: bool, modules: Iterable[str]) -> None:
        self.name = name
        self.package = name if is_package else name.rpartition(".")[0]
        self.modules = set(modules)
        self.found: list[Import] = []
        self._type_checking = 0
        self._function = 0

    def _add(self, target: str, node: ast.AST) -> None:
        self.found.append(Import(self.name, target, node.lineno, self._type_checking > 0, self._function > 0))

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking += 1
            for child in node.body:
                self.visit(child)
            self._type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _visit_function(self, node: ast.AST) -> None:
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self.package.split(".")
            if node.level - 1 > len(base_parts) - 1:
                raise AssertionError(f"{self.name}:{node.lineno}: relative import goes above the top package")
            base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = node.module or ""
        if base == "__future__":
            return
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.modules else base, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self._add(node.args[0].value, node)
        self.generic_visit(node)


def collect_imports(root: Path, *packages: str) -> tuple[dict[str, Path], list[Import]]:
    """All modules of the packages and every import statement in them, resolved to module names."""
    modules = {name: path for package in packages for name, path in discover(root, package).items()}
    imports: list[Import] = []
    for name, path in modules.items():
        visitor = _ImportVisitor(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        imports.extend(visitor.found)
    return modules, imports


def import_graph(modules: Iterable[str], imports: Iterable[Import]) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (outside imports dropped)."""
    known = set(modules)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for imp in imports:
        if imp.target in known:
            graph[imp.source].add(imp.target)
    return graph


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One concrete cycle (a -> b -> ... -> a) per strongly connected component that has one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def strongconnect(v: str) -> None:  # Tarjan; the graphs here are a few dozen nodes, recursion is fine
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)

    cycles = []
    for component in components:
        start = component[0]
        if len(component) == 1 and start not in graph[start]:
            continue
        members = set(component)
        # shortest path start -> ... -> start inside the component (breadth first)
        previous: dict[str, str] = {}
        frontier = [start]
        found = start in graph[start]
        while frontier and not found:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & members):
                    if w == start:
                        previous[start] = v
                        found = True
                        break
                    if w not in previous:
                        previous[w] = v
                        nxt.append(w)
                if found:
                    break
            frontier = nxt
        if start in graph[start]:
            cycles.append([start, start])
            continue
        path = [start]
        v = previous[start]
        while v != start:
            path.append(v)
            v = previous[v]
        path.append(start)
        cycles.append(path[::-1])
    return cycles


def layer_of(name: str, layers: Mapping[str, int]) -> int | None:
    """The layer of the longest prefix of `name` in `layers`; None when no prefix matches."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in layers:
            return layers[prefix]
    return None


def upward_imports(imports: Iterable[Import], modules: Iterable[str], layers: Mapping[str, int]) -> list[Import]:
    """The imports from a module in layer L of a module of the package in a layer above L."""
    known = set(modules)
    return [imp for imp in imports if imp.target in known
            and layer_of(imp.target, layers) > layer_of(imp.source, layers)]


def forbidden_imports(imports: Iterable[Import], forbidden: Iterable[str]) -> list[Import]:
    """Imports of a forbidden top-level package (or any of its submodules)."""
    names = tuple(forbidden)
    return [imp for imp in imports if imp.target.split(".")[0] in names]


def format_cycle(cycle: list[str], imports: Iterable[Import], root: Path) -> str:
    """The cycle, then each edge with the line that makes it (a run-time import preferred)."""
    edges: dict[tuple[str, str], Import] = {}
    for imp in sorted(imports, key=lambda i: (i.type_checking, i.in_function, i.line)):
        edges.setdefault((imp.source, imp.target), imp)
    steps = []
    for a, b in zip(cycle, cycle[1:]):
        imp = edges[(a, b)]
        notes = [n for n, on in (("only under TYPE_CHECKING", imp.type_checking),
                                 ("inside a function", imp.in_function)) if on]
        steps.append(f"    {a} -> {b}   ({imp.where(root)}{'; ' + ', '.join(notes) if notes else ''})")
    return " -> ".join(cycle) + "\n" + "\n".join(steps)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# ------------------------------------------------------- the checks on core/, ui/, app_pages/ and app.py

@pytest.fixture(scope="module")
def core_imports() -> tuple[dict[str, Path], list[Import]]:
    return collect_imports(PROJECT_ROOT, "core")


@pytest.fixture(scope="module")
def all_imports() -> tuple[dict[str, Path], list[Import]]:
    """core and the dashboard above it: one graph, so that an import from core into ui is an edge too."""
    return collect_imports(PROJECT_ROOT, "core", *DASHBOARD)


def test_every_core_module_has_a_layer(core_imports):
    """Each module's top-level part (core.settings, core.data, ...) is listed by name: a new core/x.py
    or core/x/ is placed in a layer on purpose, never by falling under the "core" prefix."""
    modules, _ = core_imports
    unplaced = sorted(m for m in modules if m != "core" and ".".join(m.split(".")[:2]) not in CORE_LAYERS)
    assert not unplaced, (
        "core modules with no layer (add them to CORE_LAYERS in tests/test_architecture.py and to the "
        f"layer list in its docstring): {', '.join(unplaced)}")


def test_the_graph_sees_the_known_edges(all_imports):
    """Guards the checker itself on the real tree: a lazy import inside a function, a submodule named
    in `from package import submodule` (in core and in the dashboard), a TYPE_CHECKING import, and app.py's
    imports are all edges."""
    modules, imports = all_imports
    graph = import_graph(modules, imports)
    assert set(graph) == set(modules) and {"core.settings", "core.cli.main", "core.agents.llm"} <= set(graph)
    assert "core.cli.main" in graph["core.__main__"]
    assert {"ui.tables", "core.analysis.reader"} <= graph["app_pages.results"]
    assert "ui.page_settings" in graph["app"]
    assert any(i.type_checking and i.target.startswith("core.") for i in imports)
    assert any(i.in_function and i.target.startswith("core.") for i in imports)


def test_no_import_cycle(all_imports):
    """TYPE_CHECKING imports count (see the module docstring): a type-only back edge still ties the
    two modules together, it only hides the cycle from the interpreter."""
    modules, imports = all_imports
    cycles = find_cycles(import_graph(modules, imports))
    assert not cycles, "import cycles:\n" + "\n".join(format_cycle(c, imports, PROJECT_ROOT) for c in cycles)


def test_no_run_time_import_cycle(all_imports):
    """The same without the TYPE_CHECKING imports: what the interpreter itself would run into. When
    only the test above fails, the cycle is closed by an annotation-only import."""
    modules, imports = all_imports
    run_time = [i for i in imports if not i.type_checking]
    cycles = find_cycles(import_graph(modules, run_time))
    assert not cycles, "run-time import cycles:\n" + "\n".join(
        format_cycle(c, run_time, PROJECT_ROOT) for c in cycles)


def test_imports_only_go_down_the_layers(all_imports):
    """Within core, and from core up to ui/, app_pages/ and app.py: core never imports the dashboard, ui/
    never imports a page, a page never imports app.py."""
    modules, imports = all_imports
    upward = upward_imports(imports, modules, LAYERS)
    assert not upward, (
        "imports from a lower layer to a higher one (layers: see tests/test_architecture.py):\n" + "\n".join(
            f"    {imp.where(PROJECT_ROOT)}: {imp.describe()}  "
            f"[layer {layer_of(imp.source, LAYERS)} -> layer {layer_of(imp.target, LAYERS)}]"
            for imp in upward))


def test_core_never_imports_streamlit_in_its_source(core_imports):
    _, imports = core_imports
    bad = forbidden_imports(imports, FORBIDDEN_IN_CORE)
    assert not bad, "core must not import streamlit (only ui/ and app_pages/ may):\n" + "\n".join(
        f"    {imp.where(PROJECT_ROOT)}: {imp.describe()}" for imp in bad)


# core.__main__ runs the CLI when imported (sys.exit(main())), so the run-time check imports what it
# imports (core.cli.main) instead; the source check above covers its own lines.
_IMPORT_ALL = r"""
import importlib, json, sys
culprits, failures = {}, {}
for name in json.loads(sys.argv[1]):
    before = {m for m in sys.modules if m.split(".")[0] in ("streamlit",)}
    try:
        importlib.import_module(name)
    except Exception as exc:  # reported, and fails the test: every core module must import
        failures[name] = f"{type(exc).__name__}: {exc}"
    after = {m for m in sys.modules if m.split(".")[0] in ("streamlit",)}
    if after - before:
        culprits[name] = sorted(after - before)[:3]
print(json.dumps({"culprits": culprits, "failures": failures,
                  "streamlit_loaded": "streamlit" in sys.modules}))
"""


def import_each(names: list[str], *, path: Path = PROJECT_ROOT) -> dict:
    """Import `names` in order in a fresh interpreter (cwd `path`); which failed, which loaded streamlit."""
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, json.dumps(names)], cwd=path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.subprocess
def test_importing_every_core_module_loads_no_streamlit(core_imports):
    modules, _ = core_imports
    result = import_each(sorted(m for m in modules if m != "core.__main__"))
    assert not result["failures"], "core modules that fail to import:\n" + "\n".join(
        f"    {m}: {e}" for m, e in result["failures"].items())
    assert not result["culprits"], (
        "importing these core modules loaded streamlit (the first module named is the first import that "
        "pulled it in; the source check names the line):\n" + "\n".join(
            f"    {m}: {mods}" for m, mods in result["culprits"].items()))
    assert result["streamlit_loaded"] is False


@pytest.mark.subprocess
def test_the_run_time_check_names_the_module_that_loads_streamlit(tmp_path):
    _write(tmp_path, {"fakepkg/__init__.py": "", "fakepkg/clean.py": "import json\n",
                      "fakepkg/dirty.py": "import streamlit\n", "fakepkg/broken.py": "raise ValueError('boom')\n"})
    result = import_each(["fakepkg.clean", "fakepkg.broken", "fakepkg.dirty"], path=tmp_path)
    assert result["failures"] == {"fakepkg.broken": "ValueError: boom"}
    assert list(result["culprits"]) == ["fakepkg.dirty"]
    assert result["streamlit_loaded"] is True


# ------------------------------------------------------------------- (d) the backends' client factories

FACTORY = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<function>[A-Za-z_]\w*)$")


def declared_factories() -> set[str]:
    """Every "module:function" string in core/backends.py's source, plus each Backend.client."""
    from core.backends import BACKEND_LIST

    tree = ast.parse((CORE_DIR / "backends.py").read_text(encoding="utf-8"))
    in_source = {n.value for n in ast.walk(tree)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and FACTORY.match(n.value)}
    declared = {b.client for b in BACKEND_LIST if b.client is not None}
    return in_source | declared


def factory_problems(specs: Iterable[str], package: str = "core.agents.llm") -> list[str]:
    """What is wrong with each "module:function" spec: its form, its package, whether it imports and is
    a callable taking one argument (the Settings)."""
    problems = []
    for spec in sorted(specs):
        match = FACTORY.match(spec)
        if not match:
            problems.append(f"{spec!r}: not 'module:function'")
            continue
        module, function = match["module"], match["function"]
        if not (module == package or module.startswith(package + ".")):
            problems.append(f"{spec!r}: {module} is not in {package}")
            continue
        try:
            target = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{spec!r}: does not resolve ({type(exc).__name__}: {exc})")
            continue
        if not callable(target):
            problems.append(f"{spec!r}: {target!r} is not callable")
            continue
        try:
            inspect.signature(target).bind(object())  # called as function(settings)
        except TypeError as exc:
            problems.append(f"{spec!r}: cannot be called with the one Settings argument ({exc})")
    return problems


def test_every_backend_client_factory_resolves_to_a_callable_in_core_agents_llm():
    from core.backends import BACKEND_LIST

    factories = declared_factories()
    llm_backends = [b.name for b in BACKEND_LIST if b.is_llm]
    assert llm_backends and len({b.client for b in BACKEND_LIST if b.is_llm}) == len(llm_backends), \
        f"every LLM backend declares its own client: {[(b.name, b.client) for b in BACKEND_LIST]}"
    assert all(b.client is None for b in BACKEND_LIST if not b.is_llm), "the offline heuristic has no client"
    problems = factory_problems(factories)
    assert not problems, "client factories in core/backends.py that do not resolve:\n" + "\n".join(
        f"    {p}" for p in problems)


def test_the_factory_check_reports_each_kind_of_bad_spec():
    problems = factory_problems(["core.agents.llm.gemini:no_such_function", "core.settings:Settings",
                                 "core.agents.llm.base:ERROR_KINDS", "core.agents.llm.no_such_module:f",
                                 "core.agents.llm.retry:call_with_retry", "no colon"])
    from core.agents.llm.base import ERROR_KINDS

    assert problems == [
        f"'core.agents.llm.base:ERROR_KINDS': {ERROR_KINDS!r} is not callable",
        "'core.agents.llm.gemini:no_such_function': does not resolve (AttributeError: module "
        "'core.agents.llm.gemini' has no attribute 'no_such_function')",
        "'core.agents.llm.no_such_module:f': does not resolve (ModuleNotFoundError: No module named "
        "'core.agents.llm.no_such_module')",
        "'core.agents.llm.retry:call_with_retry': cannot be called with the one Settings argument "
        "(missing a required argument: 'policy')",
        "'core.settings:Settings': core.settings is not in core.agents.llm",
        "'no colon': not 'module:function'",
    ]


# ----------------------------------------------------------------- the checker can fail (self-test)

def test_the_checker_reports_a_cycle_an_upward_import_and_streamlit(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": "import json\n",
        "pkg/low/__init__.py": "",
        # upward, hidden under TYPE_CHECKING and inside a function; relative import of a submodule
        "pkg/low/a.py": ("from typing import TYPE_CHECKING\nfrom .. import base\n"
                         "if TYPE_CHECKING:\n    from pkg.high.h import H\n"
                         "def f():\n    import pkg.low.b\n    import streamlit as st\n"),
        "pkg/low/b.py": "from pkg.low import c\n",
        "pkg/low/c.py": "def g():\n    from . import a\n",  # closes a -> b -> c -> a
        "pkg/high/__init__.py": "",
        "pkg/high/h.py": "from pkg.low.a import f\nimport importlib\nimportlib.import_module('pkg.base')\nH = 1\n",
        "pkg/high/ok.py": "from pkg.high import h\nfrom pkg.low import a, b\n",
    })
    layers = {"pkg": 0, "pkg.low": 1, "pkg.high": 2}
    modules, imports = collect_imports(tmp_path, "pkg")
    graph = import_graph(modules, imports)
    assert graph["pkg.low.a"] == {"pkg.base", "pkg.high.h", "pkg.low.b"}
    assert graph["pkg.high.h"] == {"pkg.low.a", "pkg.base"}
    assert graph["pkg.high.ok"] == {"pkg.high.h", "pkg.low.a", "pkg.low.b"}

    cycles = find_cycles(graph)
    # one component holds a, b, c and h (a <-> h as well); its reported cycle is a shortest one through its first member
    assert cycles == [["pkg.high.h", "pkg.low.a", "pkg.high.h"]]
    low_only = {m: (t - {"pkg.high.h"}) for m, t in graph.items()}
    assert find_cycles(low_only) == [["pkg.low.a", "pkg.low.b", "pkg.low.c", "pkg.low.a"]]
    assert find_cycles({"x": {"x"}, "y": set()}) == [["x", "x"]]
    assert find_cycles({"x": {"y"}, "y": set()}) == []
    assert "pkg/low/b.py:1" in format_cycle(["pkg.low.a", "pkg.low.b", "pkg.low.c", "pkg.low.a"], imports, tmp_path)

    upward = upward_imports(imports, modules, layers)
    assert [(i.source, i.target, i.line, i.type_checking, i.in_function) for i in upward] == [
        ("pkg.low.a", "pkg.high.h", 4, True, False)]
    assert upward[0].where(tmp_path) == "pkg/low/a.py:4"

    bad = forbidden_imports(imports, FORBIDDEN_IN_CORE)
    assert [(i.source, i.line, i.in_function) for i in bad] == [("pkg.low.a", 7, True)]


def test_the_checker_passes_a_clean_synthetic_package(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": "",
        "pkg/low/__init__.py": "from pkg.low.a import f\n",
        "pkg/low/a.py": "from pkg import base\ndef f():\n    from pkg.low import b\n",
        "pkg/low/b.py": "import pkg.base\n",
        "pkg/high/h.py": "from pkg.low import a\n",
        "pages/p.py": "from pkg.high import h\nfrom pkg import low\n",  # a folder without __init__.py
        "main.py": "from pages import p\n",  # a top-level file
    })
    modules, imports = collect_imports(tmp_path, "pkg", "pages", "main")
    graph = import_graph(modules, imports)
    assert graph["pages.p"] == {"pkg.high.h", "pkg.low"} and graph["main"] == {"pages.p"}
    assert find_cycles(graph) == []
    assert upward_imports(imports, modules, {"pkg": 0, "pkg.low": 1, "pkg.high": 2, "pages": 3, "main": 4}) == []
    assert forbidden_imports(imports, FORBIDDEN_IN_CORE) == []


# ------------------------------------------------- tests and benchmarks import no test module

TESTS_DIR = PROJECT_ROOT / "tests"
BENCHMARKS_DIR = PROJECT_ROOT / "benchmarks"


def _test_module_imports(folder: Path) -> list[tuple[str, str, int]]:
    """(importing file stem, imported module, line) for every import of a tests module in folder/*.py."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                parts = name.split(".")
                if parts[0] == "tests" or parts[0].startswith("test_") or parts[0] == "conftest":
                    found.append((path.stem, name, node.lineno))
    return found


def test_test_modules_import_only_helpers_and_conftest():
    shared = {"tests.helpers", "tests.fake_llm_servers", "tests.stores", "tests.mounts", "tests.conftest"}
    unexpected = [f"    tests/{stem}.py:{line}: imports {name}" for stem, name, line in _test_module_imports(TESTS_DIR)
                  if name not in shared]
    assert not unexpected, ("test modules import another test module; move what they share into tests/helpers.py "
                            "(or conftest.py):\n" + "\n".join(unexpected))


def test_benchmarks_import_nothing_from_tests():
    found = _test_module_imports(BENCHMARKS_DIR)
    assert not found, (
        "benchmarks/ must not import the tests (give it its own fakes in benchmarks/fakes.py):\n" + "\n".join(
            f"    benchmarks/{stem}.py:{line}: imports {name}" for stem, name, line in found))


# ------------------------------------------------ docs/ARCHITECTURE.md's module inventory, from the code
# `make docs` (python -m tests.test_architecture) writes it between the markers; the test below fails when it
# is stale. It follows whatever folders hold modules: a new package shows up in the layer of its modules.

ARCHITECTURE_DOC = PROJECT_ROOT / "docs" / "ARCHITECTURE.md"
INVENTORY_BEGIN = ("<!-- the inventory: generated from the code by `make docs` (tests/test_architecture.py); "
                   "edit the modules' docstrings, not this -->")
INVENTORY_END = "<!-- end of the generated inventory -->"
LONG_PHRASE = 150  # characters: a longer first sentence is cut to what it names (see `holds`)


def holds(docstring: str | None) -> str:
    """What a module holds: its docstring's first sentence. A long one loses a closing parenthetical, then
    what follows its first ': ' or '; ' at least 30 characters in (the explanation after the thing named)."""
    paragraph = " ".join((docstring or "").split("\n\n")[0].split())
    match = re.match(r"(.+?[.?!])(?:\s|$)", paragraph)
    sentence = (match.group(1) if match else paragraph).removesuffix(".")
    if len(sentence) > LONG_PHRASE:
        sentence = re.sub(r"\s*\([^()]*\)$", "", sentence)
    cut = re.search(r"[:;] ", sentence[30:]) if len(sentence) > LONG_PHRASE else None
    return sentence[:30 + cut.start()] if cut else sentence


@dataclass(frozen=True)
class Folder:
    """One folder's modules: its layer (its lowest module's), its package docstring, each module's phrase."""

    path: str  # relative to the root, with a trailing slash; "" for the root itself
    layer: int
    about: str
    modules: tuple[tuple[str, str], ...]  # (file name, what it holds), __init__.py left out
    files: int
    lines: int

    @property
    def shown(self) -> str:
        return self.path or "./"


def folders(root: Path, packages: Iterable[str], layers: Mapping[str, int]) -> list[Folder]:
    """Every folder holding modules of the packages, bottom layer first (then by path)."""
    by_folder: dict[str, list[tuple[str, Path]]] = defaultdict(list)
    for package in packages:
        for name, path in discover(root, package).items():
            folder = path.parent.relative_to(root).as_posix()
            by_folder["" if folder == "." else f"{folder}/"].append((name, path))
    out = []
    for folder, modules in by_folder.items():
        texts = {path.name: path.read_text(encoding="utf-8") for _, path in modules}
        docs = {name: ast.get_docstring(ast.parse(text)) for name, text in texts.items()}
        out.append(Folder(folder, min(layer_of(name, layers) for name, _ in modules), holds(docs.get("__init__.py")),
                          tuple((name, holds(doc)) for name, doc in sorted(docs.items()) if name != "__init__.py"),
                          len(texts), sum(text.count("\n") for text in texts.values())))
    return sorted(out, key=lambda f: (f.layer, f.path))


def inventory(root: Path = PROJECT_ROOT, packages: Iterable[str] = ("core", *DASHBOARD),
              layers: Mapping[str, int] = LAYERS) -> str:
    """The generated part of docs/ARCHITECTURE.md: a table of the layers' sizes, then every module, by folder."""
    found = folders(root, packages, layers)
    lines = ["| layer | folder | files | lines |", "|--:|---|--:|--:|",
             *(f"| {f.layer} | `{f.shown}` | {f.files} | {round(f.lines, -2):,} |" for f in found),
             f"| | all | {sum(f.files for f in found)} | {round(sum(f.lines for f in found), -2):,} |", "",
             "Lines are every line of the folder's `.py` files (docstrings and blank lines too), to the nearest "
             "hundred."]
    for f in found:
        lines += ["", f"### `{f.shown}`", ""]
        lines += [f.about, ""] if f.about else []
        lines += [f"- `{name}`: {phrase}" for name, phrase in f.modules]
    return "\n".join(lines) + "\n"


def listed_modules(text: str) -> set[str]:
    """The module files an inventory names (folder heading + item), e.g. core/retrieval/ann.py."""
    out, folder = set(), ""
    for line in text.splitlines():
        if heading := re.match(r"^### `([^`]*)`", line):
            folder = "" if heading.group(1) == "./" else heading.group(1)
        elif item := re.match(r"^- `([^`]+\.py)`", line):
            out.add(folder + item.group(1))
    return out


def split_doc(text: str) -> tuple[str, str, str]:
    """The document before the inventory, the inventory, and after it."""
    before, marker, rest = text.partition(INVENTORY_BEGIN + "\n")
    current, end, after = rest.partition(INVENTORY_END)
    assert marker and end, f"docs/ARCHITECTURE.md has lost its inventory markers: {INVENTORY_BEGIN} ... {INVENTORY_END}"
    return before, current, after


def stale_inventory(doc: str, expected: str) -> str | None:
    """Why the document's inventory is not `expected` (the modules it misses and the ones it names that are
    gone first), or None when it is."""
    _, current, _ = split_doc(doc)
    if current == expected:
        return None
    listed, wanted = listed_modules(current), listed_modules(expected)
    missing, gone = sorted(wanted - listed), sorted(listed - wanted)
    return "\n".join(["docs/ARCHITECTURE.md's module inventory disagrees with the code; "
                      "regenerate it with `make docs`.",
                      *([f"    missing: {', '.join(missing)}"] if missing else []),
                      *([f"    gone: {', '.join(gone)}"] if gone else []),
                      *([] if missing or gone else
                        ["    (the same modules: a docstring's first sentence, a count or a size changed)"])])


def test_the_architecture_doc_lists_every_module_as_the_code_has_it():
    problem = stale_inventory(ARCHITECTURE_DOC.read_text(encoding="utf-8"), inventory())
    assert problem is None, problem


def test_the_inventory_names_what_is_missing_and_gone(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": '"""The package: what it is for."""\n', "pkg/a.py": '"""Holds a. More."""\n',
                      "pkg/sub/b.py": "x = 1\n",
                      "top.py": '"""The entry point of the whole package: ' + "why " * 40 + '."""\n'})
    layers = {"pkg": 0, "pkg.sub": 1, "top": 2}
    old = inventory(tmp_path, ("pkg", "top"), layers)
    assert old.splitlines()[2:5] == ["| 0 | `pkg/` | 2 | 0 |", "| 1 | `pkg/sub/` | 1 | 0 |", "| 2 | `./` | 1 | 0 |"]
    assert "### `pkg/`\n\nThe package: what it is for\n\n- `a.py`: Holds a\n" in old
    assert "- `top.py`: The entry point of the whole package\n" in old
    assert listed_modules(old) == {"pkg/a.py", "pkg/sub/b.py", "top.py"}
    doc = f"# Title\n\n{INVENTORY_BEGIN}\n{old}{INVENTORY_END}\n\nmore prose\n"
    assert stale_inventory(doc, old) is None
    (tmp_path / "pkg/sub/b.py").unlink()
    _write(tmp_path, {"pkg/c.py": ""})
    assert stale_inventory(doc, inventory(tmp_path, ("pkg", "top"), layers)).splitlines()[1:] == [
        "    missing: pkg/c.py", "    gone: pkg/sub/b.py"]


def write_inventory(doc: Path = ARCHITECTURE_DOC) -> bool:
    """Rewrites the inventory in `doc` from the code; whether it changed."""
    text = doc.read_text(encoding="utf-8")
    before, current, after = split_doc(text)
    fresh = inventory()
    doc.write_text(before + INVENTORY_BEGIN + "\n" + fresh + INVENTORY_END + after, encoding="utf-8")
    return fresh != current


if __name__ == "__main__":
    print(f"{ARCHITECTURE_DOC.relative_to(PROJECT_ROOT)}: "
          f"{'inventory regenerated' if write_inventory() else 'inventory already up to date'}")
