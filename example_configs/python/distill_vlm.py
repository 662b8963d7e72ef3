"""KD launcher snippet (parsed by mmfreeze, never executed)."""
from nemo_automodel.components.training.utils import apply_parameter_freezing

STUDENT_FREEZE = {
    "freeze_vision_tower": True,   # shared SigLIP, no need to train
    "freeze_language_model": False,
}


def setup_student(student):
    apply_parameter_freezing(student, STUDENT_FREEZE)
    return student
