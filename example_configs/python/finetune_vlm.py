"""Minimal VLM finetune entry point as teams write it (parsed by mmfreeze, never executed)."""
from nemo_automodel import NeMoAutoModelForImageTextToText
from mmfreeze.freeze import apply_freeze_config


def build_model(cfg):
    model = NeMoAutoModelForImageTextToText.from_pretrained(
        cfg["model"]["pretrained_model_name_or_path"],
        freeze_config={"vision": {"tower": True}, "language_model": False},
    )
    # second pass after LoRA injection, reading the recipe's value directly
    if cfg["freeze_config"]["freeze_vision_tower"]:
        apply_freeze_config(model, {"vision": {"tower": True}, "language_model": False})
    return model


def freeze_for_stage1(model):
    apply_freeze_config(
        model,
        freeze_config={
            # (was on freeze_embeddings) never read by the trainer
            "vision": {"tower": True},
            # stage 1: only the projector trains
            "language_model": True,
        },
    )
