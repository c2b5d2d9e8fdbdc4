"""A verdict's JSON form (`Verdict.to_dict()`) back into the typed `Verdict`, for clients of the server.

Fields this version does not know are dropped (a newer server may add some); missing ones take the
dataclass defaults, so the client keeps working across small schema additions."""

from __future__ import annotations

import dataclasses
from typing import Any

from cuda_agent.judge import Environment, Stat, Status, Timing, Verdict


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def verdict_from_dict(data: dict[str, Any]) -> Verdict:
    fields = _known(Verdict, data)
    fields["status"] = Status(data["status"])
    if data.get("timing"):
        timing = _known(Timing, data["timing"])
        for name in ("candidate", "eager", "compile"):
            timing[name] = Stat(**_known(Stat, timing[name]))
        fields["timing"] = Timing(**timing)
    if data.get("environment"):
        fields["environment"] = Environment(**_known(Environment, data["environment"]))
    return Verdict(**fields)
