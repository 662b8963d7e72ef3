"""Write mmfreeze/models/framework_classes.json: which architectures NeMo AutoModel builds itself.

    python scripts/framework_classes.py            # rewrite the JSON from the installed nemo-automodel
    python scripts/framework_classes.py --check    # exit 1 when the committed JSON differs

Reads the installed package's sources with ``ast`` (nothing is imported, so it runs in seconds
and needs neither torch nor transformers):

- ``_transformers/registry.py``: ``MODEL_ARCH_MAPPING`` (architecture -> module, class, tags);
- ``_transformers/model_init.py``: the special cases of ``_resolve_custom_model_cls_for_config``
  (``if arch_name == "X":`` branches that import another class, e.g. Mistral3's FP8 VLM, HYV3's
  HyMT2) and the architectures ``_is_config_compatible_with_custom_model`` screens;
- each registered model module: whether the class defines ``supports_config`` (it may decline a
  config, and the framework then builds the transformers class).

Those three make an entry ``config_dependent``: the framework may build its own class,
depending on the config. mmfreeze reads the JSON when the framework is not importable
(:mod:`mmfreeze.models.framework`).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from generated_file import write_or_check

OUTPUT = Path(__file__).resolve().parent.parent / "mmfreeze" / "models" / "framework_classes.json"
DISTRIBUTION = "nemo-automodel"


def package_dir() -> Path:
    """The installed ``nemo_automodel`` package folder, located through its metadata (no import)."""
    dist = distribution(DISTRIBUTION)
    init = next(f for f in dist.files or () if f.as_posix() == "nemo_automodel/__init__.py")
    return Path(dist.locate_file(init)).parent


def arch_mapping(registry_source: str) -> dict[str, dict[str, Any]]:
    """``MODEL_ARCH_MAPPING`` as data, in the registry's order."""
    for node in ast.walk(ast.parse(registry_source)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODEL_ARCH_MAPPING" for t in node.targets):
            pairs = ast.literal_eval(node.value.args[0])  # OrderedDict([...])
            return {
                arch: {"module": value[0], "class": value[1], "tags": sorted(value[2]) if len(value) > 2 else []}
                for arch, value in pairs
            }
    raise SystemExit("MODEL_ARCH_MAPPING not found in registry.py")


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def _compared_arch(test: ast.expr) -> str | None:
    """``arch_name == "X"`` -> ``X``."""
    if (
        isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "arch_name"
        and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
    ):
        return str(test.comparators[0].value)
    return None


def special_cases(model_init_source: str) -> tuple[dict[str, list[dict[str, str]]], list[str]]:
    """Architectures whose class the resolver picks by config: the alternative classes each
    ``if arch_name == ...`` branch imports, and the architectures the compatibility screen checks."""
    tree = ast.parse(model_init_source)
    alternatives: dict[str, list[dict[str, str]]] = {}
    for node in ast.walk(_function(tree, "_resolve_custom_model_cls_for_config")):
        arch = _compared_arch(node.test) if isinstance(node, ast.If) else None
        if arch is None:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.module.endswith(".model"):
                for alias in inner.names:
                    alternatives.setdefault(arch, []).append({"module": inner.module, "class": alias.name})
    screened = sorted(
        arch for node in ast.walk(_function(tree, "_is_config_compatible_with_custom_model"))
        if isinstance(node, ast.If) and (arch := _compared_arch(node.test)) is not None
    )
    return alternatives, screened


def defines_supports_config(module_file: Path, class_name: str) -> bool:
    """Whether ``class_name`` in ``module_file`` defines ``supports_config`` (nested classes too)."""
    if not module_file.is_file():
        return False
    for node in ast.walk(ast.parse(module_file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            if any(isinstance(item, ast.FunctionDef) and item.name == "supports_config" for item in node.body):
                return True
    return False


def generate(root: Path, version: str) -> dict[str, Any]:
    mapping = arch_mapping((root / "_transformers" / "registry.py").read_text(encoding="utf-8"))
    alternatives, screened = special_cases((root / "_transformers" / "model_init.py").read_text(encoding="utf-8"))
    architectures: dict[str, Any] = {}
    for arch in sorted(set(mapping) | set(alternatives)):
        entry = dict(mapping.get(arch, {"module": None, "class": None, "tags": []}))
        reasons = []
        if arch in alternatives:
            entry["alternatives"] = alternatives[arch]
            reasons.append("the framework's resolver picks among several classes by config")
        if arch in screened:
            reasons.append("the framework's compatibility screen may send this config to transformers")
        classes = [entry] * (entry["module"] is not None) + entry.get("alternatives", [])
        if any(_supports(root, c["module"], c["class"]) for c in classes):
            reasons.append("the class's supports_config may decline this config")
        entry["config_dependent"] = bool(reasons)
        if reasons:
            entry["config_dependent_because"] = reasons
        architectures[arch] = entry
    return {
        "generator": "scripts/framework_classes.py",
        "nemo_automodel": version,
        "architectures": architectures,
    }


def _supports(root: Path, module: str, class_name: str) -> bool:
    relative = Path(*module.split(".")[1:]).with_suffix(".py")
    return defines_supports_config(root / relative, class_name)


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed JSON differs")
    args = parser.parse_args(argv)
    try:
        root, version = package_dir(), distribution(DISTRIBUTION).version
    except PackageNotFoundError:
        print(f"{DISTRIBUTION} is not installed here: run this in the framework's environment (.venv-framework)")
        return 2
    text = render(generate(root, version))
    return write_or_check(OUTPUT, text, check=args.check, made_from=f"nemo-automodel {version}",
                          written=f"{len(json.loads(text)['architectures'])} architectures, nemo-automodel {version}")


if __name__ == "__main__":
    sys.exit(main())
