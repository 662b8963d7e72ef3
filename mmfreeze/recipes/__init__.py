"""Reading training recipes: YAML files, their `model:` section and where to find them."""
