"""`mmfreeze migrate`: legacy `freeze_config` (YAML and Python) to the new vocabulary, meaning kept or written down.

Pure planning (:mod:`.preserve`, :mod:`.intent`, :mod:`.compare`) decides what a section becomes;
one small module per rewrite rule (:mod:`.yaml`, :mod:`.python`) edits text; :mod:`.run` does the
I/O and :mod:`.atomic` the writes. Rule ids are listed, in order, in :mod:`.rules`.
"""
