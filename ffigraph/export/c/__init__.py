"""C sources shipped inside every export folder (data files, not Python code).

This file only makes setuptools treat the folder as package data of ``ffigraph``.
"""
