"""The served models, by the name clients put in `model`.

Owns: name → `ServedModel` lookup and the 404 for unknown names. Knows nothing about HTTP
or how the engines run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from gateway.errors import ModelNotFound
from trainer.types import ServedModel


class ModelRegistry:
    def __init__(self, models: Mapping[str, ServedModel] | Iterable[ServedModel]):
        if isinstance(models, Mapping):
            self._models = dict(models)
        else:
            self._models = {model.name: model for model in models}
        assert self._models, "the gateway needs at least one served model"

    def get(self, name: str) -> ServedModel:
        model = self._models.get(name)
        if model is None:
            served = ", ".join(sorted(self._models))
            raise ModelNotFound(
                f"The model {name!r} does not exist. Served models: {served}.", param="model"
            )
        return model

    def find(self, name: str) -> ServedModel | None:
        return self._models.get(name)

    def names(self) -> list[str]:
        return list(self._models)

    def policy_versions(self) -> dict[str, int]:
        return {name: model.engine.version for name, model in self._models.items()}

    def __iter__(self) -> Iterator[tuple[str, ServedModel]]:
        return iter(self._models.items())
