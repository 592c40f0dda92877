"""Redistribution planners (collective ``redistribute``): brute force, GGP, OGGP.

The request is a :class:`topocast.plan.Redistribution`.
"""
