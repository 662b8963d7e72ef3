"""Freezing: the legacy engine, the new (modality, role) engine, and applying plans to live models."""
