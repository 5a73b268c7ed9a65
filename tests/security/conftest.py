"""The gateway fixtures (an app on fakes) for the hostile-input battery."""

from tests.unit.gateway.conftest import (  # noqa: F401 (pytest finds fixtures by name)
    client,
    factory,
    make_client,
    recorder,
    settings,
    start,
    trainer_client,
)
