"""Every table of the config in one object, with where each value came from."""
