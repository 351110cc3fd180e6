"""The extraction stages, one module each, in the order of `knowref60k.extract.pipeline`."""
