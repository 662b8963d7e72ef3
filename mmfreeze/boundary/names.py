"""nemo-automodel by name: its distribution, its package, the modules mmfreeze imports or reads,
and the transformers release it pins.

A module whose name starts with ``_`` (``_transformers.registry``, ``recipes._dist_utils``) is
private to the framework: a release may move it without notice, so each is named here once, and
:mod:`~mmfreeze.boundary.hook_points` and the builders read it from here.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, requires
from typing import Any

DISTRIBUTION = "nemo-automodel"
"""What pip installs and package metadata names."""
PACKAGE = "nemo_automodel"
"""What Python imports."""
PACKAGE_PREFIX = PACKAGE + "."
"""A `model._target_`, a class's ``__module__``: the framework's own when it starts with this."""

AUTO_MODEL = f"{PACKAGE}._transformers.auto_model"
REGISTRY = f"{PACKAGE}._transformers.registry"
MODEL_INIT = f"{PACKAGE}._transformers.model_init"
INFRASTRUCTURE = f"{PACKAGE}._transformers.infrastructure"
MODEL_UTILS = f"{PACKAGE}.components.utils.model_utils"
DIST_UTILS = f"{PACKAGE}.recipes._dist_utils"
PARALLELIZER = f"{PACKAGE}.components.distributed.parallelizer"
PARALLEL_STYLES = f"{PACKAGE}.components.distributed.parallel_styles"
OPTIMIZER = f"{PACKAGE}.components.optim.optimizer"
DATASETS = f"{PACKAGE}.components.datasets"
COMPOSITE = f"{PACKAGE}.components.models.gemma4_drafter.composite"

MOE_LAYER = "MoE"
"""The class of the framework's MoE layer (``components/moe/layers.py``): a decoder block's ``moe`` or ``mlp``."""
GROUPED_EXPERTS = ("GroupedExperts", "GroupedExpertsDeepEP", "GroupedExpertsTE", "GroupedExpertsMoK")
"""The classes of its ``experts``, which its LoRA patches with adapters of their own (``_peft/lora.py``
``apply_lora_to_linear_modules``: ``patch_moe_module``) where a `target_modules` pattern matches them."""


def transformers_pin() -> str | None:
    """The transformers requirement the installed framework declares (``transformers==5.18.0``),
    from its package metadata; ``None`` when the framework is not installed or declares none."""
    from packaging.requirements import Requirement  # a transformers dependency: always installed beside it

    try:
        declared = requires(DISTRIBUTION) or ()
    except PackageNotFoundError:
        return None
    for text in declared:
        requirement = Requirement(text)
        if requirement.name.lower() == "transformers" and (
                requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
            return f"transformers{requirement.specifier}"
    return None


def framework_attribute(module: str, name: str) -> Any:
    """``module``'s attribute ``name`` as it is now (a replaced hook point reads as its
    replacement), imported when asked: how mmfreeze reads a private framework name at run time."""
    return getattr(importlib.import_module(module), name)
