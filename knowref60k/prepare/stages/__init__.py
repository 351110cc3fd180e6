"""The prepare stages, one module each, in the order of `knowref60k.prepare.preparer.STAGES`."""
