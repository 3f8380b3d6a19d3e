"""Helpers shared by the tests (no tests here): import them as `support.<module>`."""
