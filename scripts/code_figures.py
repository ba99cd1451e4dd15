"""Function length and cyclomatic complexity of the application code, and the import
graph between its apps: the figures a structural change is judged by.

Usage: python scripts/code_figures.py [ROOT] [--json]

Counted: every function and method of the apps' modules, migrations excluded
(tests and benches are not the application). Complexity is McCabe's, counted a
little more strictly than ruff's C90 gate: 1, plus one per branch (``if``/``elif``,
loops, ``except``, ``case``, conditional expressions, comprehensions and their
conditions) and per extra operand of ``and``/``or``, which C90 does not count. A
function can pass C90's limit of 15 and still score above 15 here.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

APPS = ("core", "documents", "retrieval", "citations", "audit", "evaluation", "provenance_site")
_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.IfExp)


@dataclass(frozen=True)
class Function:
    """One function: where it is, how long, how branchy."""

    name: str
    lines: int
    complexity: int


def complexity_of(node: ast.AST) -> int:
    """McCabe complexity of one function body, not counting nested functions."""
    score = 1
    for child in _walk_own(node):
        if isinstance(child, _BRANCHES):
            score += 1
        elif isinstance(child, ast.BoolOp):
            score += len(child.values) - 1
        elif isinstance(child, ast.comprehension):
            score += len(child.ifs) + 1
        elif isinstance(child, ast.match_case):
            score += 1
    return score


def _walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` except the bodies of functions nested in it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield child
        yield from _walk_own(child)


def modules(root: Path) -> list[Path]:
    """The application's Python files, migrations excluded."""
    found = [
        path
        for app in APPS
        if (root / app).is_dir()
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts
    ]
    return found


def functions(root: Path) -> list[Function]:
    """Every function and method of the application."""
    found = []
    for path in modules(root):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{path.relative_to(root)}:{node.lineno} {node.name}"
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append(Function(name, lines, complexity_of(node)))
    return found


def import_graph(root: Path) -> dict[str, int]:
    """``"a -> b": n``: how many import statements of app ``a`` name app ``b``."""
    edges: Counter[str] = Counter()
    for path in modules(root):
        source_app = path.relative_to(root).parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                target_app = target.split(".")[0]
                if target_app in APPS and target_app != source_app:
                    edges[f"{source_app} -> {target_app}"] += 1
    return dict(sorted(edges.items()))


def _spread(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
        "max": ordered[-1],
    }


def figures(root: Path) -> dict:
    """Everything the script prints, as one JSON-able dict."""
    found = functions(root)
    if not found:
        raise SystemExit(f"no application code under {root}")
    return {
        "functions": len(found),
        "lines": _spread([f.lines for f in found]),
        "complexity": _spread([f.complexity for f in found]),
        "over_50_lines": sum(f.lines > 50 for f in found),
        "over_15_complexity": sum(f.complexity > 15 for f in found),
        "longest": [asdict(f) for f in sorted(found, key=lambda f: -f.lines)[:10]],
        "most_complex": [asdict(f) for f in sorted(found, key=lambda f: -f.complexity)[:10]],
        "imports_between_apps": import_graph(root),
    }


def as_text(result: dict) -> str:
    lines = [
        f"{result['functions']} functions; over 50 lines: {result['over_50_lines']}; "
        f"complexity over 15: {result['over_15_complexity']}",
        "lines:      median {median}, p90 {p90}, max {max}".format(**result["lines"]),
        "complexity: median {median}, p90 {p90}, max {max}".format(**result["complexity"]),
        "",
        "10 longest:",
        *(
            f"  {f['lines']:4d} lines  cc {f['complexity']:3d}  {f['name']}"
            for f in result["longest"]
        ),
        "10 most complex:",
        *(
            f"  cc {f['complexity']:3d}  {f['lines']:4d} lines  {f['name']}"
            for f in result["most_complex"]
        ),
        "",
        "imports between apps (statements):",
        *(f"  {edge}: {n}" for edge, n in result["imports_between_apps"].items()),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=Path(__file__).resolve().parents[1], type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args()
    result = figures(args.root)
    print(json.dumps(result, indent=2) if args.json else as_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
