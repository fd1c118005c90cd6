"""The run assembly shared by ``lptheory run`` and ``lptheory sweep``: a synthetic problem, its per-coordinate
noise, the gradient oracle and the layout of the matrix optimizers, built the same way for both (so that a
sweep's cell and the ``run`` with the same values draw the same bits).

Each step that rejects a value raises :class:`SettingError` naming the part (``problem``, ``sigma``,
``noise``, ``batch``): the command line turns it into its flag, the sweep into its configuration key.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Setting", "SettingError", "build_setting", "lay_out", "noise_layout", "own_shape"]


class SettingError(ValueError):
    """A value of the setting that a builder rejects; ``part`` says which (problem, sigma, noise, batch),
    ``error`` is the builder's own exception (also the ``__cause__``)."""

    def __init__(self, part: str, error: Exception):
        super().__init__(str(error))
        self.part, self.error = part, error


@dataclasses.dataclass(frozen=True)
class Setting:
    """What a simulation runs on: the problem, the noise's per-coordinate stds ``sigma``, the noise model
    (None for ``none``), its matrix layout ``layout`` (a noise that has one, such as rank-one; else None)
    and the gradient oracle."""

    problem: object
    sigma: object
    noise: object
    layout: tuple | None
    oracle: object


def own_shape(problem) -> tuple[int, int] | None:
    """The problem's own matrix shape ``(m, n)`` when it has one with ``m * n = d``, else None."""
    own = getattr(problem, "shape", None)
    if isinstance(own, (tuple, list)) and len(own) == 2 and int(own[0]) * int(own[1]) == problem.d:
        return (int(own[0]), int(own[1]))
    return None


def build_setting(
    problem: str,
    problem_kw: dict,
    *,
    noise: str,
    sigma,
    profile: str = "flat",
    profile_seed: int = 0,
    batch=1,
    shape=None,
    check_problem=None,
) -> Setting:
    """Build the problem ``make_problem(problem, **problem_kw)``, the stds ``sigma_profile(profile, d, sigma,
    profile_seed)``, the noise ``make_noise(noise, ...)`` and the oracle ``GradientOracle(problem, noise,
    batch)`` (``batch``: an int or a schedule ``t -> n_t``, as the oracle takes it).

    A noise with a matrix layout (rank-one) is laid out as ``shape`` (``--shape``), else the problem's own
    matrix shape, else its own default (:func:`synthetic.noise.split_shape`); :func:`lay_out` gives the
    matrix optimizers the same layout. ``check_problem(problem)``, when given, runs once the problem and the stds are
    built (the command line checks ``--shape`` against its d there, before the noise takes it). Raises
    :class:`SettingError` naming the part a builder rejected."""
    from synthetic.noise import make_noise, sigma_profile
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    def step(part, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except (ValueError, TypeError) as exc:
            raise SettingError(part, exc) from exc

    prob = step("problem", make_problem, problem, **problem_kw)
    stds = step("sigma", sigma_profile, profile, prob.d, sigma, seed=profile_seed)
    if check_problem is not None:
        check_problem(prob)
    given = tuple(shape) if shape else own_shape(prob)
    model = step("noise", make_noise, noise, stds, shape=given)
    oracle = step("batch", GradientOracle, prob, model, batch)
    return Setting(prob, stds, model, noise_layout(model), oracle)


def noise_layout(noise) -> tuple[int, int] | None:
    """The matrix layout ``(m, n)`` of a noise model that has one (rank-one), else None (also for no noise)."""
    return tuple(noise.shape) if getattr(noise, "takes_layout", False) else None


def lay_out(opt, problem, layout=None, shape=None):
    """``opt`` with the layout of each replicate's flat iterate when it is a matrix optimizer (Muon, Scion,
    Schatten-p descent, Stacey in Schatten-p; :func:`lptheory.spectral.laid_out`): ``shape`` (``--shape``),
    else the problem's own matrix shape, else the noise's matrix layout ``layout`` (:attr:`Setting.layout`: one
    layout for both), else one row. Any other optimizer is returned as is."""
    from lptheory.spectral import laid_out

    own = getattr(problem, "shape", None)
    if shape is None and layout is not None and own_shape(problem) is None:
        shape = layout
    return laid_out(opt, problem.d, own, tuple(shape) if shape is not None else None)
