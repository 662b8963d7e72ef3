"""Which `model._target_` strings a recipe may use, and the transformers Auto class each means.

A `_target_` is never imported or executed: it is only looked up here. The allowlist is data, so
a team with its own wrapper adds one entry (``--allow-target``) instead of running its code.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mmfreeze.boundary.names import AUTO_MODEL, PACKAGE
from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.composite import COMPOSITE_TARGETS

_NEMO_AUTO_CLASSES = {
    "NeMoAutoModelForImageTextToText": "AutoModelForImageTextToText",
    "NeMoAutoModelForMultimodalLM": "AutoModelForMultimodalLM",
    "NeMoAutoModelForCausalLM": "AutoModelForCausalLM",
    "NeMoAutoModelForSequenceClassification": "AutoModelForSequenceClassification",
}
# Where nemo-automodel 0.7.0 defines the classes, and its package's re-export of them.
_NEMO_MODULES = (PACKAGE, AUTO_MODEL)
# The transformers Auto classes a recipe may build with, in the order a bare model id tries them
# (`mmfreeze migrate` binds a Python call site to model ids).
AUTO_CLASSES = (
    "AutoModelForImageTextToText",
    "AutoModelForMultimodalLM",
    "AutoModelForCausalLM",
    "AutoModelForSpeechSeq2Seq",
    "AutoModelForSequenceClassification",
)


def _default_targets() -> dict[str, str]:
    classes = [(f"{module}.{wrapper}", auto_class)
               for module in _NEMO_MODULES for wrapper, auto_class in _NEMO_AUTO_CLASSES.items()]
    classes += [(f"transformers.{auto_class}", auto_class) for auto_class in AUTO_CLASSES]
    return {f"{cls}.{constructor}": auto_class
            for cls, auto_class in classes for constructor in ("from_pretrained", "from_config")}


DEFAULT_TARGETS: Mapping[str, str] = MappingProxyType(_default_targets())


def parse_target_assignment(text: str) -> tuple[str, str]:
    """``"my_pkg.MyVLM.from_pretrained=AutoModelForImageTextToText"`` -> (target, auto class)."""
    target, sep, auto_class = text.partition("=")
    if not sep or not target.strip() or not auto_class.strip().startswith("AutoModel"):
        raise RecipeError(
            f"--allow-target expects TARGET=AutoModelFor..., got {text!r} "
            "(e.g. my_pkg.MyVLM.from_pretrained=AutoModelForImageTextToText)"
        )
    return target.strip(), auto_class.strip()


def resolve_auto_class(target: str, allowed: Mapping[str, str], *, source: str) -> str:
    """The Auto class name for ``target``, or an error listing what is allowed."""
    if target in COMPOSITE_TARGETS:
        return COMPOSITE_TARGETS[target]
    if target in allowed:
        return allowed[target]
    suffix_matches = sorted(t for t in allowed if t.rsplit(".", 2)[-2:] == target.rsplit(".", 2)[-2:])
    hint = f" Did you mean {suffix_matches[0]!r}?" if suffix_matches else ""
    raise RecipeError(
        f"_target_ {target!r} is not in the allowlist (mmfreeze never imports a _target_).{hint} "
        f"Allowed: {', '.join(sorted(allowed))}. Add your own with --allow-target TARGET=AutoModelFor...",
        source=source,
        key="model._target_",
    )
