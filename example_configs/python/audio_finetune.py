"""Speech finetune helpers (parsed by mmfreeze, never executed)."""
from nemo_automodel.components.training.utils import apply_parameter_freezing
from mmfreeze.freeze import apply_freeze_config


def prepare(model, train_encoder: bool):
    cfg = {"freeze_audio_tower": not train_encoder, "freeze_vision_tower": True}
    apply_parameter_freezing(model, cfg)
    return model


def prepare_default(model):
    # an empty dict still freezes the vision tower (legacy default)
    # mmfreeze: models=Qwen/Qwen2-Audio-7B-Instruct,mistralai/Voxtral-Mini-3B-2507
    apply_freeze_config(model, {"audio": {"tower": False, "projector": False}, "language_model": False})
    return model


def prepare_video(model):
    apply_parameter_freezing(model, freeze_config={"freeze_video_embedder": True, "freeze_vision_tower": False})
