"""The installed nemo-automodel, driven as a recipe drives it: the oracle of the differential tests.

Nothing here restates the framework's rules. LoRA goes through its ``PeftConfig`` and
``apply_lora_to_linear_modules``; trainability through its own ``_apply_trainability_policy``
(PEFT baseline, ``parse_freeze_config`` + ``apply_parameter_freezing``, invariant freezes). That
function lives in ``_transformers/infrastructure.py``, whose module imports the framework's heavy
dependencies (torchao, megatron-fsdp). Where they are installed (the framework environment of
``.ci/framework_env``) it is imported; where the framework is installed with ``--no-deps`` its
source is compiled from the installed file, verbatim, against the framework's own functions.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from torch import nn

from mmfreeze.recipes.composite import DrafterSection

pytest.importorskip("nemo_automodel", reason="the differential tests need nemo-automodel (the README's test command installs it)")

from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules  # noqa: E402
from nemo_automodel.components.utils import model_utils  # noqa: E402

POLICY = "_apply_trainability_policy"


@cache
def trainability_policy() -> Callable[..., None]:
    """The framework's ``_apply_trainability_policy``, from its installed source."""
    try:
        from nemo_automodel._transformers.infrastructure import _apply_trainability_policy
    except ImportError:  # installed with --no-deps: compile the function from the installed file
        return _compiled_policy()
    return _apply_trainability_policy


def _compiled_policy() -> Callable[..., None]:
    spec = importlib.util.find_spec("nemo_automodel._transformers.infrastructure")
    assert spec is not None and spec.origin is not None, "nemo-automodel is not installed"
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == POLICY)
    namespace: dict[str, Any] = {"torch": __import__("torch")}
    for name in free_names(function):
        source = imported_from(tree).get(name)
        if name in namespace or hasattr(builtins, name):
            continue
        # Only names the framework's own module imports from model_utils can be bound here; any
        # other would be a stand-in, and the oracle would no longer be the framework.
        assert source == model_utils.__name__, (
            f"{POLICY} uses {name} from {source or 'its own module'}, which the compiled oracle cannot bind; "
            "run the differential tests in the framework environment")
        namespace[name] = getattr(model_utils, name)
    exec(compile(ast.Module(body=[function], type_ignores=[]), spec.origin, "exec"), namespace)  # noqa: S102
    return namespace[POLICY]


def free_names(function: ast.FunctionDef) -> set[str]:
    """Names ``function`` reads that it neither takes nor assigns: its module globals and builtins."""
    local = {arg.arg for arg in (*function.args.args, *function.args.kwonlyargs, *function.args.posonlyargs)}
    local |= {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)} - local


def imported_from(tree: ast.Module) -> dict[str, str]:
    """Module-level ``from X import name`` of the framework's module: name -> X."""
    return {alias.asname or alias.name: node.module or "" for node in tree.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def framework_trainability(
    model: nn.Module, freeze_config: Any, peft: Mapping[str, Any] | None, drafter: DrafterSection | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """Run the recipe's sections through the framework on ``model`` (mutated; for a composite
    recipe, ``drafter``: through its parts, then its constructor): its frozen and trainable
    parameter names (adapters included).

    Raises whatever the framework raises for a section it rejects.
    """
    from tests.nemo.framework_pipeline import through_composite

    def load(part: nn.Module, forwarded: bool) -> None:
        peft_config = None
        if peft is not None and forwarded:
            # The recipe instantiates `peft:` (its `_target_` is PeftConfig) with the other keys.
            peft_config = PeftConfig(**{key: value for key, value in peft.items() if key != "_target_"})
            apply_lora_to_linear_modules(part, peft_config, skip_freeze=True)
        parsed = model_utils.parse_freeze_config(freeze_config if forwarded else None)
        trainability_policy()(part, peft_enabled=peft_config is not None, freeze_config=parsed, strict=True)

    model = through_composite(model, drafter, load)
    named = list(model.named_parameters())
    return (frozenset(name for name, parameter in named if not parameter.requires_grad),
            frozenset(name for name, parameter in named if parameter.requires_grad))


def framework_call_frozen(model: nn.Module, freeze_config: Any) -> frozenset[str]:
    """What a direct call of the framework's ``apply_parameter_freezing`` freezes on ``model``
    (mutated): the call a Python call site makes, without the policy's PEFT baseline and invariants."""
    model_utils.apply_parameter_freezing(model, model_utils.parse_freeze_config(freeze_config), strict=True)
    return frozenset(name for name, parameter in model.named_parameters() if not parameter.requires_grad)


def installed_release() -> str:
    from importlib.metadata import version

    return version("nemo-automodel")
