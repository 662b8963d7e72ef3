"""Frozen-parameter snapshots: one reviewed text file per recipe, compared through syrupy.

Pure parts (``format``, ``compress``, ``layout``, ``diff``, ``render``) know nothing of pytest;
``extension`` and ``plugin`` adapt them to syrupy and pytest; ``run`` drives one pytest session
for the `mmfreeze snapshot` command.
"""
