"""The `mmfreeze` command line: each command in its own module, wired explicitly in main.py."""
