"""Helpers for tests and tutorials: running on the configured target, simulator statistics."""
