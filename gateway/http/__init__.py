"""The HTTP layer: the FastAPI app (`app`), what handlers share (`state`), keys
(`auth`), body limits, Host/Origin guards (`web_guards`), `/metrics` (`telemetry`),
`/capacity` (`capacity`) and the routes (`routes/`).

Owns mapping HTTP to the services and errors to responses. Must not import torch.
"""
