"""mmfreeze: which parameters every multimodal recipe freezes, and a safe path to say it explicitly."""

__version__ = "0.1.0"
