"""`mmfreeze explain`: one recipe on the meta device, as plain data the CLI renders."""
