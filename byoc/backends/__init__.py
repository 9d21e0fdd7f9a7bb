"""Built-in BYOC backends; each registers its patterns and codegen when imported."""
