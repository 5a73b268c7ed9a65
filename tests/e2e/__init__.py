"""Browser and end-to-end tests (see conftest.py for the harness)."""
