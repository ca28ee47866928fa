"""Providers: embedders and chat models, picked from a registry by name."""
