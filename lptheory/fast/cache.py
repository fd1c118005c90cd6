"""What the speed machinery remembers about one optimizer object, kept here and not on the object.

Optimizers are immutable values (frozen dataclasses); the fast routes still want, per optimizer *object*,
the shape of the last step's arrays, the kernel bound to a simulator's arrays, the split of fixed and
scheduled hyper-parameters, ... :func:`slot` gives the :class:`Slot` of an object, created at first use and
dropped when the object is collected. Keyed by identity (two equal optimizers have two slots: a slot holds
array objects and counts that belong to one object). Objects that cannot be weakly referenced keep their
slot for the life of the process.
"""

from __future__ import annotations

import dataclasses
import weakref

__all__ = ["Slot", "SLOTS", "slot", "peek", "static_copy", "static", "dynamic_fields", "split", "is_schedule"]


class Slot:
    """The per-object memory of the fast routes (every field None until set):

    * ``sig``: (shape, dtype) of the last checked numpy step (the short path's key);
    * ``alias``: the in-place pattern of a donated step; ``new``: the names ``new_<buffer>``;
    * ``bound``, ``binds``, ``bind_try``: the kernel bound to a simulator's arrays, binds so far, the
      candidate arrays' ids;
    * ``split``: (fixed values, scheduled field names) of the hyper-parameters;
    * ``static``, ``dynamic``, ``kernel_static``: the configuration keys of compiled kernels;
    * ``direct``: the short path's kernel spec; ``torch``: the torch routes' compiled rule;
    * ``nonfinite_steps``, ``nonfinite_device``: the count of steps with a non-finite gradient (the
      device-side count of a GPU run);
    * ``checked_only``: every step of this object through the checked route (tests compare the routes).
    """

    __slots__ = (
        "sig",
        "alias",
        "new",
        "bound",
        "binds",
        "bind_try",
        "split",
        "static",
        "dynamic",
        "kernel_static",
        "direct",
        "nonfinite_steps",
        "nonfinite_device",
        "checked_only",
        "__weakref__",
    )

    def __init__(self):
        for name in Slot.__slots__[:-1]:
            object.__setattr__(self, name, None)
        self.binds = 0
        self.nonfinite_steps = 0
        self.checked_only = False


SLOTS: dict[int, Slot] = {}
"""The slots by object id (read directly on the routes' hot paths; :func:`slot` creates them)."""
_PINNED: dict[int, object] = {}  # objects without weak references, kept alive with their slot


def slot(obj) -> Slot:
    """The :class:`Slot` of ``obj`` (created at first use)."""
    got = SLOTS.get(id(obj))
    if got is None:
        got = Slot()
        key = id(obj)
        try:
            weakref.finalize(obj, SLOTS.pop, key, None)
        except TypeError:  # no weak references (a class with __slots__): pinned for the process
            _PINNED[key] = obj
        SLOTS[key] = got
    return got


def peek(obj) -> Slot | None:
    """The :class:`Slot` of ``obj`` if it has one (no slot is created)."""
    return SLOTS.get(id(obj))


def static_copy(opt, zeroed, source=None):
    """An object of ``opt``'s type with the fields named in ``zeroed`` set to 0.0 and the others taken from
    ``source`` (default ``opt``), built without ``__post_init__`` (0.0 may be outside a field's range): only
    a key of compiled kernels, whose zeroed fields are passed to the kernel at every step."""
    source = opt if source is None else source
    got = object.__new__(type(opt))
    for f in dataclasses.fields(opt):
        object.__setattr__(got, f.name, 0.0 if f.name in zeroed else getattr(source, f.name))
    return got


def dynamic_fields(opt) -> tuple[str, ...]:
    """Fields of ``opt`` that may change between steps: ``lr`` and every field given as a schedule."""
    s = slot(opt)
    got = s.dynamic
    if got is None:
        got = s.dynamic = tuple(
            f.name for f in dataclasses.fields(opt) if f.name == "lr" or is_schedule(getattr(opt, f.name))
        )
    return got


def static(opt):
    """``opt`` with ``lr`` and every schedule replaced by 0.0 (:func:`static_copy`): the configuration that
    fixes the rule's control flow, the cache key of compiled kernels (computed once per object)."""
    s = slot(opt)
    got = s.static
    if got is None:
        got = s.static = static_copy(opt, set(dynamic_fields(opt)))
    return got


def split(opt):
    """(fixed values by field name, names of the scheduled fields) of ``opt`` (computed once per object)."""
    s = SLOTS.get(id(opt))  # (slot() inlined: this runs at every step)
    got = s.split if s is not None else None
    if got is None:
        s = slot(opt)
        fixed, sched = {}, []
        for f in dataclasses.fields(opt):
            v = getattr(opt, f.name)
            if is_schedule(v):
                sched.append(f.name)
            fixed[f.name] = v
        got = s.split = (fixed, tuple(sched))
    return got


def is_schedule(v) -> bool:
    """Whether a hyper-parameter value is a schedule ``t -> value`` (any callable but a number or text)."""
    return callable(v) and not isinstance(v, (bool, int, float, str))
