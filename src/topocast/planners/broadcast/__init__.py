"""Broadcast planners: one module per published algorithm."""
