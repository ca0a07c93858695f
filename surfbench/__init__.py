"""surfbench: measure tool surfaces for LLM agents.

One namespace over the project's folders: ``surfbench.bench`` (the harness core, ``bench/``),
``surfbench.surfaces`` (one module per surface kind, ``surfaces/``), ``surfbench.tasks`` (one folder per
suite, ``tasks/``) and ``surfbench.configs`` (Hydra configs, package data, ``configs/``). In a checkout
these are links to the top-level folders; an installed wheel holds copies.
"""

__version__ = "0.2.0"
