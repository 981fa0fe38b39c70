"""The graph passes, one module each; :mod:`vta.graph.pipeline` lists them in order."""

from .accumulator_bits import AnnotateAccumulatorBits
from .fold_constants import FoldConstants
from .fuse import FuseAccelerator
from .pack_layout import PackLayout
from .pad_channels import PadChannels
from .place import PlaceDevices

__all__ = ["AnnotateAccumulatorBits", "FoldConstants", "FuseAccelerator", "PackLayout", "PadChannels",
           "PlaceDevices"]
