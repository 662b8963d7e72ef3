"""The framework boundary: everything mmfreeze knows about nemo-automodel by name, in one place.

- :mod:`.names`: the distribution and module names, and every framework module mmfreeze imports
  or reads an attribute of (private ones included: each is a release-specific seam);
- :mod:`.releases`: the releases whose trainability rules mmfreeze reproduces, the one its runtime
  integration patches, and what a release before 0.7 would do with a new-vocabulary recipe;
- :mod:`.hook_points`: the framework functions the runtime integration may replace, by need.

Which transformers a release requires is read from the installed distribution's metadata
(:func:`mmfreeze.versions.framework_transformers_requirement`), never restated here.
"""
