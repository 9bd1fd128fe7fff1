"""The repository's house rules: lint clean, small modules, lower layers never import upper ones,
no two modules import each other."""
import ast
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_COMPONENT_LINES = 350


def _modules(package: str):
    """{dotted module name: path} of every module of `package`."""
    found = {}
    for root, _, files in os.walk(os.path.join(REPO, package)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                dotted = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def _imports(path: str, modules) -> set:
    """The project modules `path` imports, at any depth of its code (function-level imports too)."""
    out = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        out |= {name for name in names if name in modules}
    return out


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", REPO], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_component_module_is_longer_than_350_lines():
    long = {name: n for name, path in _modules("components").items()
            if (n := sum(1 for _ in open(path))) > MAX_COMPONENT_LINES}
    assert not long, long


def test_components_never_import_pipeline():
    modules = {**_modules("components"), **_modules("pipeline")}
    upward = {name: sorted(i for i in _imports(path, modules) if i.split(".")[0] == "pipeline")
              for name, path in _modules("components").items()}
    assert not {k: v for k, v in upward.items() if v}


def test_no_two_modules_import_each_other():
    modules = {**_modules("components"), **_modules("pipeline"), **_modules("benchmarks")}
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    # A package's __init__ that re-exports its modules is not a cycle with them.
    mutual = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps
                     if a in graph.get(b, ()) and not (a.startswith(b + ".") or b.startswith(a + "."))})
    assert not mutual, mutual
