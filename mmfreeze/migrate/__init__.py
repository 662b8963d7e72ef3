"""`mmfreeze migrate`: `freeze_config` (legacy flags, 0.7 selectors, both) to the new vocabulary, meaning kept or written down.

Pure planning (:mod:`.section` for the input and the framework's result, :mod:`.preserve` with
:mod:`.cover`, :mod:`.intent`, :mod:`.compare`) decides what a section becomes; one small module per
rewrite rule (:mod:`.yaml`, :mod:`.python`, each with its ordered registry) edits text, and Python
call sites are rewritten only when :mod:`.python.prove` proves them on the models they are bound
to; :mod:`.run` does the I/O and :mod:`.atomic` the writes. Rule ids are listed in :mod:`.rules`.
"""
