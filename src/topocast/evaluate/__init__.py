"""Planners side by side: ``compare`` (several planners on one input, against the bounds)
and ``sweep`` (predicted time against message size)."""
