"""Numba kernels. Arrays in, arrays out (or modified in place), status codes back.

Nothing in this package validates its input: the public API in :mod:`nmfsc`
does that, then calls these kernels.
"""
