"""One forward per data mix, without weights, and the parameters its loss does not reach.

The loss is the sum of the logits: every path to the training loss passes through them, and a sum
reaches whatever any logit depends on. Activation checkpointing is never enabled here (built
models have it off), so the graph shows every parameter the forward used. Every parameter is made
trainable first, so one probe serves every recipe of the model: what a recipe trains and the loss
never reaches is the intersection (:mod:`mmfreeze.reachability`).
"""

from __future__ import annotations

import logging
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import first_line
from mmfreeze.models.build import build_fake_model, constructed, quiet_transformers
from mmfreeze.models.probe.batches import TEXT, Batch, accepted_mixes, batch_for
from mmfreeze.models.probe.graph import unreached_names
from mmfreeze.models.probe.shrink import shrunken
from mmfreeze.models.quiet import log_levels
from mmfreeze.models.structure import Probe

if TYPE_CHECKING:
    import torch
    from torch import nn
    from transformers import PretrainedConfig

META = "meta-device forward"
FAKE = "FakeTensorMode forward at full size"
SHRUNKEN = "forward of a shrunken config (every depth kept) on the CPU"

LOSS_MODULE: Mapping[str, str] = MappingProxyType({
    "Qwen2_5OmniForConditionalGeneration": "thinker",
    "Qwen3OmniMoeForConditionalGeneration": "thinker",
})
"""Classes whose own ``forward`` is not what training runs: the loss is this submodule's (the
Omni models' thinker; the talker and token2wav only generate speech)."""
FAKE_IMAGE_PATH = frozenset({"LlavaForConditionalGeneration"})
"""Classes whose image path runs under ``FakeTensorMode`` at full size. Qwen2-VL's vision
attention cuts its sequence at ``cu_seqlens`` computed from the grid, and Gemma-3's construction
guards on a data-dependent value, which fake tensors cannot pass: those run on a shrunken config."""

SHRUNKEN_WEIGHT = 0.02
"""Every weight of a shrunken model: the values never matter to which parameters a loss reaches,
only determinism does (uninitialised memory could hold anything)."""

HEAD_ROWS = 1
"""Vocabulary rows a shrunken model's output head computes (:func:`_narrow_head`)."""

RAISES_ALIKE = "the forward raises the same error under each method tried"
"""How a probe says the model's own code fails, not a method: two methods failed alike on this mix,
or the text mix's did, with the error this mix's method fails with."""

Method = Callable[[Batch], frozenset[str]]


class Prober:
    """The probes of one model (a class built from one config), each mix's taken when first asked
    for and kept, with the shrunken model the mixes share: recipes reach one config through several
    builders and Auto classes, and each build asks for the mixes its recipes name.

    A mix's probe depends on that mix alone (and on the text mix's, taken when a failure needs it),
    whichever mixes are asked for and in which order: each is cached as a function of its key and mix."""

    def __init__(self, batches: Mapping[str, Batch | None], batch_class: type[nn.Module],
                 methods: Callable[[str], Iterable[tuple[str, Method]]]) -> None:
        """``batches``: ``batch_class``'s, one per mix the forward takes; ``methods(mix)``: the methods
        to try for a mix, in order (the first that runs gives its probe)."""
        self._batches = batches
        self._batch_class = batch_class
        self._methods = methods
        self._taken: dict[str, Probe] = {}

    @property
    def mixes(self) -> tuple[str, ...]:
        """The mixes the forward takes, text first."""
        return tuple(self._batches)

    def probes(self, mixes: Iterable[str]) -> tuple[Probe, ...]:
        """A probe per mix of ``mixes`` (some of :attr:`mixes`)."""
        # A forward warns about training matters (deprecated arguments, slow reference kernels): noise here.
        with warnings.catch_warnings(), quiet_transformers():
            warnings.simplefilter("ignore")
            return tuple(self._probe(mix) for mix in mixes)

    def _probe(self, mix: str) -> Probe:
        if mix not in self._taken:
            batch = self._batches[mix]
            self._taken[mix] = (
                Probe(mix=mix, method="", error=f"mmfreeze has no {mix} batch for {self._batch_class.__name__} yet")
                if batch is None else
                _probe(mix, batch, dict(self._methods(mix)), text=None if mix == TEXT else lambda: self._probe(TEXT)))
        return self._taken[mix]


def model_prober(model: nn.Module) -> Prober:
    """The prober of ``model``, the build on the meta device, for each mix its training forward takes
    (:data:`LOSS_MODULE`'s for the Omni models). Probing changes ``model`` (every parameter
    trainable, bfloat16): take its structure first."""
    model_class = type(model)
    batches = {mix: batch_for(mix, model_class) for mix in accepted_mixes(_loss_module(model))}
    text_shrunken = any(batch is not None for mix, batch in batches.items() if mix != TEXT)
    shrunken_model = cache(lambda: _shrunken_model(model.config, model_class))  # built once, for every mix that needs it
    return Prober(batches, model_class, lambda mix: _methods(mix, model, shrunken_model, text_shrunken=text_shrunken))


def composite_prober(base: nn.Module, drafter: nn.Module, compose: Callable[[nn.Module, nn.Module], nn.Module]) -> Prober:
    """The prober of a composite, for each mix its base takes (``Gemma4WithDrafter`` hands every input
    but the tokens to its base), through the composite ``compose`` makes of the two parts, both
    shrunken. ``base`` and ``drafter`` are the parts built on the meta device; only their configs
    and classes are read. The names are the composite's (``base.*``, ``drafter.*``).

    Shrunken only: the meta device stops at the base's mask (``.item()``), and at full size under
    fake tensors the parts need widths that fit each other, which a drafter's config of transformers'
    defaults (the bundled one: its published file is not available here) does not give; shrunken,
    both parts have the same widths. It is also the cheap one (a full-size fake run cost 2.5 s, measured)."""
    base_class, drafter_class = type(base), type(drafter)

    @cache
    def shrunken_model() -> nn.Module:
        whole = compose(_shrunken_model(base.config, base_class), _shrunken_model(drafter.config, drafter_class))
        return whole.requires_grad_(True)  # the composite's constructor froze some; a probe trains all

    methods = ((SHRUNKEN, lambda batch: on_shrunken_model(shrunken_model(), batch, base_class)),)
    return Prober({mix: batch_for(mix, base_class) for mix in accepted_mixes(base)}, base_class, lambda mix: methods)


def _methods(mix: str, model: nn.Module, shrunken_model: Callable[[], nn.Module], *,
             text_shrunken: bool) -> Iterator[tuple[str, Method]]:
    """The methods to try for ``mix``, cheapest first. ``text_shrunken``: the class has a batch for
    another mix, so its shrunken config is known to run, and the text mix runs there first too: a
    shrunken forward runs ATen's kernels, the meta device's are Python decompositions per operation
    (Qwen2.5-VL-7B's text mix: 0.05 s against 0.45 s on meta, measured), and the graph is the same
    (tests compare both with a real backward)."""
    on_shrunken = (SHRUNKEN, lambda batch: on_shrunken_model(shrunken_model(), batch, type(model)))
    fake = (FAKE, lambda batch: with_fake_tensors(model.config, type(model), batch))
    if mix != TEXT:
        if type(model).__name__ in FAKE_IMAGE_PATH:  # fake tensors pass `.item()`, meta does not
            yield fake
        yield on_shrunken
        return
    if text_shrunken:
        yield on_shrunken
    yield META, lambda batch: on_meta(model, batch)
    yield fake
    if not text_shrunken:
        yield on_shrunken


def _probe(mix: str, batch: Batch, methods: Mapping[str, Method], text: Callable[[], Probe] | None) -> Probe:
    """The first method that runs gives the probe. Two methods failing with one error stop the
    rest: the model's own forward raises, whatever runs it (Llama-4's under transformers 5.24). So
    does a method failing with the error the ``text`` mix's probe found that way (a mix tried by one
    method alone fails in the model too); ``None`` for the text mix itself."""
    failures: dict[str, str] = {}
    for method, run in methods.items():
        try:
            return Probe(mix=mix, method=method, unreached=tuple(sorted(run(batch))))
        except Exception as error:  # noqa: BLE001 - model code raises anything; the next method may pass
            why = _failure(error)
            raises = Probe(mix=mix, method="", error=f"{RAISES_ALIKE}: {why}")
            if (failures and set(failures.values()) == {why}) or (text is not None and text().error == raises.error):
                return raises
            failures[method] = why
    return Probe(mix=mix, method="", error="; ".join(f"{method}: {why}" for method, why in failures.items()))


def _failure(error: Exception) -> str:
    """What a failed method says: the error and where the model's code raised it (the innermost
    frame outside torch, whose operations raise on the caller's behalf; its file under the installed
    packages), so a reader finds the line."""
    frames = [(frame.f_code, _package_path(frame.f_code.co_filename)) for frame, _ in traceback.walk_tb(error.__traceback__)]
    code, path = next(((code, path) for code, path in reversed(frames) if not path.startswith("torch/")), frames[-1])
    return f"{type(error).__name__}: {first_line(error)} (in {code.co_qualname}, {path})"


def _package_path(filename: str) -> str:
    """``filename`` from its package down (``transformers/models/...``), or its name alone."""
    parts = PurePath(filename).parts
    return "/".join(parts[parts.index("site-packages") + 1:] if "site-packages" in parts else parts[-1:])


def on_meta(model: nn.Module, batch: Batch) -> frozenset[str]:
    """``batch`` through ``model``, built on the meta device, and the graph walked from the loss."""
    import torch

    model.requires_grad_(True)
    model.to(torch.bfloat16)  # fused MoE kernels (grouped_mm) take no float32
    inputs = {name: value.to("meta") for name, value in batch(model.config, type(model)).items()}
    with torch.enable_grad():
        loss = _forward(model, inputs)
    return unreached_names(model, loss)


def on_shrunken_model(model: nn.Module, batch: Batch, batch_class: type[nn.Module]) -> frozenset[str]:
    """``batch`` (``batch_class``'s, shaped by ``model.config``) through ``model``, a shrunken
    config's with real tensors on the CPU (:mod:`mmfreeze.models.probe.shrink`), and the graph
    walked from the loss. The walk gives what a backward would (the parameters it leaves without a
    gradient) for about half the time."""
    import torch

    with torch.enable_grad():
        loss = _forward(model, batch(model.config, batch_class))
    return unreached_names(model, loss)


def _shrunken_model(config: PretrainedConfig, model_class: type[nn.Module]) -> nn.Module:
    """``model_class`` at :func:`shrunken` widths, on the CPU, every parameter trainable.

    Its weights are a constant, not random: only the graph is read, and random initialisation was
    nine tenths of the build (Qwen2.5-Omni's 2.8 s against 0.2 s, measured), so it is skipped
    (:func:`~mmfreeze.models.build.constructed`; tests compare the walk on this model with a
    backward through a randomly initialised one). Buffers (position ids, rotary frequencies) are
    computed in the modules' constructors, which it leaves alone."""
    import torch

    model = constructed(shrunken(config), model_class)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(SHRUNKEN_WEIGHT)
            parameter.requires_grad_(True)
    _narrow_head(model)
    return model


def _narrow_head(model: nn.Module) -> None:
    """Make the output head of ``model``'s loss module, where it is a plain ``nn.Linear`` over the
    vocabulary, compute its first :data:`HEAD_ROWS` logits only (through a slice of the same weight).

    The graph from the loss is the same but for its width: every logit is one row of that weight
    applied to the same hidden state, and elementwise steps after it (soft-capping) keep that, so
    the loss reaches the same parameters. A shrunken config keeps the real vocabulary (special
    token ids sit at its end), and over it the head and Gemma's soft-capping of every position's
    logits were most of a forward: Gemma-3n's image mix 0.8 s of 1.2 s, profiled."""
    import torch.nn.functional as F
    from torch import nn

    head = getattr(_loss_module(model), "get_output_embeddings", lambda: None)()
    if type(head) is nn.Linear:
        head.forward = lambda hidden: F.linear(
            hidden, head.weight[:HEAD_ROWS], None if head.bias is None else head.bias[:HEAD_ROWS])


def with_fake_tensors(config: PretrainedConfig, model_class: type[nn.Module], batch: Batch) -> frozenset[str]:
    """``batch`` through ``model_class`` at full size, every tensor fake (no storage): the
    LLaVA-1.5 7B image run takes about a second and 0.8 GB."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    model = build_fake_model(config, model_class, mode)
    # An operation fake tensors cannot run is logged with its traceback before it raises; the
    # raise is the answer here (the next method runs), so the log is noise.
    with mode, torch.enable_grad(), log_levels(["torch._subclasses.fake_tensor"], logging.CRITICAL):
        model.requires_grad_(True)
        loss = _forward(model, {**batch(config, model_class), "use_cache": False})
    return unreached_names(model, loss)


def _loss_module(model: nn.Module) -> nn.Module:
    """The module whose forward training runs (:data:`LOSS_MODULE`)."""
    return model.get_submodule(LOSS_MODULE.get(type(model).__name__, ""))


def _forward(model: nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
    """The probe's loss: the sum of the logits of ``inputs`` through the module training runs, and
    of a joint output's drafter logits (``Gemma4JointOutput``: the framework's recipe adds each
    drafter step's loss to the base's)."""
    output = _loss_module(model)(**inputs)
    return sum((logits.float().sum() for logits in getattr(output, "drafter_logits", ())), output.logits.float().sum())
