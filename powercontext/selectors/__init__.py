"""Reads used by views and the application layer."""
