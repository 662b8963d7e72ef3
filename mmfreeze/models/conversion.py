"""A built model's checkpoint renames, from the installed transformers' own conversion mapping.

``get_model_conversion_mapping`` lists the transforms ``from_pretrained`` applies to checkpoint
names ("used during loading and, when reversed, during saving"). Each parameter's checkpoint name
is its name with the reversed renamings applied, the way ``revert_weight_conversion`` saves a model
built from scratch: without ``PrefixChange`` transforms (they strip a prefix a sub-model checkpoint
may or may not have had) and without converters (they merge or split tensors, and leave names the
renamings then act on). A pair is kept only when loading gives the name back: a name the mapping
cannot round-trip is not claimed as renamed.

Only for transformers' own classes: the framework's classes read checkpoints through their own
state-dict adapters, which transformers' mapping (keyed by class name) must not be applied to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.models.renames import Renames, derive_renames

if TYPE_CHECKING:
    from torch import nn


def checkpoint_renames(model: nn.Module) -> Renames:
    """The rules that turn the checkpoint's names into ``model``'s (none when they are the same)."""
    from transformers import PreTrainedModel

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
    return derive_renames(checkpoint_of, names)
