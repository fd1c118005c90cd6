"""Claims of the paper and their checks (layer above :mod:`synthetic`). Filled by the claims issues."""
