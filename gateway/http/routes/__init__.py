"""Thin HTTP routes: parse, authorise, call a service, answer. No logic lives here."""
