"""The served models, by the name clients put in `model`.

Owns: name → `ServedModel` lookup and the 404 for unknown names. The models given at start
are the *base* models; runs add their policies (`<run>/<policy>`) while the gateway runs.
Knows nothing about HTTP or how the engines run.
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
        self._base_names = list(self._models)

    def base_names(self) -> list[str]:
        """The models the gateway was started with (not the runs' policies)."""
        return list(self._base_names)

    def add(self, name: str, served: ServedModel) -> None:
        assert name not in self._models, f"{name!r} is served already"
        self._models[name] = served

    def replace(self, name: str, served: ServedModel) -> None:
        """Serve `name` from `served` from now on (requests already started keep theirs)."""
        assert name in self._models, f"{name!r} is not served"
        self._models[name] = served

    def remove(self, name: str) -> None:
        self._models.pop(name, None)

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
        """Weights version of every served model, runs' policies included."""
        return {name: model.engine.version for name, model in self._models.items()}

    def base_versions(self) -> dict[str, int]:
        """Weights version of every base model (what an episode outside a run samples)."""
        return {name: self._models[name].engine.version for name in self._base_names}

    def __iter__(self) -> Iterator[tuple[str, ServedModel]]:
        return iter(self._models.items())
