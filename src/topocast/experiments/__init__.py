"""Reproductions of published studies (``topocast experiment NAME``)."""
