"""One-pass numba kernels for the simulator's hot loops (optional: without numba, or with
``LPTHEORY_ENGINE=numpy``, the callers keep their numpy code). Each kernel performs the same IEEE
operations in the same order as the numpy code it replaces, so the results are bit-identical
(tested); rows are split over the engine's worker threads (numba releases the GIL)."""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["enabled", "separable_grad", "rademacher_add", "rademacher_add_streams", "separable_grad_rademacher_streams"]

_K: dict = {}
_STREAMS: dict = {}
_BUILD = threading.RLock()


def enabled() -> bool:
    from lptheory import parallel

    return parallel.fused_available()


def _kernels():
    if _K:
        return _K
    import numba

    from lptheory.fast import numba_cache

    numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code
    jit = numba.njit(nogil=True, error_model="numpy", cache=True)

    @jit
    def sep_grad(x, a, b, out):  # out = a * (2 u / (1 + u u)), u = x - b (the order of the numpy code)
        rows, d = x.shape
        for r in range(rows):
            xr, orow = x[r], out[r]
            for i in range(d):
                u = xr[i] - b[i]
                orow[i] = a[i] * ((u * 2.0) / (u * u + 1.0))

    @jit
    def rad_add(bits, sigma, out):  # out += (2 bit - 1) sigma
        rows, d = out.shape
        for r in range(rows):
            br, orow = bits[r], out[r]
            for i in range(d):
                orow[i] = orow[i] + (br[i] * 2.0 - 1.0) * sigma[i]

    _K.update(sep_grad=sep_grad, rad_add=rad_add)
    return _K


def _rows(fn, first, *rest):
    """Run ``fn(first[r0:r1], *rest_r)`` over row blocks on the engine's threads (rest: row-wise
    arrays or shared vectors)."""
    from lptheory import parallel

    R = first.shape[0]
    nt = parallel.threads(fused=True)
    if nt <= 1 or first.size < (1 << 17) or R < 2:
        fn(first, *rest)
        return
    per = -(-R // nt)
    pool = parallel.get_pool(nt)
    futs = []
    for r0 in range(0, R, per):
        r1 = min(R, r0 + per)
        args = [a[r0:r1] if isinstance(a, np.ndarray) and a.ndim == 2 else a for a in rest]
        futs.append(pool.submit(fn, first[r0:r1], *args))
    for f in futs:
        f.result()


def separable_grad(x, a, b, out) -> None:
    """out = a * (2 u / (1 + u^2)), u = x - b, rows of x (R, d)."""
    _rows(_kernels()["sep_grad"], x, a, b, out)


def rademacher_add(bits, sigma, out) -> None:
    """out += (2 bits - 1) sigma, bits (R, d) int8."""
    _rows(lambda o, bi, s: _kernels()["rad_add"](bi, s, o), out, bits, sigma)


def _streams_kernel():
    """out[r] += (2 bit - 1) sigma with the bits drawn inside the loop from replicate r's PCG64 stream
    (numpy's generator inlined, :func:`_pcg64_fill`, where it passes its check here; else the bit
    generator's C ``next_uint64``, called on its state): the same 64-bit words, in the same order, as
    ``random_raw``, and for each word the top bits of its bytes, low byte first, which are
    numpy's int8 samples of {0, 1} (see ``synthetic.noise._int8_bits``). Returns False, having drawn
    nothing, when a stream holds a buffered 32-bit half (read from the state struct). Not cached on disk:
    the C function's address is a constant of the compiled code."""
    if "k" in _STREAMS:
        return _STREAMS["k"]
    with _BUILD:  # threads starting at once build (and later compile) one set of kernels
        if "k" not in _STREAMS:
            _build_streams_kernels()
    return _STREAMS["k"]


def _build_streams_kernels():
    import numba

    next64 = np.random.PCG64(0).ctypes.next_uint64
    has_uint32 = _int32_at()
    fill_inline = _pcg64_fill()

    @numba.njit(nogil=True, cache=False)
    def fill_calls(st, words, n):  # numpy's own next_uint64, one C call per word
        for w in range(n):
            words[w] = next64(st)

    @numba.njit(nogil=True, cache=False)
    def fill_jit(st, words, n):
        fill_inline(st, words, n)

    fill = fill_calls
    probe = np.empty(1000, dtype=np.uint64)
    for key in (0, 1, 2):  # the inlined generator only where it gives numpy's words and states here
        bg = np.random.PCG64(np.random.SeedSequence(key, spawn_key=(key + 7,)))
        twin = np.random.PCG64(np.random.SeedSequence(key, spawn_key=(key + 7,)))
        fill_jit(bg.ctypes.state_address, probe, probe.size)
        if not (np.array_equal(probe, twin.random_raw(probe.size)) and bg.state == twin.state):
            break
    else:
        fill = fill_jit
    _STREAMS["inline"] = fill is fill_jit

    @numba.njit(nogil=True, error_model="numpy", cache=False)
    def rad_streams(addrs, sigma, out):
        rows, d = out.shape
        for r in range(rows):  # a buffered 32-bit half would shift the stream: nothing drawn, the caller decides
            if has_uint32(addrs[r] + _HAS_UINT32_OFFSET) != 0:
                return False
        words = np.empty(d // 8, dtype=np.uint64)  # one row's words (in L1), then a vectorizable pass
        low_first = words.view(np.uint8)  # little-endian: byte k of word w is low_first[8 w + k]
        for r in range(rows):
            fill(addrs[r], words, d // 8)
            orow = out[r]
            for i in range(d):
                orow[i] = orow[i] + ((low_first[i] >> 7) * 2.0 - 1.0) * sigma[i]
        return True

    @numba.njit(nogil=True, error_model="numpy", cache=False)
    def sep_grad_rad_streams(x, a, b, addrs, sigma, out):
        rows, d = out.shape
        for r in range(rows):
            if has_uint32(addrs[r] + _HAS_UINT32_OFFSET) != 0:
                return False
        words = np.empty(d // 8, dtype=np.uint64)
        low_first = words.view(np.uint8)
        for r in range(rows):
            fill(addrs[r], words, d // 8)
            xr, orow = x[r], out[r]
            for i in range(d):
                u = xr[i] - b[i]
                gi = a[i] * ((u * 2.0) / (u * u + 1.0))  # sep_grad's operations, then rad_streams' addition
                orow[i] = gi + ((low_first[i] >> 7) * 2.0 - 1.0) * sigma[i]
        return True

    _STREAMS["grad_k"] = sep_grad_rad_streams
    _STREAMS["addr"] = _address(next64)
    _STREAMS["fill"], _STREAMS["has_uint32"] = fill, has_uint32
    _STREAMS["k"] = rad_streams  # last: the mark that the set is complete


# numpy's PCG64 state (``bit_generator.ctypes.state_address``) is a ``pcg64_state`` struct: a pointer to
# the 128-bit generator, then ``int has_uint32`` (numpy/random/src/pcg64/pcg64.h); checked against
# ``bit_generator.state["has_uint32"]`` before use (:func:`_layout_ok`)
_HAS_UINT32_OFFSET = 8


def _int32_at():
    """A numba intrinsic ``f(address) -> int32``: the int32 stored at ``address``."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def int32_at(typingctx, addr):
        def codegen(context, builder, signature, args):
            return builder.load(builder.inttoptr(args[0], ir.IntType(32).as_pointer()))

        return types.int32(types.uintp), codegen

    return int32_at


def _pcg64_fill():
    """A numba intrinsic ``fill(state_address, words, n)``: the next n outputs of numpy's PCG64 (XSL-RR 128/64:
    ``state = state * M + inc`` in 128-bit arithmetic, then the output of the new state) written to
    ``words`` and the state stored back, inlined in the loop (numpy's ``pcg64_next64`` without a call per
    word). ``state_address`` points at numpy's ``pcg64_state``, whose first field points at the
    generator's ``{state, inc}`` (two 128-bit integers); the caller checks the words and the state left
    against ``random_raw`` before use."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    mult = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128

    @intrinsic
    def fill(typingctx, addr, words, n):
        def codegen(context, builder, signature, args):
            addr_, words_, n_ = args
            i64, i128 = ir.IntType(64), ir.IntType(128)
            sptr = builder.load(builder.inttoptr(addr_, i128.as_pointer().as_pointer()))
            inc = builder.load(builder.gep(sptr, [ir.Constant(ir.IntType(32), 1)]), align=8)
            arr = context.make_array(signature.args[1])(context, builder, words_)
            st = cgutils.alloca_once_value(builder, builder.load(sptr, align=8))
            with cgutils.for_range(builder, n_) as loop:
                s = builder.add(builder.mul(builder.load(st), ir.Constant(i128, mult)), inc)
                builder.store(s, st)
                hi = builder.trunc(builder.lshr(s, ir.Constant(i128, 64)), i64)
                v = builder.xor(hi, builder.trunc(s, i64))
                rot = builder.lshr(hi, ir.Constant(i64, 58))
                left = builder.shl(v, builder.and_(builder.neg(rot), ir.Constant(i64, 63)))
                builder.store(builder.or_(builder.lshr(v, rot), left), builder.gep(arr.data, [loop.index]))
            builder.store(builder.load(st), sptr, align=8)
            return context.get_dummy_value()

        return types.void(types.uintp, words, types.intp), codegen

    return fill


def _layout_ok() -> bool:
    """Whether ``has_uint32`` of a PCG64 state sits at ``_HAS_UINT32_OFFSET`` (both values checked)."""
    if "layout" not in _STREAMS:
        import ctypes

        ok = np.dtype(np.uintp).itemsize == 8
        for flag in (0, 1, 0):
            bg = np.random.PCG64(12345)
            st = bg.state
            st["has_uint32"], st["uinteger"] = flag, 7
            bg.state = st
            ok = ok and ctypes.c_int.from_address(bg.ctypes.state_address + _HAS_UINT32_OFFSET).value == flag
        _STREAMS["layout"] = ok
    return _STREAMS["layout"]


def _address(fn) -> int:
    import ctypes

    return ctypes.cast(fn, ctypes.c_void_p).value


_ADDRS: dict = {}  # id(list of generators) -> (the list, its generators, their state addresses)


def _stream_addresses(rngs, R: int, d: int):
    """The PCG64 state addresses of ``rngs`` for the stream kernels, or None where they do not apply. Kept
    per list object (the simulator passes each part the same list at every step) while it holds the same
    generators (a generator's state address is fixed for its life)."""
    import sys

    if d % 8 or sys.byteorder != "little" or len(rngs) != R or not _layout_ok():
        return None
    got = _ADDRS.get(id(rngs))
    if got is not None and got[0] is rngs and len(got[1]) == R and all(x is y for x, y in zip(rngs, got[1])):
        return got[2]
    addrs = _addresses(rngs)
    if addrs is not None and type(rngs) is list:
        if len(_ADDRS) >= 64:
            _ADDRS.clear()
        _ADDRS[id(rngs)] = (rngs, tuple(rngs), addrs)
    return addrs


def _addresses(rngs):
    bgs = [rng.bit_generator for rng in rngs]
    for bg in bgs:
        if type(bg) is not np.random.PCG64:
            return None
    _streams_kernel()
    if _address(bgs[0].ctypes.next_uint64) != _STREAMS["addr"]:
        return None
    return np.array([bg.ctypes.state_address for bg in bgs], dtype=np.uintp)


def separable_grad_rademacher_streams(x, a, b, rngs, sigma, out) -> bool:
    """``out = a * (2 u / (1 + u^2)) + (2 bits - 1) sigma``, u = x - b: :func:`separable_grad` then
    :func:`rademacher_add_streams` in one pass per row (the same operations in the same order: the same
    bits, and each stream left where ``integers`` leaves it), on the calling thread (for callers that split
    rows over threads themselves). False, nothing drawn or written, where the stream kernel does not apply
    (see :func:`rademacher_add_streams`)."""
    R, d = out.shape
    addrs = _stream_addresses(rngs, R, d)
    if addrs is None:
        return False
    return bool(_STREAMS["grad_k"](x, a, b, addrs, sigma, out))


def rademacher_add_streams(rngs, sigma, out) -> bool:
    """``out[r] += (2 b - 1) sigma`` with b the int8 samples of {0, 1} that ``rngs[r].integers(0, 2, d,
    int8)`` would give, drawn and added in one pass per row (rows split over the engine's threads, each
    thread owning its rows' streams). Only for PCG64 streams with no buffered 32-bit half, d a multiple of 8,
    little-endian: returns False (nothing drawn) otherwise, and the caller takes the general path."""

    R, d = out.shape
    addrs = _stream_addresses(rngs, R, d)
    if addrs is None:
        return False
    kern = _STREAMS["k"]
    from lptheory import parallel

    nt = parallel.threads(fused=True)
    if nt <= 1 or out.size < (1 << 17) or R < 2:
        return bool(kern(addrs, sigma, out))  # False: a stream holds a buffered half, nothing drawn
    per = -(-R // nt)
    if any(rng.bit_generator.state["has_uint32"] for rng in rngs):  # checked here: the parts must draw all or nothing
        return False
    pool = parallel.get_pool(nt)
    futs = [pool.submit(kern, addrs[r0 : r0 + per], sigma, out[r0 : r0 + per]) for r0 in range(0, R, per)]
    for f in futs:
        f.result()
    return True


_STEPS: dict = {}  # (step kernel, its argument names, number of scalars) -> compiled multi-step kernel


def _steps_kernel(seg, names: tuple, nscalars: int):
    """A kernel running, row by row, several simulator steps of the separable gradient with Rademacher noise
    (n = 1) followed by an optimizer's fused update ``seg`` (:mod:`lptheory.fast.fused`'s one-loop kernel,
    called with ``names``: "grad", "theta" and the state buffers, then ``nscalars`` step scalars; it returns
    its count of non-finite gradient entries). Per
    row and step: the row's next words from its stream, the gradient plus noise into a row buffer (the
    operations of ``sep_grad_rad_streams``), then ``seg`` on that row (the same element-wise operations as on
    the whole array): the bits of the step-by-step loop, each stream drawn in the same order (its own words
    only). The rows whose new parameters are not all finite are counted while the next step's gradient
    reads them (the last step's in a pass of its own)."""
    key = (seg, names, nscalars)
    got = _STEPS.get(key)
    if got is not None:
        return got
    with _BUILD:  # the threads of one step ask at once: one dispatcher, compiled once
        got = _STEPS.get(key)
        if got is None:
            got = _STEPS[key] = _build_steps_kernel(seg, names, nscalars)
    return got


def _build_steps_kernel(seg, names, nscalars):
    import numba

    _streams_kernel()
    state = [n for n in names if n not in ("grad", "theta")]
    row_of = {"grad": "gt", "theta": "xr", **{n: f"r_{n}" for n in state}}
    call = ", ".join(["d", *(row_of[n] for n in names), *(f"sc[s, {j}]" for j in range(nscalars))])
    lines = [
        f"def run(x, a, b, addrs, sigma, {''.join(f'S_{n}, ' for n in state)}sc, gt, nf, bad):",
        "    rows, d = x.shape",
        "    for r in range(rows):  # a buffered 32-bit half would shift the stream: nothing drawn",
        "        if has_uint32(addrs[r] + OFFSET) != 0:",
        "            return False",
        "    words = np.empty(d // 8, dtype=np.uint64)",
        "    low_first = words.view(np.uint8)",
        "    for r in range(rows):",
        "        xr = x[r]",
        *(f"        r_{n} = S_{n}[r]" for n in state),
        "        for s in range(sc.shape[0]):",
        "            fill(addrs[r], words, d // 8)",
        "            nt = 0  # the row's non-finite entries (v - v is not 0): those of the previous step's update",
        "            for i in range(d):",
        "                v = xr[i]",
        "                nt += 0 if (v - v) == 0.0 else 1",
        "                u = v - b[i]",
        "                gi = a[i] * ((u * 2.0) / (u * u + 1.0))",
        "                gt[i] = gi + ((low_first[i] >> 7) * 2.0 - 1.0) * sigma[i]",
        "            if s > 0:",
        "                bad[s - 1, r] = nt != 0",
        f"            nf[s] += seg({call})",
        "        nt = 0  # the last step's: a pass of its own (the row in L2)",
        "        for i in range(d):",
        "            v = xr[i]",
        "            nt += 0 if (v - v) == 0.0 else 1",
        "        bad[sc.shape[0] - 1, r] = nt != 0",
        "    return True",
    ]
    ns = {
        "np": np,
        "seg": seg,
        "fill": _STREAMS["fill"],
        "has_uint32": _STREAMS["has_uint32"],
        "OFFSET": _HAS_UINT32_OFFSET,
    }
    exec(compile("\n".join(lines), "<synthetic._fast.steps>", "exec"), ns)  # noqa: S102  (our own generated code)
    if len(_STEPS) > 32:
        _STEPS.clear()
    return numba.njit(nogil=True, error_model="numpy", cache=False)(ns["run"])


def separable_rademacher_steps(x, a, b, rngs, sigma, state: dict, seg, names, sc):
    """Steps of the simulator on rows ``x`` (R, d) in place: for each row of ``sc`` (the step scalars of
    ``seg``, one row per step), the gradient of the separable problem plus Rademacher noise (n = 1) drawn
    from ``rngs[r]`` (PCG64), then ``seg``'s update of ``x`` and of the state rows ``state[name]`` (see
    :func:`_steps_kernel`), on this thread. Returns (non-finite gradient entries per step, (steps, R) rows
    whose new parameters are not all finite), or None, nothing drawn or written, where the stream kernels
    do not apply."""
    R, d = x.shape
    addrs = _stream_addresses(rngs, R, d)
    if addrs is None:
        return None
    kern = _steps_kernel(seg, tuple(names), sc.shape[1])
    nf = np.zeros(sc.shape[0], dtype=np.int64)
    bad = np.zeros((sc.shape[0], R), dtype=np.bool_)
    args = [state[n] for n in names if n not in ("grad", "theta")]
    if not kern(x, a, b, addrs, sigma, *args, sc, np.empty(d), nf, bad):
        return None
    return nf, bad
