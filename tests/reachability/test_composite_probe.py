"""Issue 25: a composite (``Gemma4WithDrafter``) is probed whole, and its probe equals a real joint backward.

The build worker builds the framework's own composite class over both parts at shrunken widths and
walks the graph of the joint loss (the base's logits and every drafter step's). Here the same
composite is built with randomly initialised parts, run forward and backward for real, and the
parameters left without a gradient compared name by name, for one and two drafter steps: the
constructor argument decides whether the drafter's ``post_projection`` feeds the loss.

Under transformers 5.24.0 the drafter's forward raises on any sequence longer than one token
(``Gemma4TextModel._maybe_slice_kv_shared_inputs`` slices the per-layer inputs a drafter does not
have), so there the real forward raises and the probe must say so, with the same error and the
function that raised it; under 5.18.0 (nemo-automodel 0.7.0's pin, `.ci/framework_env`) both run.
Marked ``framework`` so both environments run it, each for its release.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.build import build_transformers_config, resolve_model_class
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.composite import build_composite
from mmfreeze.models.loader import ModelRequest, find_config, find_drafter, load_structure
from mmfreeze.models.probe.batches import TEXT, TEXT_IMAGE, batch_for
from mmfreeze.models.probe.run import SHRUNKEN
from mmfreeze.models.probe.shrink import shrunken
from mmfreeze.models.structure import MixesToProbe, Probe
from mmfreeze.recipes.composite import DRAFTER_AUTO_CLASS
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.versions import installed_version
from tests.conftest import EXAMPLE_CONFIGS

pytestmark = [pytest.mark.slow, pytest.mark.framework]

RECIPE = EXAMPLE_CONFIGS / "vlm_finetune/gemma4_joint_drafter/gemma4_e2b_joint_drafter_medpix.yaml"
JOINT_FORWARD_RUNS = {"5.18.0": True, "5.24.0": False, "5.25.0": True}
"""Supported transformers release -> whether its Gemma-4 drafter runs a training batch."""
DRAFTER_RAISES = ("TypeError: 'NoneType' object is not subscriptable (in Gemma4TextModel._maybe_slice_kv_shared_inputs, "
                  "transformers/models/gemma4/modeling_gemma4.py)")


def request(steps: int, mix: str) -> ModelRequest:
    recipe_request = model_request(load_recipe(RECIPE))
    assert recipe_request.drafter is not None and recipe_request.drafter.num_steps == 1
    return replace(recipe_request, probe=MixesToProbe(named=frozenset({mix})),
                   drafter=replace(recipe_request.drafter, num_steps=steps))


def probe(steps: int, mix: str) -> Probe:
    """The probe the build worker records for the recipe's composite at ``steps`` drafter steps."""
    structure = load_structure(request(steps, mix), StructureCache(default_cache_dir())).structure
    return {probe.mix: probe for probe in structure.probes}[mix]


def real_joint_backward(steps: int, mix: str) -> frozenset[str]:
    """The composite's parameters a real joint forward and backward leaves without a gradient: both
    parts at shrunken widths with random weights, the framework's class over them, every parameter
    trainable, the loss the base's logits and every drafter step's, as the framework's recipe adds them."""
    composite = request(steps, mix)
    base_config = build_transformers_config(find_config(composite).config)
    drafter = find_drafter(composite)
    assert drafter is not None
    drafter_config = build_transformers_config(drafter.config)
    base_class = resolve_model_class(base_config, composite.auto_class)
    torch.manual_seed(0)
    small = shrunken(base_config)
    parts = base_class._from_config(small), resolve_model_class(drafter_config, DRAFTER_AUTO_CLASS)._from_config(
        shrunken(drafter_config))
    model = build_composite(*parts, composite.drafter, source="test")
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    output = model(**batch_for(mix, base_class)(small, base_class))
    assert len(output.drafter_logits) == steps
    sum([logits.float().sum() for logits in output.drafter_logits], output.logits.float().sum()).backward()
    return frozenset(name for name, parameter in model.named_parameters() if parameter.grad is None)


@pytest.mark.parametrize("mix", [TEXT, TEXT_IMAGE])
@pytest.mark.parametrize("steps", [1, 2], ids=["one drafter step", "two drafter steps"])
def test_the_composite_probe_equals_a_real_joint_backward_name_by_name_or_raises_where_the_release_does(
    steps: int, mix: str
) -> None:
    release = installed_version("transformers")
    assert release in JOINT_FORWARD_RUNS, f"transformers {release} is not a supported release"
    found = probe(steps, mix)
    if not JOINT_FORWARD_RUNS[release]:
        with pytest.raises(TypeError, match="'NoneType' object is not subscriptable"):
            real_joint_backward(steps, mix)
        assert (found.method, found.error) == ("", f"{SHRUNKEN}: {DRAFTER_RAISES}")
        return
    without_gradient = real_joint_backward(steps, mix)
    assert found.method == SHRUNKEN and frozenset(found.unreached) == without_gradient
    # Only a second step reads the first's post_projection output; the audio tower never feeds either mix.
    assert ("drafter.post_projection.weight" in without_gradient) is (steps == 1)
    assert any(name.startswith("base.model.audio_tower.") for name in without_gradient)
    assert not any(name.startswith("drafter.") and name != "drafter.post_projection.weight" for name in without_gradient)
