"""Figures drawn from claim records, never recomputing them (top layer). Filled by later issues."""
