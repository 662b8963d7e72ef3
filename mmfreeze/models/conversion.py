"""A built model's checkpoint renames: from the installed transformers' own conversion mapping for
its classes, from the framework's state-dict adapter for the framework's own classes.

``get_model_conversion_mapping`` lists the transforms ``from_pretrained`` applies to checkpoint
names ("used during loading and, when reversed, during saving"). Each parameter's checkpoint name
is its name with the reversed renamings applied, the way ``revert_weight_conversion`` saves a model
built from scratch: without ``PrefixChange`` transforms (they strip a prefix a sub-model checkpoint
may or may not have had) and without converters (they merge or split tensors, and leave names the
renamings then act on). A pair is kept only when loading gives the name back: a name the mapping
cannot round-trip is not claimed as renamed.

transformers' mapping is keyed by class name, so it is applied to transformers' own classes only.
The framework's classes read and write checkpoints through their ``state_dict_adapter``
(``to_hf``: native names -> the Hugging Face checkpoint's): each parameter's checkpoint name is
what ``to_hf`` makes of it alone, kept when it is one name (an adapter that splits a tensor into
several gives no rename for it). Both name the checkpoint the same way, as far as renames go, so a
snapshot made with one builder is compared with a model the other built through them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.boundary.names import PACKAGE_PREFIX
from mmfreeze.models.renames import Renames, derive_renames
from mmfreeze.versions import installed_version

if TYPE_CHECKING:
    from torch import nn


def checkpoint_renames(model: nn.Module) -> Renames:
    """The rules that turn the checkpoint's names into ``model``'s (none when they are the same)."""
    from transformers import PreTrainedModel

    if type(model).__module__.startswith(PACKAGE_PREFIX):
        return _adapter_renames(model)
    if not isinstance(model, PreTrainedModel) or not type(model).__module__.startswith("transformers."):
        return Renames()
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import PrefixChange, WeightRenaming, rename_source_key

    renamings = [t for t in get_model_conversion_mapping(model, add_legacy=False) if isinstance(t, WeightRenaming)]
    saving = [t.reverse_transform() for t in reversed(renamings) if not isinstance(t, PrefixChange)]
    if not saving:
        return Renames()
    names = [name for name, _ in model.named_parameters()]
    checkpoint_of = {}
    for name in names:
        checkpoint, _ = rename_source_key(name, saving, [], reverse=True)
        if checkpoint != name and rename_source_key(checkpoint, renamings, [])[0] == name:
            checkpoint_of[name] = checkpoint
    return derive_renames(checkpoint_of, names, f"transformers {installed_version('transformers')} conversion mapping")


def _adapter_renames(model: nn.Module) -> Renames:
    adapter = getattr(model, "state_dict_adapter", None)
    if adapter is None:
        return Renames()
    names = [name for name, _ in model.named_parameters()]
    checkpoint_of = {}
    for name, parameter in model.named_parameters():
        try:
            converted = list(adapter.to_hf({name: parameter}))
        except Exception:  # noqa: BLE001  an adapter may need a tensor's siblings, or real data: no rename is claimed
            continue
        if len(converted) == 1 and converted[0] != name:
            checkpoint_of[name] = converted[0]
    return derive_renames(checkpoint_of, names, f"nemo-automodel {installed_version('nemo-automodel')} "
                                                f"{type(adapter).__name__}")
