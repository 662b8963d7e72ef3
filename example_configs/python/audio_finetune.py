"""Speech finetune helpers (parsed by mmfreeze, never executed)."""
from nemo_automodel.components.training.utils import apply_parameter_freezing
from mmfreeze.freeze import apply_freeze_config


def prepare(model, train_encoder: bool):
    cfg = {"freeze_audio_tower": not train_encoder, "freeze_vision_tower": True}
    apply_parameter_freezing(model, cfg)
    return model


def prepare_default(model):
    # an empty dict still freezes the vision tower (legacy default)
    apply_freeze_config(model, {"vision": {"tower": True}, "language_model": False})
    return model


def prepare_video(model):
    apply_freeze_config(model, freeze_config={"vision": {"tower": False}, "language_model": False, "modules": ["patch_generator.video_embedder"]})
