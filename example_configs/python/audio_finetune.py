"""Speech finetune helpers (parsed by mmfreeze, never executed)."""
from nemo_automodel.components.training.utils import apply_parameter_freezing


def prepare(model, train_encoder: bool):
    cfg = {"freeze_audio_tower": not train_encoder, "freeze_vision_tower": True}
    apply_parameter_freezing(model, cfg)
    return model


def prepare_default(model):
    # an empty dict still freezes the vision tower (legacy default)
    apply_parameter_freezing(model, {})
    return model


def prepare_video(model):
    apply_parameter_freezing(model, freeze_config={"freeze_video_embedder": True, "freeze_vision_tower": False})
