"""The named scalars (:class:`Hyper`) and arrays (:class:`Buffers`) an update rule reads and writes; shared by
the reference engine (:mod:`lptheory.fast.engine`) and the fused one (:mod:`lptheory.fast.fused`), which import it and
not each other."""

from __future__ import annotations

__all__ = ["Hyper", "Buffers"]


class Hyper(dict):
    """The named scalars of one step: ``h.lr``, ``h.beta1``, ... (a dict with attribute access)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no scalar {name!r} in this step (have {sorted(self)})") from None


class Buffers:
    """The named arrays a rule reads and writes: ``theta``, ``grad``, the state buffers, their
    ``new_`` outputs and the scratch arrays ``s1``, ``s2``, ..."""

    def __init__(self, **arrays):
        for k, v in arrays.items():  # one by one: dynamo (torch 2.11) cannot trace __dict__.update
            setattr(self, k, v)

    def __repr__(self):
        return f"Buffers({', '.join(self.__dict__)})"
