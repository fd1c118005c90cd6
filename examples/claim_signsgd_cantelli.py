"""A user's claim checked by the moment engine: signSGD's sign-error lemma, whose sharp constant is Cantelli's.

Claim (the sign-error step of signSGD's analyses, one coordinate): for a stochastic gradient X with E X = g != 0 and
Var X <= tau^2, P(sign X != sign g) <= C tau^2 / (tau^2 + g^2) with C = 1 (Cantelli's one-sided inequality; the
bound tau/|g| that Markov's inequality gives is weaker). The engine computes sup P(X <= 0) over every law with
E X = g, E(X - g)^2 <= tau^2 on a support [-G, G] wide enough to hold Cantelli's extremal law (its atoms 0 and
g + tau^2/g), certified on both sides: an explicit law re-checked at 50 digits, and a quadratic majorant of
1[x <= 0] checked by interval branch and bound. Controls: a claimed constant 0.999 must be found false by the law,
and a planted wrong certificate (its constant term lowered by 1%) must be refused.

    lptheory check examples/claim_signsgd_cantelli.py
"""

import sympy as sp

from proofs_checks.api import ClaimSpec, Pack, check_certificate, sharp_bound, value_claim

PACK = Pack("signsgd-cantelli", title="Example: signSGD's sign-error lemma (Cantelli), by the moment engine")
G = 10.0
ERROR = [((-G, 0.0), sp.Integer(1)), ((0.0, G), sp.Integer(0))]  # 1[x <= 0] for g > 0 (sign(0) != sign(g))

SPEC = ClaimSpec(
    id="signsgd.sign-error",
    statement="P(sign X != sign g) <= C tau^2/(tau^2 + g^2) for E X = g, Var X <= tau^2 (C = 1: Cantelli)",
    source="signSGD's sign-error lemma; Cantelli's inequality",
    assumptions=("E X = g", "Var X <= tau^2", "|X| <= G"),
    term=sp.Symbol("sup_P"),
    bound=sp.Symbol("C_cantelli"),
    show=("g", "tau", "C"),
)


@PACK.check(title="sign error: the sharp constant, certified", options=("C",), defaults={"C": [1.0, 0.999]})
def sign_error(ctx):
    out = []
    for g, tau in ((1.0, 0.5), (0.3, 1.0), (2.0, 0.1)):
        r = sharp_bound(ERROR, 1.0, (-G, G), {"mean": g, "sd": tau})
        cantelli = tau**2 / (tau**2 + g**2)
        cert = r.certificate
        planted = check_certificate(ERROR, (-G, G), g, (0.99 * cert["c0"], cert["c1"], cert["c2"]))
        for c in ctx.C:
            claim = c * cantelli
            ok = r.upper_certified and r.upper <= claim * (1 + 1e-6)  # the engine's slack is rtol/4
            rec = value_claim(
                SPEC,
                r.lower if r.lower > claim else r.upper,
                claim,
                {"g": g, "tau": tau, "C": c},
                note=f"sup P in [{r.lower:.10g}, {r.upper:.10g}] ({r.evidence}); Cantelli {cantelli:.10g}; the planted "
                f"certificate (c0 x 0.99) is {planted['status']}",
                tolerance=1e-6 if ok else 0.0,  # relative: the certificate's slack
                data={"sharp": r.to_dict(), "planted": planted["status"]},
            )
            out.append(rec)
    return out
