"""Python rewrite rules (libcst), one per module, run in :mod:`.registry` order: a literal section is rewritten only when bound to models and proven on each (:mod:`.prove`), never guessed."""
