"""Text-only decoders: no multimodal module, the whole model is the language model.

Recipes use them as distillation teachers or text-only contrast runs; declaring them keeps
"freeze the language model" exact there too, instead of leaving it to the leaf-name heuristic.
"""

from __future__ import annotations

from mmfreeze.resolver.entry import ArchitectureEntry
from mmfreeze.resolver.table_parts import language, other

DECODER_ONLY = ArchitectureEntry(modules=(), language_model=language("model"))
GEMMA4_DRAFTER = ArchitectureEntry(modules=(), language_model=(*language("model"), other("pre_projection"),
                                                                other("post_projection")))
"""Gemma 4's drafter (assistant): a small decoder that reads the base's embeddings and last hidden
state through ``pre_projection`` and hands its own back through ``post_projection``."""

TABLE = {
    **dict.fromkeys(("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"), DECODER_ONLY),
    "Gemma4AssistantForCausalLM": GEMMA4_DRAFTER,
}
