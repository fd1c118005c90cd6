"""The claim layer: claim specifications, engines, verdicts, witnesses, packs of claims.

Generic engines (:mod:`.expressions`, :mod:`.engines`, :mod:`.search`, :mod:`.verdict`,
:mod:`.recheck`, :mod:`.records`, :mod:`.spec`, :mod:`.packs`, :mod:`.runner`) sit below the paper
packs; the Stacey paper is the first pack (:mod:`.stacey`). The public surface for users is
:mod:`proofs_checks.api`: a claim of another paper goes in its own file or package, written against it.
"""
