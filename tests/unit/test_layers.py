"""The package's import graph: one-way layers, no cycles, and a CLI that uses the public API.

Read from the source with ``ast`` (no import, no Spark), so every ``import`` counts, including
those inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom to top: a module may import its own layer or a lower one, never a higher one.
LAYERS: dict[str, int] = {
    "spark_calib.errors": 0,
    "spark_calib.constants": 0,
    "spark_calib.local_data": 0,
    "spark_calib.registry": 1,
    # The statistics table's column names: names only, read by the kernels and the rows.
    "spark_calib.stats.schema": 1,
    "spark_calib.config": 2,
    "spark_calib.rows": 3,
    # The NumPy kernels (statistics → outputs) sit with the rows: both are the leaves the
    # orchestration above them runs; the rows read the fine-cell grid's sizes from them.
    "spark_calib.kernels": 3,
    "spark_calib.slicing": 4,
    "spark_calib.stats": 5,
    "spark_calib.metrics": 6,
    "spark_calib.recalibration": 6,
    "spark_calib.slice_search": 6,
    "spark_calib.windows": 7,
    "spark_calib.monitoring": 7,
    "spark_calib.result": 8,
    "spark_calib.evaluate": 8,
    "spark_calib": 9,
}

# What the job layer may import from the library: the package's exports and its public modules.
PUBLIC_MODULES = frozenset(
    {
        "spark_calib",
        "spark_calib.config",
        "spark_calib.constants",
        "spark_calib.errors",
        "spark_calib.local_data",
        "spark_calib.monitoring",
        "spark_calib.stats.schema",
        "spark_calib.windows",
    }
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, package: str) -> set[str]:
    """Every module of ``package`` that ``path`` imports: ``from X import y`` counts X.y when
    y is a submodule that X does not re-export under that name, else X."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                exported = alias.name in _exports(node.module)
                found.add(candidate if _is_module(candidate) and not exported else node.module)
    return {name for name in found if name == package or name.startswith(package + ".")}


def _exports(module: str) -> frozenset[str]:
    """The names in a package's ``__all__`` (empty for a plain module or none)."""
    init = ROOT.joinpath(*module.split("."), "__init__.py")
    if not init.is_file():
        return frozenset()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _graph(package: str) -> dict[str, set[str]]:
    return {
        _module_name(path): _imports(path, "spark_calib")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _layer(module: str) -> int:
    matches = [prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer; add its package to LAYERS"
    return LAYERS[max(matches, key=len)]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the modules (ignoring a package importing its own modules
    through ``__init__``), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target == node or target not in graph:
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_library_has_no_import_cycle() -> None:
    graph = _graph("spark_calib")
    # A package's __init__ re-exporting its modules is not a cycle of the layers.
    edges = {
        module: {t for t in targets if not module.startswith(t + ".")}
        for module, targets in graph.items()
    }
    assert _cycle(edges) is None


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in _graph("spark_calib").items()
        for target in targets
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_config_imports_nothing_above_the_registry() -> None:
    config = {m: t for m, t in _graph("spark_calib").items() if m.startswith("spark_calib.config")}
    assert config, "no config modules found"
    imported = {target for targets in config.values() for target in targets}
    assert {_layer(target) for target in imported} <= {0, 1, 2}


@pytest.mark.parametrize("package", ["spark_calib_cli", "jobs"])
def test_the_job_layer_uses_only_the_public_api(package: str) -> None:
    private = sorted(
        f"{module} imports {target}"
        for module, targets in _graph(package).items()
        for target in targets
        if target not in PUBLIC_MODULES
        and not (target.startswith("spark_calib.config.") and target.count(".") == 2)
    )
    assert private == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_layer_check_sees_every_module() -> None:
    modules = _graph("spark_calib")
    assert len(modules) > 30
    assert "spark_calib.config.model" in modules
    assert "spark_calib.registry" in modules["spark_calib.config.model"]


# What a kernel module may import: NumPy, pyarrow at the boundary, the standard library, its
# own package, the names-only statistics schema and the registry's names; never pyspark (the
# kernels run on Python workers that may not have spark_calib, and are tested without Spark).
KERNEL_IMPORTS = frozenset(
    {
        "numpy",
        "pyarrow",
        "spark_calib.kernels",
        "spark_calib.stats.schema",
        "spark_calib.registry.metrics",
        "spark_calib.constants",
    }
)


def _top_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if _is_module(candidate) else node.module)
    return found


def test_kernels_import_numpy_and_pyarrow_but_never_pyspark() -> None:
    kernels = sorted((ROOT / "spark_calib" / "kernels").rglob("*.py"))
    assert len(kernels) > 5
    outside = sorted(
        f"{path.name} imports {name}"
        for path in kernels
        for name in _top_imports(path)
        if (
            name.split(".")[0] not in {"numpy", "pyarrow", "spark_calib"}
            and name.split(".")[0] not in STANDARD
        )
        or (
            name.startswith("spark_calib")
            and not any(name == k or name.startswith(k + ".") for k in KERNEL_IMPORTS)
        )
    )
    assert outside == []


STANDARD = frozenset({"__future__", "collections", "dataclasses", "math", "statistics", "typing"})
