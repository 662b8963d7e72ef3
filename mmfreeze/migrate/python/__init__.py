"""Python rewrite rules (libcst), one per module: only literal legacy dicts are rewritten, never guessed."""
