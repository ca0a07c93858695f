"""Hydra's configs, shipped as package data: ``importlib.resources.files("surfbench.configs")``.

Each group is a folder of YAML files (``suite/``, ``surface/``, ``model/``, ``sweep/``, ``gate/``,
``hydra/``); ``config.yaml`` is the primary config. This file makes the folder a regular package, so it
imports as ``surfbench.configs`` in an editable install (pyproject.toml's package-dir) as in a wheel.
"""
