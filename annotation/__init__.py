"""Everything Label Studio: labelling config, guidelines, server launcher and client."""
