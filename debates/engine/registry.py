"""The protocol registry: protocols register by name; adding one is adding a package under debates/protocols/,
never touching the engine. Generic code asks the registry, never tests a protocol's name."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path

from debates.agents.simulated import generators_register
from debates.contract import Protocol

PROTOCOLS_DIR = Path(__file__).resolve().parent.parent / "protocols"
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
    """Import every protocol package (debates/protocols/<package>/protocol.py registers itself) and hand its
    simulated seats (<package>/simulated.py, where it has one) to the simulated backend. Imported by name: the
    registry is the one place that reaches up to the protocols."""
    for module in pkgutil.iter_modules([str(PROTOCOLS_DIR)]):
        if module.ispkg:
            importlib.import_module(f"debates.protocols.{module.name}.protocol")
            if importlib.util.find_spec(f"debates.protocols.{module.name}.simulated") is not None:
                simulated = importlib.import_module(f"debates.protocols.{module.name}.simulated")
                generators_register(simulated.GENERATORS)
