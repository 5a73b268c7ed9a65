"""The OpenAI-compatible surface: wire types (`wire`), chat and text completions
(`chat`, `completions`, with `common` between them), sampling parameters and limits
(`sampling`), n > 1 fan-out (`fanout`) and per-key admission (`admission`). The
Responses/Messages translators land here too.

Owns turning a request into engine calls and an answer, and handing each call to the
recorder. Must not know runs, training or HTTP routing (the routes in `gateway.http` call
these services).
"""
