"""The `knowref60k` command line."""
