"""Run the planned dummy forwards at the model's always-executed boundary.

Where the dummy runs matters as much as whether it runs: FSDP2 issues collectives in execution
order, so the dummy tower must run where the real tower would (after the root's pre-forward, before
the language model) and join the graph where the real features would (the language model's
``inputs_embeds``). Then a skipping rank all-gathers, and in backward reduce-scatters, the tower's
units in the same order as a rank that saw the modality. Running it after the model's forward, or
adding it to the loss at the end, reorders those collectives across ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mmfreeze.distributed.dummy_forward import get_dummy_forward, get_executed_modalities
from mmfreeze.distributed.plan import MultimodalFsdpPlan

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.utils.hooks import RemovableHandle


def apply_dummy_forward(model: nn.Module, plan: MultimodalFsdpPlan) -> tuple[RemovableHandle, ...]:
    """Install forward pre-hooks that run each enabled modality's dummy when a call skips it.

    Call after ``apply_multimodal_fsdp`` (FSDP's own pre-forward hooks must run first). The dummy
    result is added to ``inputs_embeds`` with weight zero: the loss is unchanged and the tower's
    gradient from a skipping rank is exactly zero. Returns the hook handles (``.remove()``).
    """
    modalities = plan.dummy_modalities
    implementation = get_dummy_forward(model)
    if not modalities or implementation is None:
        return ()
    pending: list[torch.Tensor] = []

    def run_skipped(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        pending.clear()
        skipped = sorted(modalities - get_executed_modalities(model, kwargs))
        device = _input_device(args, kwargs)
        pending.extend(implementation.run(model, modality, device=device) for modality in skipped)

    def add_zero_weighted(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not pending:
            return None
        total = sum(pending)
        pending.clear()
        embeds = kwargs["inputs_embeds"]
        kwargs["inputs_embeds"] = embeds + (total * 0.0).to(embeds.dtype)
        return args, kwargs

    boundary = model.get_submodule(implementation.language_model_path)
    return (
        model.register_forward_pre_hook(run_skipped, with_kwargs=True),
        boundary.register_forward_pre_hook(add_zero_weighted, with_kwargs=True),
    )


def _input_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device:
    import torch

    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")
