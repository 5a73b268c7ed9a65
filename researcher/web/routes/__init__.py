"""The UI's pages: studies (list, start, one study), interventions, runs and traces."""
