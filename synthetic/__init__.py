"""Synthetic problems with certified constants and noise models (layer above :mod:`lptheory`).

Filled by the synthetic-problems issue; may import :mod:`lptheory`, never a higher layer.
"""
