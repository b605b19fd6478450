"""Tiny WSGI applications used by the test harness's own tests."""
