"""YAML rewrite rules, one per module; each edits the original text and leaves every other byte alone."""
