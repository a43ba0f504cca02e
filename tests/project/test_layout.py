"""The package's layout is a contract: folders read in the order data flows, and every
import points down that order (or stays in its folder), so there is no cycle.

    util -> model -> providers -> host -> run -> store -> judge -> report -> sessions -> alert -> commands -> cli

Some layers may not reach certain layers below them either (WALLS): the judge computes
on values (model/) and reads no file (store/) and runs nothing (run/); an alert or a
report renders typed values and never reaches into the session that ran an A/B. An
import inside a function is allowed only for a measured start-up cost (ALLOWED_LAZY)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ci" / "perfci"
LAYERS = ["util", "model", "providers", "host", "run", "store", "judge", "report", "sessions", "alert", "commands",
          "cli"]
# third-party modules whose import is deferred on purpose (CONTRIBUTING.md, "Start-up cost"):
# scipy adds ~0.25 s and matplotlib ~0.4 s to every `perfci` start, and most commands need neither
ALLOWED_LAZY = {"scipy", "matplotlib", "signal_processing_algorithms"}
# layer -> the layers below it that it may not import, and why
WALLS = {
    "judge": ({"store", "run"}, "the statistics take values (model/) and return values; callers read the files"),
    "report": ({"sessions"}, "a report renders typed values (model/, judge/), not a session's internals"),
    "alert": ({"sessions"}, "an alert reads typed verdicts and confirmations (model/), not the code that ran the A/B"),
    "model": ({"providers"}, "values know nothing of where servers come from"),
}


def module_name(path: Path) -> str:
    """perfci.x.y of a file under a folder named perfci (the package, or a copy of it)."""
    whole = path.with_suffix("").parts
    parts = whole[len(whole) - 1 - whole[::-1].index("perfci"):]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in the file."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: never executed
            if isinstance(child, ast.ImportFrom):
                base = ".".join(package[:len(package) - child.level + 1]) if child.level else ""
                module = ".".join(p for p in (base, child.module or "") if p)
                found.extend((f"{module}.{a.name}" if is_module(f"{module}.{a.name}") else module, child.lineno, nested)
                             for a in child.names)
            elif isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, nested) for a in child.names)
            visit(child, nested)

    visit(ast.parse(path.read_text()), False)
    return found


def is_module(dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:]) if dotted.startswith("perfci.") else None
    return rel is not None and ((PACKAGE / rel).with_suffix(".py").exists() or (PACKAGE / rel / "__init__.py").exists())


def layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "perfci" or len(parts) < 2:
        return None  # perfci itself (its version) sits below everything
    return LAYERS.index(parts[1])


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_in_a_layer_folder():
    loose = [module_name(p) for p in SOURCES
             if module_name(p) not in ("perfci", "perfci.cli") and module_name(p).split(".")[1] not in LAYERS]
    assert loose == [], f"modules outside the layer folders {LAYERS}: {loose}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_point_down(path: Path):
    mine = layer(module_name(path))
    upward = [f"line {line}: {target}" for target, line, _ in imports(path)
              if target.startswith("perfci.") and mine is not None and (layer(target) or 0) > mine]
    assert upward == [], f"{module_name(path)} ({LAYERS[mine or 0]}) imports from a layer above it: {upward}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_no_import_inside_a_function_but_a_measured_one(path: Path):
    lazy = [f"line {line}: {target}" for target, line, inner in imports(path)
            if inner and target.split(".")[0] not in ALLOWED_LAZY]
    assert lazy == [], f"{module_name(path)} imports inside a function: {lazy} (move it to the top)"


def walled(package: Path) -> list[str]:
    """Every import across a wall (WALLS) in the package under `package`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        mine = parts[0] if len(parts) > 1 else None
        if mine not in WALLS:
            continue
        banned, why = WALLS[mine]
        for target, line, _ in imports(path):
            if target.startswith("perfci.") and target.split(".")[1] in banned:
                found.append(f"{'/'.join(parts)}:{line} imports {target} ({mine} may not: {why})")
    return sorted(set(found))  # one line per module imported, not per name


def test_no_import_crosses_a_wall():
    assert walled(PACKAGE) == []


@pytest.mark.parametrize("module, planted", [
    ("judge/compare.py", "from perfci.store.baseline_files import load_baseline"),
    ("judge/changes.py", "from perfci.run import plan"),
    ("alert/regression_issues.py", "from perfci.sessions.confirm import confirm_case"),
    ("report/markdown.py", "from perfci.sessions import sized_ab"),
])
def test_a_planted_import_across_a_wall_is_caught(tmp_path: Path, module: str, planted: str):
    """The wall check on a temporary copy of the package with one import planted."""
    copy = tmp_path / "perfci"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text().replace("from __future__ import annotations\n",
                                                 f"from __future__ import annotations\n\n{planted}\n", 1))
    [found] = walled(copy)
    assert found.startswith(f"{module}:") and planted.split()[1] in found


def test_no_import_cycle():
    graph = {module_name(p): {t for t, _, _ in imports(p) if t.startswith("perfci.") and t != module_name(p)}
             for p in SOURCES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_the_checker_sees_what_it_must(tmp_path: Path):
    """The rules above would pass on an empty tree: prove they read real imports."""
    found = imports(PACKAGE / "judge" / "compare.py")
    assert any(t == "perfci.model.result" and not inner for t, _, inner in found)
    assert layer("perfci.alert.regression_issues") > layer("perfci.judge.compare")  # type: ignore[operator]


def test_no_two_modules_share_a_file_name():
    """A traceback names a file: `sweep.py` must say which stage (commands are `<name>_cmd.py`)."""
    seen: dict[str, list[str]] = {}
    for path in SOURCES:
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(module_name(path))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_no_perfci_import_needs_an_alias(path: Path):
    """A module is imported by its own name (two names for one module is what unique
    file names are for)."""
    aliased = [f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.Import | ast.ImportFrom) and any(a.asname for a in node.names)
               and ((node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name).startswith("perfci")]
    assert aliased == [], f"{module_name(path)}: {aliased}"


# the readers of a record from before it was typed (the upgrade path), and nothing else:
# a verdict, a Why or a run's arguments are read from their typed fields, never from prose
LEGACY_READERS = {"perfci.model.ab_verdict": "SideArgs.legacy", "perfci.sessions.confirm": "legacy_run_args",
                  "perfci.model.confirmation": "_v6_to_v7"}
SEARCHES = {"find", "rfind", "index", "split", "partition", "rpartition", "removeprefix"}


def read_back(path: Path) -> list[str]:
    """Calls that parse a command line (shlex.split) or look for a report's Why section
    in text, outside the function LEGACY_READERS allows in that module."""
    allowed = LEGACY_READERS.get(module_name(path), "").rsplit(".", 1)[-1]
    found = set()
    for fn in ast.walk(ast.parse(path.read_text())):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.name == allowed:
            continue
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            what, args = ast.unparse(call.func), " ".join(ast.unparse(a) for a in call.args)
            searched = isinstance(call.func, ast.Attribute) and call.func.attr in SEARCHES
            if what == "shlex.split" or searched and ("### Why" in args or "WHY_HEADING" in args):
                found.add(f"{fn.name}: {what}({args})")
    return sorted(found)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_no_module_reads_a_verdict_back_from_prose(path: Path):
    """#55: the Why (AbVerdict.why, Confirmation.why), a run's server and config
    (Result.rerun, AbSide.run, Confirmation.a_run) are typed end to end; only the upgrade
    of an older record reads its text, once (LEGACY_READERS)."""
    assert read_back(path) == [], module_name(path)


def test_the_prose_check_sees_a_planted_read_back(tmp_path: Path):
    planted = tmp_path / "perfci" / "alert" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("import shlex\n\ndef spec_of(reproduce):\n    return shlex.split(reproduce)[5]\n")
    assert read_back(planted) == ["spec_of: shlex.split(reproduce)"]
    planted.write_text("def why_of(report):\n    return report[report.find(f'\\n{WHY_HEADING}'):]\n")
    assert read_back(planted) == ["why_of: report.find(f'\\n{WHY_HEADING}')"]
