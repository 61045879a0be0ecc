"""Studies built on the library: comparisons and paper reproductions.

They sit above the design and simulation layers and are imported by the CLI
and the examples; nothing in the core imports them.
"""

from .paper_ball import simulate_paper_ball
from .partitions import compare_partitions, enumerate_partitions
from .rail_layouts import compare_rail_layouts, default_layouts

__all__ = ["compare_partitions", "enumerate_partitions", "compare_rail_layouts", "default_layouts",
           "simulate_paper_ball"]
