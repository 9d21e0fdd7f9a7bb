"""Bundled example models, built with the Python builder API (no torch needed)."""
