"""``install()``: make an unmodified nemo-automodel run mmfreeze recipes, all hook points or none.

What is replaced (every other function, and every section the framework understands itself,
stays the framework's):

==============================================  =====================================================
hook point                                      what mmfreeze does there
==============================================  =====================================================
``model_utils.parse_freeze_config``             parses a `(modality, role)` section (the recipe
                                                boundary, ``RecipeConfig.freeze_config``, imports it
                                                from here); other sections: the framework's parser
``infrastructure.parse_freeze_config``          the same, for ``apply_model_infrastructure``
``infrastructure.apply_parameter_freezing``     the freeze step of ``_apply_trainability_policy``
                                                (strict, then every re-application): mmfreeze's
                                                engine for its sections
``model_utils.apply_parameter_freezing``        the same, for direct callers
``_dist_utils.parse_distributed_section``       the framework's `distributed.multimodal` keys to the
                                                framework, the additions to mmfreeze
``ModelParallelizer.parallelize``               applies the additions at the FSDP hook
``optimizer._coerce_param_group_overrides``    keeps `param_group_overrides` entries with a
                                                selector (``role:``, ``layers:``, ...) in their place
``OptimizerConfig.build`` (and each            resolves those entries on the model into the
override: Dion, factory)                        framework's own patterns, then arms the guard
                                                before the first optimizer step
==============================================  =====================================================
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.exceptions import IntegrationError
from mmfreeze.nemo import distributed, freeze, optimizer, rates
from mmfreeze.nemo.context import RunContext, read_run_context
from mmfreeze.nemo.hooks import HookPoint, Patch, apply_patches, remove_patches, resolve
from mmfreeze.nemo.release import check_supported_release

RECIPE_ENV = "MMFREEZE_NEMO_RECIPE"
"""The recipe a launched run trains (set by `mmfreeze train`), when ``install()`` is not given one."""
MODEL_UTILS = "nemo_automodel.components.utils.model_utils"
INFRASTRUCTURE = "nemo_automodel._transformers.infrastructure"
DIST_UTILS = "nemo_automodel.recipes._dist_utils"
PARALLELIZER = "nemo_automodel.components.distributed.parallelizer"
OPTIMIZER = "nemo_automodel.components.optim.optimizer"

PARSE_AT_RECIPE = HookPoint(module=MODEL_UTILS, attribute="parse_freeze_config",
                            why="the recipe boundary and direct callers parse freeze_config")
PARSE_AT_BUILD = HookPoint(module=INFRASTRUCTURE, attribute="parse_freeze_config",
                           why="apply_model_infrastructure parses freeze_config again",
                           used_by=((INFRASTRUCTURE, "apply_model_infrastructure", "parse_freeze_config"),))
APPLY_IN_POLICY = HookPoint(module=INFRASTRUCTURE, attribute="apply_parameter_freezing",
                            why="the freeze step of _apply_trainability_policy",
                            used_by=((INFRASTRUCTURE, "_apply_trainability_policy", "apply_parameter_freezing"),))
APPLY_DIRECT = HookPoint(module=MODEL_UTILS, attribute="apply_parameter_freezing",
                         why="direct callers apply freeze_config")
PARSE_DISTRIBUTED = HookPoint(module=DIST_UTILS, attribute="parse_distributed_section",
                              why="the distributed section is turned into the framework's typed config",
                              used_by=((DIST_UTILS, "create_distributed_setup_from_config", "parse_distributed_section"),))
PARALLELIZE = HookPoint(module=PARALLELIZER, attribute="ModelParallelizer.parallelize",
                        why="mmfreeze's distributed additions act at its FSDP hook",
                        used_by=((PARALLELIZER, "ModelParallelizer._apply", "_apply_fsdp_sharding"),))
COERCE_OVERRIDES = HookPoint(
    module=OPTIMIZER, attribute="_coerce_param_group_overrides",
    why="param_group_overrides entries become ParamGroupOverride objects there",
    used_by=((OPTIMIZER, "OptimizerConfig.__post_init__", "_coerce_param_group_overrides"),
             (OPTIMIZER, "OptimizerFromFactoryConfig.build", "_coerce_param_group_overrides")))
OPTIMIZER_CONFIGS_WITH_BUILD = ("OptimizerConfig", "_DionConfigBase", "OptimizerFromFactoryConfig")
"""Every optimizer config class of 0.7.0 that defines its own ``build`` (the typed configs, the
Dion family, and ``_target_: torch.optim.X`` recipes through the factory config)."""
BUILD_OPTIMIZER = tuple(
    HookPoint(module=OPTIMIZER, attribute=f"{name}.build",
              why="selector rate entries are resolved on the model, and the guard armed, at each optimizer build")
    for name in OPTIMIZER_CONFIGS_WITH_BUILD
)
HOOK_POINTS = (PARSE_AT_RECIPE, PARSE_AT_BUILD, APPLY_IN_POLICY, APPLY_DIRECT, PARSE_DISTRIBUTED, PARALLELIZE,
               COERCE_OVERRIDES, *BUILD_OPTIMIZER)


@dataclass(frozen=True, kw_only=True)
class Installation:
    """The integration as installed in this process."""

    release: str
    """The nemo-automodel version it was installed into."""
    context: RunContext
    patches: tuple[Patch, ...]

    def uninstall(self) -> None:
        """Put every framework function back."""
        remove_patches(self.patches)


def install(recipe: str | os.PathLike[str] | None = None, *, guard: bool | None = None) -> Installation:
    """Install the integration into the installed nemo-automodel, once per process.

    - ``recipe``: the recipe this process trains (default: ``$MMFREEZE_NEMO_RECIPE``, which
      `mmfreeze train` sets). Its `multimodal.modules` overrides are used, and the guard compares
      the run with its snapshot. Without one, the guard cannot run: pass ``guard=False``.
    - ``guard``: run the guard before the first optimizer step; default: the recipe's
      ``mmfreeze.guard`` key, else true.

    Raises :class:`~mmfreeze.exceptions.IntegrationError` on an unsupported release, a missing hook
    point (nothing is patched then), or a second install.
    """
    release = check_supported_release()
    if (current := installed()) is not None:
        raise IntegrationError(f"already installed (recipe: {current.context.recipe}); call uninstall() first",
                               key="mmfreeze.nemo")
    path = recipe if recipe is not None else os.environ.get(RECIPE_ENV) or None
    context = read_run_context(Path(path) if path is not None else None, guard=guard)
    installation: list[Installation] = []
    _check_every_optimizer_build_is_hooked()
    patches = apply_patches(_replacements(context, installation))
    installation.append(Installation(release=release, context=context, patches=patches))
    return installation[0]


def installed() -> Installation | None:
    """The installation active in this process, read from the framework itself (no global of ours)."""
    try:
        _, _, current = resolve(PARSE_AT_RECIPE)
    except LookupError:
        return None
    found = getattr(current, "mmfreeze_installation", None)
    return found[0] if found else None


def _replacements(context: RunContext, installation: list[Installation]) -> list[tuple[HookPoint, Callable[[Any], Any]]]:
    additions = distributed.Additions()

    def marked(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def make_marked(original: Any) -> Any:
            replacement = make(original)
            replacement.mmfreeze_installation = installation  # filled once every point is patched
            return replacement
        return make_marked

    return [
        (PARSE_AT_RECIPE, marked(lambda original: freeze.parse_hook(original, context))),
        (PARSE_AT_BUILD, marked(lambda original: freeze.parse_hook(original, context))),
        (APPLY_IN_POLICY, marked(lambda original: freeze.apply_hook(original, context))),
        (APPLY_DIRECT, marked(lambda original: freeze.apply_hook(original, context))),
        (PARSE_DISTRIBUTED, marked(lambda original: distributed.parse_hook(original, context, additions))),
        (PARALLELIZE, marked(lambda original: distributed.parallelize_hook(original, context, additions))),
        (COERCE_OVERRIDES, marked(lambda original: rates.coerce_hook(original, context))),
        *((point, marked(lambda original: optimizer.build_hook(original, context))) for point in BUILD_OPTIMIZER),
    ]


def _check_every_optimizer_build_is_hooked() -> None:
    """An optimizer config class with a ``build`` of its own that the guard does not arm would
    train unguarded: refuse to install instead."""
    try:
        module = importlib.import_module(OPTIMIZER)
    except ImportError:
        return  # apply_patches reports the module itself
    pending, seen = [module.OptimizerConfig], []
    while pending:
        cls = pending.pop()
        seen.append(cls)
        pending.extend(cls.__subclasses__())
    unhooked = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in seen
                      if "build" in vars(cls) and cls.__qualname__ not in OPTIMIZER_CONFIGS_WITH_BUILD)
    if unhooked:
        raise IntegrationError(
            f"optimizer configs with a build() the guard cannot arm: {', '.join(unhooked)}; nothing was patched",
            key="mmfreeze.nemo")


def uninstall() -> None:
    """Remove the integration from this process (a no-op when it is not installed)."""
    if (current := installed()) is not None:
        current.uninstall()
