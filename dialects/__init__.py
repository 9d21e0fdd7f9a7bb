"""tensorkiln's dialects: ``graph`` (tensors), ``te`` (what to compute), ``loop`` (how);
``scalar`` holds the scalar ops of MLIR's ``arith`` that xDSL lacks (``scalar.remf``)."""
