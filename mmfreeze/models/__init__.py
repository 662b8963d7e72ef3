"""Model configs, meta-device builds and the pure-data structure of a built model."""
