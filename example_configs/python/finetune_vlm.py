"""Minimal VLM finetune entry point as teams write it (parsed by mmfreeze, never executed)."""
from nemo_automodel import NeMoAutoModelForImageTextToText
from nemo_automodel.components.training.utils import apply_parameter_freezing
from mmfreeze.freeze import apply_freeze_config


def build_model(cfg):
    model = NeMoAutoModelForImageTextToText.from_pretrained(
        cfg["model"]["pretrained_model_name_or_path"],
        freeze_config={"freeze_vision_tower": True, "freeze_language_model": False},
    )
    # second pass after LoRA injection, reading the recipe's value directly
    if cfg["freeze_config"]["freeze_vision_tower"]:
        apply_parameter_freezing(model, {"freeze_vision_tower": True})
    return model


def freeze_for_stage1(model):
    # mmfreeze: models=llava-hf/llava-1.5-7b-hf,llava-hf/llava-1.5-13b-hf
    apply_freeze_config(
        model,
        freeze_config={
            # (was on freeze_embeddings) never read by the trainer
            "vision": {"tower": True, "projector": False},
            # stage 1: only the projector trains
            "language_model": False,
            "modules": ["model.language_model"],
        },
    )
