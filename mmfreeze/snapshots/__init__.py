"""Frozen-parameter snapshots: one reviewed text file per recipe.

Pure parts (``format``, ``compress``, ``layout``, ``diff``, ``render``) know nothing of files or
pytest; ``store`` reads and writes the files; ``check`` is the run, a plain call chain that
`mmfreeze snapshot` calls; ``plugin`` adapts the same per-recipe check to a repository's own pytest run.
"""
