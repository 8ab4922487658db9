"""Fixtures for the deployment watcher's integration tests (the harness
itself lives in deployments_harness.py, importable by a unique name)."""

from deployments_harness import scheduler, state, watcher, watchers

__all__ = ["scheduler", "state", "watcher", "watchers"]
