"""The package layout stays readable: few modules at the top of selfrag/, no import cycles between modules, the
layers in order (LAYERS) and no private name imported from another module (imports inside functions count;
imports only for type checking do not)."""

from __future__ import annotations

import ast
from pathlib import Path

from selfrag.engine.policies import NAMES

PACKAGE = Path(__file__).resolve().parent.parent / "selfrag"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The selfrag modules `path` imports (a name imported from a package counts as its submodule if one exists)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    nodes = [n for n in ast.parse(path.read_text()).body]
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            if base in modules:
                found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)
        nodes.extend(ast.iter_child_nodes(node))
    return found - {name}


def test_selfrag_has_at_most_15_modules_at_its_top_level():
    assert len(list(PACKAGE.glob("*.py"))) <= 15


def test_every_policy_lives_in_a_module_of_its_name():
    """A reader given only the file list finds each policy: engine/<name>.py, or the module named for it here."""
    elsewhere = {"ground": "engine/grounding.py", "supersession": "retrieval/supersession.py"}
    missing = [name for name in NAMES if not (PACKAGE / elsewhere.get(name, f"engine/{name}.py")).is_file()]
    assert not missing, f"policies with no module of their name: {missing}"


def test_the_import_graph_has_no_cycles():
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(paths)) for name, path in paths.items()}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            assert state.get(target) != "open", "import cycle: " + " -> ".join([*trail, name, target])
            if target not in state:
                visit(target, [*trail, name])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


# The layers, lowest first: a module may import from its own row and the rows before it, never from a later row.
# A row names modules and packages (a package holds its submodules; `selfrag` is the package's own __init__ alone),
# and a module no row names fails the test, so a new module or package is placed on purpose.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "core",
        (
            "selfrag.errors",
            "selfrag.labels",
            "selfrag.schema",
            "selfrag.result",
            "selfrag.text",
            "selfrag.files",
            "selfrag.tokens",
            "selfrag.conversation",
            "selfrag.config",
            "selfrag.settings",
        ),
    ),
    ("llm", ("selfrag.llm", "selfrag.prompts")),
    ("retrieval", ("selfrag.retrieval",)),
    ("engine", ("selfrag.engine",)),
    ("fit", ("selfrag.fit",)),
    ("api", ("selfrag", "selfrag.api", "selfrag.memory", "selfrag.testing")),
    # fitting from benchmark runs and datasets reads them (gold answers, the claim protocol): the benchmarks' layer
    ("bench", ("selfrag.bench", "selfrag.fit.answers", "selfrag.fit.claims", "selfrag.fit.lead")),
    ("cli", ("selfrag.cli", "selfrag.__main__")),
)


def _layer(module: str) -> int:
    """The row of LAYERS whose longest name holds `module`."""
    best, rank = -1, -1
    for row, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            holds = module == prefix or (prefix != "selfrag" and module.startswith(prefix + "."))
            if holds and len(prefix) > best:
                best, rank = len(prefix), row
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS in tests/test_layout.py"
    return rank


def test_no_module_imports_from_a_layer_above_its_own():
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    for name in paths:
        _layer(name)  # every module has its row
    against = [
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, path in sorted(paths.items())
        for target in sorted(_imports(path, set(paths)))
        if _layer(target) > _layer(name)
    ]
    assert not against, "imports against the layer order:\n" + "\n".join(against)


def _private_imports(path: Path, modules: set[str]) -> list[str]:
    """`from selfrag.x import _name` in `path`, outside `if TYPE_CHECKING:` (a private name belongs to its module)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    nodes = list(ast.parse(path.read_text()).body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            if base in modules or base.startswith("selfrag."):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                found.extend(f"{name} imports {base}.{p}" for p in private)
        nodes.extend(ast.iter_child_nodes(node))
    return found


def test_no_module_imports_a_private_name_from_another():
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    found = [line for path in sorted(paths.values()) for line in _private_imports(path, set(paths))]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_memory_knows_the_engine_only_by_a_protocol():
    """memory/ sits beside api, not under it: it names what it calls (`Answerer`), even for type checking."""
    for path in (PACKAGE / "memory").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").rpartition(".")[2] != "api", f"{path.name} imports selfrag.api"
