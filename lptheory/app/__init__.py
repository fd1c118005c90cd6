"""The application floor of lptheory: the only code that imports upward.

The layers, bottom to top, are ``lptheory`` (core) <- ``synthetic`` <- ``proofs_checks`` <- ``figures``;
a lower layer never imports a higher one. This sub-package sits on top of all of them:

* :mod:`lptheory.app.cli`: the ``lptheory`` command line (also ``python -m lptheory``), with the report
  driver (``lptheory report``: runs a pack's checks, writes the report);
* :mod:`lptheory.app.guard`: output directories under a lock, staged writes (never half-written),
  Ctrl-C within about a second whatever the worker processes;
* :mod:`lptheory.app.resources`: memory estimates checked before a run allocates;
* :mod:`lptheory.app.testing`: claims as tests (the assertions, the pytest plugin registered through the
  ``pytest11`` entry point, hypothesis strategies).

Every upward import (``synthetic``, ``proofs_checks``, ``figures``) in this package is lazy, inside the
function that needs it, so that ``import lptheory`` (and importing the pytest plugin) stays cheap and no
lower layer ever loads a higher one. ``tests/test_layering.py`` checks the rule statically.
"""
