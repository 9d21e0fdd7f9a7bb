"""tensorkiln's dialects: ``graph`` (tensors), ``te`` (what to compute), ``loop`` (how)."""
