"""Protocols register by name; adding one is adding a package here, never touching the engine."""

from __future__ import annotations

import importlib
import pkgutil

from debates.protocols.base import Protocol

_PROTOCOLS: dict[str, Protocol] = {}


def register(protocol_class: type[Protocol]) -> type[Protocol]:
    _PROTOCOLS[protocol_class.name] = protocol_class()
    return protocol_class


def get(name: str) -> Protocol:
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise LookupError(f"Unknown protocol {name!r}; available: {', '.join(sorted(_PROTOCOLS))}") from None


def all_protocols() -> list[Protocol]:
    return sorted(_PROTOCOLS.values(), key=lambda p: p.name)


def autodiscover() -> None:
    import debates.protocols as package

    # One package per protocol (debates/protocols/<name>/protocol.py); the modules beside them are shared.
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            importlib.import_module(f"debates.protocols.{module.name}.protocol")
