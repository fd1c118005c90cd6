"""The speed machinery of lptheory: how the rules are made fast, kept apart from what they compute.

Nothing here changes a number: every route gives the bits of the reference numpy engine (a rule's ``out=``
calls on cache-sized chunks), and the tests compare them bit for bit. Private-ish: the rules
(:mod:`lptheory.optimizers`), the simulator (:mod:`lptheory.simulate`) and :mod:`lptheory.torch` call it;
users need none of it (``lptheory.engine_info`` says which engine runs; :mod:`lptheory.parallel` shares the
thread pool; :mod:`lptheory.config` lists the environment switches).

Entry points (the names of this package):

* :func:`short_step` and :func:`apply`: one optimizer step, the route chosen here (the short path for the
  arrays of the previous step, a kernel bound to a simulator's arrays, the fused kernels, the reference
  engine; torch tensors directly): :meth:`lptheory.optimizers.ElementwiseOptimizer.step` calls them;
* :func:`run`: a rule on named arrays (the engines' dispatch);
* :func:`simulate_steps`: several simulator steps of a row block in one kernel call (the simulator);
* :func:`slot`: what the routes remember per optimizer object (:mod:`lptheory.fast.cache`), so that
  optimizers stay immutable values; :func:`static`, :func:`dynamic_fields`, :func:`split`: the keys of
  compiled kernels and the split of fixed and scheduled hyper-parameters.

Modules:

* :mod:`~lptheory.fast.engine`: the reference engine (a rule on chunks, threaded) and the dispatch;
* :mod:`~lptheory.fast.fused`: tracing a rule and generating numba kernels (one pass over memory);
* :mod:`~lptheory.fast.step`: the routes of one step; :mod:`~lptheory.fast.cache`: per-object memory;
* :mod:`~lptheory.fast.nonfinite`: counting steps with a non-finite gradient;
* :mod:`~lptheory.fast.svml`, :mod:`~lptheory.fast.svml_symbols`, :mod:`~lptheory.fast.svml_kernels`: numpy's own
  SVML power called inside the kernels; :mod:`~lptheory.fast.svml_cbrt`, :mod:`~lptheory.fast.svml_cbrt_kernels`:
  its SVML cube root;
* :mod:`~lptheory.fast.pool`, :mod:`~lptheory.fast.omp`: the worker threads and torch's OpenMP team;
* :mod:`~lptheory.fast.foreach`: torch's multi-tensor operations as an array namespace;
* :mod:`~lptheory.fast.rownorm`, :mod:`~lptheory.fast.rownorm_kernels`, :mod:`~lptheory.fast.simkernels`,
  :mod:`~lptheory.fast.simfused`: row norms and the simulator's fused kernels;
* :mod:`~lptheory.fast.coupling`, :mod:`~lptheory.fast.coupling_kernels`: linear coupling's step
  (:func:`lptheory.accelerated.coupling_update`) in one pass over the running rows, with numpy's bits;
* :mod:`~lptheory.fast.info`: ``engine_info`` (imported by ``lptheory`` itself, not here: it runs a rule).
"""

from __future__ import annotations

from .cache import dynamic_fields, slot, split, static
from .engine import run
from .simfused import run_steps as simulate_steps
from .step import apply, short_step

__all__ = ["short_step", "apply", "run", "simulate_steps", "slot", "static", "dynamic_fields", "split"]
