"""The swarm API's state: clients and their leases (`clients`), episodes opened and
finished by clients (`episodes`), and an episode's calls and timelines as the API shows
them (`traces`).

Owns client registration, heartbeats and the episode lifecycle. Must not know HTTP routing
or training (a finished episode is handed to the run's buffer).
"""
