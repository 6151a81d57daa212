"""Formal verification: the runner (:func:`prove`) and the blocks' properties.

``runner`` turns an Amaranth wrapper into a yowasp-sby run; ``registry`` holds the
:class:`Property` records that ``gse formal`` runs; one module per block (``parser``,
``voq``, ``arbiter``, ...) defines its wrappers and registers its properties.
:mod:`opengse.sim.properties` imports them all.
"""

from .runner import FormalResult, formal_env, prove

__all__ = ["prove", "FormalResult", "formal_env"]
