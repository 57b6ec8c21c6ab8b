"""Registers the shared harness fixtures for every test suite."""

pytest_plugins = ["tests.harness.fixtures"]
