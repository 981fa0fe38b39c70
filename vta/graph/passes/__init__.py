"""The graph passes, one module each; :mod:`vta.graph.pipeline` lists them in order."""

from .fold_constants import FoldConstants
from .fuse import FuseAccelerator
from .pad_channels import PadChannels
from .pack_layout import PackLayout
from .place import PlaceDevices

__all__ = ["FoldConstants", "FuseAccelerator", "PadChannels", "PackLayout", "PlaceDevices"]
