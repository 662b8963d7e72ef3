"""`python -m mmfreeze` runs the command line, like the `mmfreeze` script."""

from mmfreeze.cli.main import main

main()
